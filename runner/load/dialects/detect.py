"""Which tool's agent file a path holds, by its name and content."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.load.dialects.common import Translation

__all__ = ["detect", "is_adk", "is_dialect_file", "read_markdown_or_toml"]

# The fields of an ADK `LlmAgent` config (`runner.load.dialects.adk` translates them): those
# agentctl maps, and those it has no equivalent for, with what to use instead.
ADK_UNMAPPED = {
    "global_instruction": "agentctl has one prompt per agent",
    "static_instruction": "agentctl has one prompt per agent",
    "output_key": "agentctl keeps the answer in the run's messages, not in session state",
    "include_contents": "a subagent always starts from the task it is given",
    "disallow_transfer_to_parent": "agentctl subagents always return to the agent that called",
    "disallow_transfer_to_peers": "agentctl subagents always return to the agent that called",
    "input_schema": "agentctl takes typed `inputs:`",
    "output_schema": "agentctl's structured answer is `response_format:` (a JSON Schema)",
    "planner": "an ADK planner object",
    "code_executor": "an ADK code executor object",
    "before_agent_callbacks": "agentctl has no callbacks; use `middleware:`",
    "after_agent_callbacks": "agentctl has no callbacks; use `middleware:`",
    "before_model_callbacks": "agentctl has no callbacks; use `middleware:`",
    "after_model_callbacks": "agentctl has no callbacks; use `middleware:`",
    "before_tool_callbacks": "agentctl has no callbacks; use `middleware:`",
    "after_tool_callbacks": "agentctl has no callbacks; use `middleware:`",
}

ADK_MAPPED = (
    "agent_class",
    "name",
    "model",
    "description",
    "instruction",
    "tools",
    "sub_agents",
    "generate_content_config",
    "model_code",
)


def detect(path: Path) -> str | None:
    """The dialect of a non-YAML agent file by its name: `.toml` Codex, `*.agent.md` (or a `.md`
    file under `.github/agents/`) Copilot, any other `.md` Claude Code; None for anything else
    (ADK files are YAML: `is_adk` looks at their parsed content)."""
    name = path.name
    if name.endswith(".toml"):
        return "codex"
    if not name.endswith(".md"):
        return None
    if name.endswith((".agent.md", ".chatmode.md")) or path.parent.parts[-2:] == (
        ".github",
        "agents",
    ):
        return "copilot"
    return "claude"  # `.claude/agents/`, or any other markdown file named as an agent


def read_markdown_or_toml(dialect: str, path: Path, text: str, shown: str) -> Translation:
    from runner.load.dialects import claude, codex, copilot

    reader = {"claude": claude.read, "copilot": copilot.read, "codex": codex.read}[dialect]
    return reader(path, text, shown)


def is_adk(path: Path, value: Any) -> bool:
    """An ADK agent config: named `root_agent.yaml`, or a mapping with `agent_class`, or one with
    `instruction` whose keys are all ADK's."""
    if not isinstance(value, dict):
        return False
    if path.name in ("root_agent.yaml", "root_agent.yml") or "agent_class" in value:
        return True
    # `instruction:` alone could be a typo in an agentctl file: then only with ADK's keys
    return "instruction" in value and value.keys() <= {*ADK_MAPPED, *ADK_UNMAPPED}


def is_dialect_file(path: Path) -> bool:
    """Whether a file found in a folder is an agent of another tool (`serve`, `validate`): a
    `*.agent.md`, a `.md` file whose front matter has `name:` or `description:` (not README.md,
    AGENTS.md, CLAUDE.md, SKILL.md), a `.toml` file with instructions."""
    from runner.load.source import read_source

    if detect(path) is None or path.name.upper() in _NOT_AGENTS:
        return False
    if path.name.endswith((".agent.md", ".chatmode.md")):
        return True
    try:
        text = read_source(path).removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if path.name.endswith(".toml"):
        return "instructions" in text
    head = text.split("\n---", 1)[0]
    return text.startswith("---") and ("description:" in head or "name:" in head)


_NOT_AGENTS = frozenset({"README.MD", "AGENTS.MD", "CLAUDE.MD", "SKILL.MD"})
