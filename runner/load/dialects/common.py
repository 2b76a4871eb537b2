"""What every dialect reader shares: the translation it returns, the tool and model tables.

A reader turns a file of another tool into the mapping an agentctl YAML file would hold, with a
`Pos` tree that points each key back into the original file, so the loader validates it and
locates its problems as it does for YAML. What has no exact equivalent is a warning located in
the original file (and a comment when converted to YAML); what cannot run at all is a problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import Problem
from runner.load.source import KeyPath, Loc, Pos

AGENTCTL_TOOLS = (
    "ls",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "grep",
    "execute",
    "write_todos",
    "task",
    "ask_user",
)
"""The tools an agentctl agent has without code: the file tools, todos, subagents, questions."""

FILE_TOOLS = ("ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute")
READ_ONLY_TOOLS = ("ls", "read_file", "glob", "grep")


@dataclass
class Translation:
    """A dialect file read as an agentctl agent: `value` is what its YAML would hold."""

    dialect: str
    file: str
    value: dict[str, Any] | None = None
    pos: Pos | None = None
    problems: list[Problem] = field(default_factory=list)
    """What stops the agent from loading (a file that is not of the dialect, say)."""
    warnings: list[Problem] = field(default_factory=list)
    """Each field, tool or value with no exact equivalent, located in the original file."""
    comments: dict[str, list[str]] = field(default_factory=dict)
    """agentctl key -> why it is not an exact copy of the original (comments in converted YAML)."""
    dropped: list[str] = field(default_factory=list)
    """`key: value  (why)` of each original field that agentctl does not run."""
    unreadable: bool = False
    """The file does not parse (its syntax error is in `problems`): nothing to validate."""

    def __post_init__(self) -> None:
        if self.pos is None:
            self.pos = Pos(Loc(self.file, 1, 1))
        if self.value is None:
            self.value = {}

    @property
    def root(self) -> Pos:
        assert self.pos is not None
        return self.pos

    def put(self, key: str, value: Any, loc: Loc, *, item_locs: list[Loc] | None = None) -> None:
        """Set agentctl `key` to `value`, located at `loc` (list items at `item_locs`)."""
        assert self.value is not None
        self.value[key] = value
        self.root.key_locs[key] = loc
        self.root.children[key] = located(value, loc, item_locs)

    def put_in(self, path: KeyPath, value: Any, loc: Loc) -> None:
        """Set a nested key (`("filesystem", "tools")`), creating the mappings on the way."""
        assert self.value is not None
        target: Any = self.value
        pos = self.root
        for part in path[:-1]:
            assert isinstance(part, str)
            if part not in target:
                target[part] = {}
                pos.key_locs[part] = loc
                pos.children[part] = Pos(loc)
            target = target[part]
            pos = pos.children[part]
        last = path[-1]
        assert isinstance(last, str)
        target[last] = value
        pos.key_locs[last] = loc
        pos.children[last] = located(value, loc, None)

    def warn(self, loc: Loc, path: str, message: str) -> None:
        self.warnings.append(loc.problem(path, message))

    def comment(self, key: str, text: str) -> None:
        self.comments.setdefault(key, []).append(text)

    def drop(self, loc: Loc, key: str, raw: Any, why: str) -> None:
        """An original field agentctl does not run: a warning, and a comment in converted YAML."""
        self.warn(loc, key, f"not run by agentctl: {why}")
        self.dropped.append(f"{key}: {_short(raw)}  ({why})")

    def fail(self, loc: Loc, path: str, message: str) -> None:
        self.problems.append(loc.problem(path, message))


def located(value: Any, loc: Loc, item_locs: list[Loc] | None = None) -> Pos:
    """A `Pos` for `value` where every part is at `loc` (list items at `item_locs`)."""
    pos = Pos(loc)
    if isinstance(value, dict):
        for key, child in value.items():
            pos.key_locs[str(key)] = loc
            pos.children[str(key)] = located(child, loc)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            at = item_locs[index] if item_locs and index < len(item_locs) else loc
            pos.children[index] = located(child, at)
    return pos


def _short(value: Any) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(str(text).split())
    return text if len(text) <= 60 else text[:57] + "..."


def unknown_field(
    tr: Translation,
    key: str,
    raw: Any,
    at: Loc,
    known: dict[str, str],
    mapped: tuple[str, ...],
    label: str,
) -> None:
    """A field agentctl does not map: documented ones say why, others what they may mean."""
    from runner.load.problems import did_you_mean

    if known.get(key):
        tr.drop(at, key, raw, known[key])
        return
    if key in known:
        tr.drop(at, key, raw, f"a {label} setting with no agentctl equivalent")
        return
    hint = did_you_mean(key, [*mapped, *known])
    why = f"unknown {label} field" + (f"; did you mean {hint!r}?" if hint else "")
    tr.drop(at, key, raw, why)


def agent_name(raw: str) -> str:
    """An agentctl name (lowercase letters, digits, '-', '_') for a display name."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", raw.strip().lower()).strip("-_")
    return slug[:64] or "agent"


def put_name(tr: Translation, raw: str, at: Loc) -> None:
    """`raw` as the agent's `name:`, in its agentctl form; where that differs, a warning at `at`
    and the original in a comment of the written file."""
    slug = agent_name(raw)
    tr.put("name", slug, at)
    if slug != raw:
        tr.warn(at, "name", f"{raw!r} is not an agentctl name; runs as {slug!r}")
        tr.comment("name", f"{raw!r} in the original")


def split_tools(value: Any) -> list[str] | None:
    """A tools field: a comma-separated string or a list of names (None when neither)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def item_locs(raw: Any, pos: Pos | None, at: Loc, text: str) -> list[Loc]:
    """Where each name of a tools field is: a list's items, or each name of a comma-separated
    string on one line (found in the file's `text`)."""
    if isinstance(raw, list):
        return [
            pos.children[i].loc if pos is not None and i in pos.children else at
            for i in range(len(raw))
        ]
    names = split_tools(raw) or []
    lines = text.split("\n")
    line = lines[at.line - 1] if 0 < at.line <= len(lines) else ""
    out, start = [], at.col - 1
    for name in names:
        found = line.find(name, start)
        if found < 0:
            out.append(at)
            continue
        out.append(Loc(at.file, at.line, found + 1))
        start = found + len(name)
    return out


def map_tools(
    tr: Translation,
    names: list[str],
    locs: list[Loc],
    table: dict[str, tuple[str, ...]],
    dialect_label: str,
    path: str,
    *,
    no_equivalent: dict[str, str],
) -> list[str]:
    """The agentctl tools for a dialect's tool names. A name mapped to agentctl's is a warning
    naming the equivalent; one without equivalent is a warning with the closest agentctl tool
    (never dropped in silence)."""
    from runner.load.problems import did_you_mean

    out: list[str] = []
    for index, (name, loc) in enumerate(zip(names, locs, strict=True)):
        where = f"{path}[{index}]"
        base = name.split("(", 1)[0].strip()  # `Bash(git diff:*)`: a permission pattern
        if base in AGENTCTL_TOOLS:
            out.append(base)
            continue
        mapped = table.get(base)
        if mapped is not None:
            shown = ", ".join(f"`{m}`" for m in mapped)
            note = f"{dialect_label} tool {name!r} runs as agentctl's {shown}"
            if not mapped:  # a wildcard (Copilot's `*`)
                note = f"{dialect_label} tool {name!r} runs as every agentctl tool"
            if base != name:
                note += " (the argument pattern is not applied: all its calls are allowed)"
            tr.warn(loc, where, note)
            out += [m for m in mapped if m not in out]
            continue
        hint = no_equivalent.get(base) or no_equivalent.get(_tool_family(base))
        close = did_you_mean(base, AGENTCTL_TOOLS) or did_you_mean(base.lower(), AGENTCTL_TOOLS)
        closest = f"; the closest agentctl tool is `{close}`" if close else ""
        message = f"{dialect_label} tool {name!r} has no agentctl equivalent{closest}"
        if hint:
            message += f"; {hint}"
        tr.warn(loc, where, message + " (left out)")
        tr.dropped.append(f"{path}: {name}  (no agentctl equivalent)")
    return out


def _tool_family(name: str) -> str:
    """`mcp__github__create_issue` -> `mcp__*`; `github/*` -> `*/*` (an MCP server's tools)."""
    if name.startswith("mcp__"):
        return "mcp__*"
    if "/" in name:
        return "*/*"
    return name


MCP_HINT = "an MCP server's tools are an agentctl `tools: [{mcp: {name: ..., command: ...}}]` entry"
WEB_HINT = "agentctl has no built-in web tool: add an MCP server or an `http:` tool"


def tool_settings(tr: Translation, tools: list[str], loc: Loc) -> None:
    """The agentctl keys for a restricted tool list: which file tools, todos, the `task` tool
    (the general-purpose subagent: these agents have no subagents of their own)."""
    files = [t for t in tools if t in FILE_TOOLS]
    tr.put_in(("filesystem", "tools"), files, loc)
    if "write_todos" not in tools:
        tr.put("todos", False, loc)
    if "task" not in tools:
        tr.put("general_purpose_agent", False, loc)
    if "ask_user" in tools:
        tr.put("ask_user", True, loc)


def tools_of(spec: Any) -> list[str] | None:
    """The agentctl tool names an agent has (None: every tool, nothing restricted)."""
    files = spec.filesystem.tools
    restricted = (
        files is not None
        or not spec.todos
        or not spec.general_purpose_agent.enabled
        or spec.ask_user is not None
    )
    if not restricted:
        return None
    out = list(FILE_TOOLS if files is None else files)
    if spec.todos:
        out.append("write_todos")
    if spec.general_purpose_agent.enabled or spec.subagents:
        out.append("task")
    if spec.ask_user is not None:
        out.append("ask_user")
    return out


def project_backend(tr: Translation, tools: list[str] | None, loc: Loc, project: str) -> None:
    """The folder a coding tool works in (`project`, relative to the file): `local_shell` when
    the agent may run commands, else `filesystem`."""
    shell = tools is None or "execute" in tools
    kind = "local_shell" if shell else "filesystem"
    tr.put("backend", {"kind": kind, "root_dir": project}, loc)


def project_dir(path: Any, marker: str) -> str:
    """The project folder of a file under `<project>/<marker>/agents/` (relative to the file's
    folder): `../..`; else the file's own folder, `.`."""
    parts = list(path.parent.parts)
    if len(parts) >= 2 and parts[-1] == "agents" and parts[-2] == marker:
        return "../.."
    return "."


# --------------------------------------------------------------------------- models

CLAUDE_ALIASES = {
    "sonnet": "anthropic:claude-sonnet-4-5",
    "opus": "anthropic:claude-opus-4-1",
    "haiku": "anthropic:claude-haiku-4-5",
    "opusplan": "anthropic:claude-opus-4-1",
}
"""Claude Code's model aliases and the model each stands for here (`inherit`: no model, the
parent agent's or `--model`)."""


def model_id(name: str) -> str:
    """`provider:model` for a model name written without a provider (`gpt-5` -> `openai:gpt-5`,
    `gemini-2.5-flash` -> `google_genai:gemini-2.5-flash`); a name with a provider is kept."""
    from runner.spec.model import guess_provider

    name = name.strip()
    if ":" in name:
        return name
    if "/" in name:  # LiteLLM style, `openai/gpt-4o`
        provider, _, rest = name.partition("/")
        return f"{provider}:{rest}"
    if name.startswith("gemini"):
        return f"google_genai:{name}"
    guessed = guess_provider(name)
    return f"{guessed}:{name}" if guessed else name


def bare_model(model_id_: str) -> str:
    """A model id without its provider, as tools that take a bare name write it (a `replay:`
    cassette keeps its prefix: it is no model of a provider)."""
    if model_id_.startswith("replay:"):
        return model_id_
    return model_id_.partition(":")[2] or model_id_


def dedupe(names: Iterable[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        if name not in out:
            out.append(name)
    return out


def path_from(target: Path, base: Path) -> str:
    """`target` as a path relative to the folder `base`, or absolute when they share nothing but
    the root (a path climbing to / reads worse than the absolute one)."""
    import os

    target, base = target.resolve(), base.resolve()
    if os.path.commonpath([target, base]) == os.path.sep:
        return str(target)
    return os.path.relpath(target, base)
