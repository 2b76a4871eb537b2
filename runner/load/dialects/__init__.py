"""Agent files of other tools, read as agentctl agents and written back.

```
detect.py    which dialect a file is written in, by name and content
common.py    the translation a reader returns; tool and model tables shared by the dialects
markdown.py  front matter + body, with the front matter's lines kept
claude.py    Claude Code `.claude/agents/*.md`
copilot.py   GitHub Copilot `*.agent.md`
codex.py     Codex CLI `.codex/agents/*.toml`
adk.py       Google ADK `root_agent.yaml` (LlmAgent configs)
yaml_out.py  an agentctl YAML file, commented where the original had no exact equivalent
python_out.py  a deepagents `create_deep_agent(...)` script
convert.py   `agentctl convert`: load, then write a target format with its loss report
```

A reader returns the mapping an agentctl YAML file would hold, and positions in the original
file, so the loader validates it as YAML and locates every problem in the original. Each field,
tool or value without an exact equivalent is a located warning; nothing is dropped in silence.
The prompt of a dialect file is text, not a Jinja template.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.load.dialects.common import Translation

__all__ = ["DIALECTS", "TARGETS", "Translation"]

DIALECTS = ("claude", "copilot", "codex", "adk")
TARGETS = ("yaml", *DIALECTS, "python")


def __getattr__(name: str) -> Any:
    """`Translation`, imported when asked for: loading an agentctl file imports `detect` from
    this package, and needs none of the dialects' code."""
    if name == "Translation":
        from runner.load.dialects.common import Translation

        return Translation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
