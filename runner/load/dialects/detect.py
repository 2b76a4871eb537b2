"""Which tool's agent file a path holds, by its name and content."""

from __future__ import annotations

from pathlib import Path

from runner.load.dialects.common import Translation

__all__ = ["detect", "is_dialect_file", "read_markdown_or_toml"]


def detect(path: Path, text: str) -> str | None:
    """The dialect of a non-YAML agent file (`.md`, `.toml`), by name and content; None for
    anything else (ADK files are YAML: `adk.is_adk` looks at their parsed content)."""
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
    if path.parent.parts[-2:] == (".claude", "agents"):
        return "claude"
    return "claude" if text.startswith("---") else None


def read_markdown_or_toml(dialect: str, path: Path, text: str, shown: str) -> Translation:
    from runner.load.dialects import claude, codex, copilot

    reader = {"claude": claude.read, "copilot": copilot.read, "codex": codex.read}[dialect]
    return reader(path, text, shown)


def is_dialect_file(path: Path) -> bool:
    """Whether a file found in a folder is an agent of another tool (`serve`, `validate`)."""
    from runner.load.source import read_source

    if path.name.endswith((".md", ".toml")):
        if path.name.upper() in ("README.MD", "AGENTS.MD", "CLAUDE.MD", "SKILL.MD"):
            return False
        try:
            text = read_source(path)
        except (OSError, UnicodeDecodeError, ValueError):
            return False
        if detect(path, text) is None:
            return False
        if path.name.endswith(".toml"):
            return "developer_instructions" in text or "instructions" in text
        return text.startswith("---") and ("description:" in text or "name:" in text)
    return False
