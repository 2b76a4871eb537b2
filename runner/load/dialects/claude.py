"""Claude Code subagents: `.claude/agents/NAME.md`, front matter then the system prompt.

Front matter: `name`, `description`, `tools` (a comma-separated string or a list; absent: every
tool), `model` (`sonnet`, `opus`, `haiku`, `inherit` or a model id). The agent works in the
project folder (the one holding `.claude/`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.load.dialects import markdown
from runner.load.dialects.common import (
    CLAUDE_ALIASES,
    FILE_TOOLS,
    MCP_HINT,
    WEB_HINT,
    Translation,
    agent_name,
    dedupe,
    item_locs,
    map_tools,
    model_id,
    project_backend,
    project_dir,
    put_name,
    split_tools,
    tool_settings,
    tools_of,
    unknown_field,
)
from runner.load.source import Loc

LABEL = "Claude Code"

TOOLS: dict[str, tuple[str, ...]] = {
    "Read": ("read_file",),
    "Write": ("write_file",),
    "Edit": ("edit_file",),
    "MultiEdit": ("edit_file",),
    "Bash": ("execute",),
    "Glob": ("glob",),
    "Grep": ("grep",),
    "LS": ("ls",),
    "TodoWrite": ("write_todos",),
    "Task": ("task",),
    "Agent": ("task",),
    "AskUserQuestion": ("ask_user",),
}
"""Claude Code tool -> agentctl tools."""

WRITE_BACK = {
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "execute": "Bash",
    "glob": "Glob",
    "grep": "Grep",
    "ls": "LS",
    "write_todos": "TodoWrite",
    "task": "Task",
    "ask_user": "AskUserQuestion",
}

NO_EQUIVALENT = {
    "WebFetch": WEB_HINT,
    "WebSearch": WEB_HINT,
    "NotebookEdit": "edit the notebook's JSON with `edit_file`",
    "NotebookRead": "read the notebook's JSON with `read_file`",
    "BashOutput": "`execute` returns a command's output when it ends",
    "KillShell": "`execute` stops a command at its timeout",
    "mcp__*": MCP_HINT,
}

UNMAPPED = {
    "disallowedTools": "",
    "skills": "agentctl reads skills from folders (`skills: [./skills]`)",
    "hooks": "agentctl has no hooks; use `middleware:`",
    "mcpServers": "MCP servers are agentctl `tools: [{mcp: ...}]` entries",
    "memory": "agentctl memory files are `memory: [AGENTS.md]`",
    "color": "a display color of Claude Code",
    "maxTurns": "",
    "effort": "a reasoning effort of Claude Code; set it in `model.params`",
}
"""Documented Claude Code fields with no exact agentctl equivalent (some mapped below)."""

MAPPED = ("name", "description", "tools", "model")


def read(path: Path, text: str, shown: str) -> Translation:
    tr = Translation("claude", shown)
    fm = markdown.split(text, shown)
    tr.problems += fm.problems
    tr.unreadable = bool(fm.problems)
    if not fm.found:
        tr.fail(
            Loc(shown, 1, 1),
            "",
            "a Claude Code agent starts with YAML front matter between '---' lines (name:, "
            "description:, tools:, model:), then the prompt",
        )
        tr.unreadable = True
        return tr
    tr.pos = fm.pos
    # an empty field it maps (`tools:`) is an absent one, as the tool reads it
    value = {k: v for k, v in fm.value.items() if v is not None or k not in MAPPED}
    pos = fm.pos
    here = pos.loc
    loc, vloc = pos.key_loc, pos.value_loc

    name = value.get("name")
    if isinstance(name, str) and name.strip():
        put_name(tr, name, vloc("name"))
    else:
        tr.put("name", agent_name(path.name.removesuffix(".md")), here)
        tr.warn(here, "name", "missing; named after the file")
    if "description" in value:
        tr.put("description", value["description"], vloc("description"))
    read_model(tr, value.get("model"), vloc("model"), "model" in value)
    tools: list[str] | None = None
    if "tools" in value:
        names = split_tools(value["tools"])
        if names is None:
            tr.fail(vloc("tools"), "tools", "expected a comma-separated string or a list of names")
        else:
            locs = item_locs(value["tools"], pos.children.get("tools"), vloc("tools"), text)
            tools = map_tools(tr, names, locs, TOOLS, LABEL, "tools", no_equivalent=NO_EQUIVALENT)
            tr.comment("filesystem", f"from tools: {', '.join(names)} in the original")
    if "disallowedTools" in value:
        raw = value["disallowedTools"]
        names = split_tools(raw) or []
        at = vloc("disallowedTools")
        locs = item_locs(raw, pos.children.get("disallowedTools"), at, text)
        tools = _disallowed(tr, raw, at, locs if len(locs) == len(names) else None, tools)
    mode = value.get("permissionMode", "default")
    tools = _permission_mode(tr, mode, vloc("permissionMode"), tools)
    if tools is not None:
        tool_settings(tr, tools, vloc("tools") if "tools" in value else here)
    project_backend(tr, tools, here, project_dir(path, ".claude"))
    tr.comment("backend", "Claude Code works in the project folder (the one holding .claude/)")
    if "maxTurns" in value and isinstance(value["maxTurns"], int) and value["maxTurns"] > 0:
        tr.put_in(("limits", "model_calls"), value["maxTurns"], vloc("maxTurns"))
        tr.warn(
            loc("maxTurns"), "maxTurns", "runs as `limits.model_calls` (model calls, not turns)"
        )
        tr.comment("limits", "maxTurns in the original: agentctl counts model calls")
    for key, raw in value.items():
        if key in MAPPED or key in ("disallowedTools", "maxTurns", "permissionMode"):
            continue
        unknown_field(tr, key, raw, loc(key), UNMAPPED, MAPPED, LABEL)
    tr.put("prompt", fm.body, Loc(shown, fm.body_line, 1))
    return tr


def read_model(tr: Translation, raw: Any, at: Loc, given: bool) -> None:
    if not given:
        return
    if not isinstance(raw, str) or not raw.strip():
        tr.fail(at, "model", "expected a model alias (sonnet, opus, haiku, inherit) or a model id")
        return
    name = raw.strip()
    if name == "inherit":
        tr.comment("model", "`inherit` in the original: the parent agent's model or --model")
        return
    if name in CLAUDE_ALIASES:
        tr.put("model", CLAUDE_ALIASES[name], at)
        tr.comment("model", f"`{name}` in the original: the model Claude Code's alias names")
        if name == "opusplan":
            tr.warn(at, "model", "opusplan runs as Opus throughout (no Sonnet for execution)")
        return
    tr.put("model", model_id(name), at)


ASKS_FIRST = {
    "default": ("execute", "write_file", "edit_file"),
    "acceptEdits": ("execute",),
    "bypassPermissions": (),
}
"""Claude Code permission mode -> the agentctl tools that wait for an approval (Claude Code
asks before a command or a file edit, unless the mode says otherwise)."""

CHANGES = ("execute", "write_file", "edit_file")


def _permission_mode(
    tr: Translation, mode: Any, at: Loc, tools: list[str] | None
) -> list[str] | None:
    """Approvals (`interrupt_on`) for what the mode asks about; `plan` keeps the read-only
    tools. Returns the agent's tools."""
    present = [*FILE_TOOLS, "write_todos", "task"] if tools is None else tools
    if mode == "plan":
        tr.comment("filesystem", "permissionMode: plan in the original: no commands or edits")
        tr.warn(at, "permissionMode", "plan runs with the tools that change nothing")
        return [t for t in present if t not in CHANGES]
    if not isinstance(mode, str) or mode not in ASKS_FIRST:
        choices = ", ".join([*ASKS_FIRST, "plan"])
        tr.drop(at, "permissionMode", mode, f"agentctl knows the modes {choices}")
        return tools
    asked = [t for t in ASKS_FIRST[mode] if t in present]
    if asked:
        tr.put("interrupt_on", {t: True for t in asked}, at)
        tr.comment(
            "interrupt_on",
            f"Claude Code asks before these ({mode} permission mode); agentctl asks at each call",
        )
    return tools


def _disallowed(
    tr: Translation, raw: Any, at: Loc, locs: list[Loc] | None, tools: list[str] | None
) -> list[str] | None:
    """The tools without those `disallowedTools` names (each warning at its name, `locs`)."""
    names = split_tools(raw)
    if names is None:
        tr.fail(at, "disallowedTools", "expected a comma-separated string or a list of names")
        return tools
    denied = map_tools(
        tr,
        names,
        locs or [at] * len(names),
        TOOLS,
        LABEL,
        "disallowedTools",
        no_equivalent=NO_EQUIVALENT,
    )
    base = tools if tools is not None else [*FILE_TOOLS, "write_todos", "task"]
    return [t for t in base if t not in denied]


# --------------------------------------------------------------------------- writing


def write(spec: Any, losses: list[str]) -> str:
    """The Claude Code file for an agent; what it cannot say goes to `losses`."""
    fields = [("name", markdown.scalar(spec.name))]
    if spec.description:
        fields.append(("description", markdown.scalar(spec.description)))
    tools = tools_of(spec)
    if tools is not None:
        fields.append(("tools", ", ".join(dedupe(WRITE_BACK[t] for t in tools))))
    if spec.model is not None:
        fields.append(("model", markdown.scalar(claude_model(spec.model.id))))
    mode = _mode_of(spec, tools, losses)
    if mode != "default":
        fields.append(("permissionMode", mode))
    if spec.limits.model_calls is not None:  # read back as `limits.model_calls`
        fields.append(("maxTurns", str(spec.limits.model_calls)))
    for key in sorted(spec.limits.model_fields_set - {"model_calls"}):
        losses.append(f"limits.{key}: claude cannot express budgets other than maxTurns")
    return markdown.write(fields, spec.prompt or "")


def _mode_of(spec: Any, tools: list[str] | None, losses: list[str]) -> str:
    """The permission mode whose approvals are the agent's `interrupt_on` (`default` when none
    matches, with a loss)."""
    present = [*FILE_TOOLS, "write_todos", "task"] if tools is None else tools
    asked = set(spec.interrupt_on)
    plain = all(setting is True for setting in spec.interrupt_on.values())
    # `default` first (written as no field), then no approvals at all, then `acceptEdits`
    for mode in ("default", "bypassPermissions", "acceptEdits"):
        if plain and asked == {t for t in ASKS_FIRST[mode] if t in present}:
            return mode
    losses.append(
        f"interrupt_on ({', '.join(sorted(asked))}): Claude Code chooses approvals by permission "
        "mode and none matches; the default mode is written (it asks before commands and edits)"
    )
    return "default"


def claude_model(model_id_: str) -> str:
    for alias, full in CLAUDE_ALIASES.items():
        if full == model_id_ and alias != "opusplan":
            return alias
    provider, _, name = model_id_.partition(":")
    return name if provider == "anthropic" else model_id_
