"""Which tool's agent file a path holds, by its name and content."""

from __future__ import annotations

from pathlib import Path

from runner.load.dialects.common import Translation

__all__ = ["detect", "is_dialect_file", "read_markdown_or_toml"]


def detect(path: Path) -> str | None:
    """The dialect of a non-YAML agent file by its name: `.toml` Codex, `*.agent.md` (or a `.md`
    file under `.github/agents/`) Copilot, any other `.md` Claude Code; None for anything else
    (ADK files are YAML: `adk.is_adk` looks at their parsed content)."""
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
