"""GitHub Copilot custom agents: `.github/agents/NAME.agent.md`, front matter then the prompt.

Front matter: `name` (default: the file name), `description`, `tools` (a list or a
comma-separated string of tool aliases; absent: every tool), `model` (a name, or a list tried in
order), `target`, `handoffs`, `mcp-servers` and the invocation switches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.load.dialects import markdown
from runner.load.dialects.claude import TOOLS as CLAUDE_TOOLS
from runner.load.dialects.common import (
    MCP_HINT,
    WEB_HINT,
    Translation,
    bare_model,
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

LABEL = "Copilot"

TOOLS: dict[str, tuple[str, ...]] = {
    "execute": ("execute",),
    "shell": ("execute",),
    "powershell": ("execute",),
    "runCommands": ("execute",),
    "runInTerminal": ("execute",),
    "runTests": ("execute",),
    "terminal": ("execute",),
    "read": ("read_file", "ls"),
    "edit": ("edit_file", "write_file"),
    "editFiles": ("edit_file", "write_file"),
    "search": ("grep", "glob"),
    "codebase": ("grep", "glob"),
    "agent": ("task",),
    "custom-agent": ("task",),
    "runSubagent": ("task",),
    "todo": ("write_todos",),
    "todos": ("write_todos",),
    "readFile": ("read_file",),
    "listDirectory": ("ls",),
    "createFile": ("write_file",),
    "fileSearch": ("glob",),
    "textSearch": ("grep",),
    **CLAUDE_TOOLS,  # Copilot takes Claude Code's names as aliases
}
"""Copilot tool alias -> agentctl tools."""

TOOL_SETS = frozenset({"read", "edit", "search", "execute", "agent", "todo", "web", "vscode"})
"""Copilot's built-in tool sets: `edit/editFiles` names one tool of the `edit` set."""

WRITE_BACK = {
    "read_file": "read",
    "ls": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "grep": "search",
    "glob": "search",
    "execute": "execute",
    "write_todos": "todo",
    "task": "agent",
}

NO_EQUIVALENT = {
    "web": WEB_HINT,
    "fetch": WEB_HINT,
    "WebFetch": WEB_HINT,
    "WebSearch": WEB_HINT,
    "githubRepo": WEB_HINT,
    "*/*": MCP_HINT,
}

UNMAPPED = {
    "target": "agentctl runs the agent wherever it is started",
    "handoffs": "agentctl has no handoff buttons; its subagents are called with `task`",
    "infer": "agentctl runs the agent it is given",
    "disable-model-invocation": "agentctl runs the agent it is given",
    "user-invocable": "agentctl runs the agent it is given",
    "argument-hint": "agentctl agents take typed `inputs:`",
    "metadata": "labels of Copilot",
    "mcp-servers": "MCP servers are agentctl `tools: [{mcp: ...}]` entries",
    "agents": "agentctl subagents are listed under `subagents:`",
    "hooks": "agentctl has no hooks; use `middleware:`",
}

MAPPED = ("name", "description", "tools", "model")

MODELS = {
    "claude sonnet 4.5": "anthropic:claude-sonnet-4-5",
    "claude sonnet 4": "anthropic:claude-sonnet-4-0",
    "claude opus 4.1": "anthropic:claude-opus-4-1",
    "claude haiku 4.5": "anthropic:claude-haiku-4-5",
    "gpt-5": "openai:gpt-5",
    "gpt-5 mini": "openai:gpt-5-mini",
    "gpt-5-codex": "openai:gpt-5-codex",
    "gpt-4.1": "openai:gpt-4.1",
    "gpt-4o": "openai:gpt-4o",
    "gemini 2.5 pro": "google_genai:gemini-2.5-pro",
}
"""Copilot model display names (lower case, without ` (copilot)`) -> agentctl model ids."""


def read(path: Path, text: str, shown: str) -> Translation:
    tr = Translation("copilot", shown)
    fm = markdown.split(text, shown)
    tr.problems += fm.problems
    tr.unreadable = bool(fm.problems)
    tr.pos = fm.pos
    # an empty field it maps (`tools:`) is an absent one, as the tool reads it
    value = {k: v for k, v in fm.value.items() if v is not None or k not in MAPPED}
    pos = fm.pos
    here = pos.loc
    loc, vloc = pos.key_loc, pos.value_loc

    stem = path.name.removesuffix(".md").removesuffix(".agent").removesuffix(".chatmode")
    name = value.get("name")
    raw_name = name if isinstance(name, str) and name.strip() else stem
    put_name(tr, raw_name, vloc("name"))  # the document's place when `name:` is absent
    if "description" in value:
        tr.put("description", value["description"], vloc("description"))
    if "model" in value:
        _model(tr, value["model"], pos.children.get("model"), vloc("model"))
    tools: list[str] | None = None
    if "tools" in value:
        names = split_tools(value["tools"])
        if names is None:
            tr.fail(vloc("tools"), "tools", "expected a list of tool names")
        else:
            locs = item_locs(value["tools"], pos.children.get("tools"), vloc("tools"), text)
            table, hints = _tool_table(names)
            table["*"] = ()  # `tools: ['*']`: every tool, as an absent field
            tools = map_tools(tr, names, locs, table, LABEL, "tools", no_equivalent=hints)
            if "*" in names:
                tools = None
            else:
                tr.comment("filesystem", f"from tools: {', '.join(names)} in the original")
                tool_settings(tr, tools, vloc("tools"))
    project_backend(tr, tools, here, project_dir(path, ".github"))
    tr.comment("backend", "Copilot works in the repository folder (the one holding .github/)")
    for key, raw in value.items():
        if key not in MAPPED:
            unknown_field(tr, key, raw, loc(key), UNMAPPED, MAPPED, LABEL)
    tr.put("prompt", fm.body, Loc(shown, fm.body_line, 1))
    return tr


def _tool_table(names: list[str]) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """TOOLS and NO_EQUIVALENT with the names qualified by a built-in tool set: `edit/editFiles`,
    `search/codebase` run as the tool they name; `read/problems` has no equivalent (a VS Code
    tool, not an MCP server's: `server/*` and `server/tool` are those)."""
    table, hints = dict(TOOLS), dict(NO_EQUIVALENT)
    for name in names:
        group, _, tool = name.partition("/")
        if group not in TOOL_SETS or not tool:
            continue
        if tool in TOOLS:
            table[name] = TOOLS[tool]
        else:
            hints[name] = NO_EQUIVALENT.get(tool) or (
                WEB_HINT if group == "web" else f"a tool of Copilot's built-in `{group}` tool set"
            )
    return table, hints


def _model(tr: Translation, raw: Any, child: Any, at: Loc) -> None:
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        tr.fail(at, "model", "expected a model name or a list of names")
        return
    ids = [copilot_model_id(n) for n in names]
    tr.comment("model", f"{', '.join(repr(n) for n in names)} in the original")
    if len(ids) == 1:
        tr.put("model", ids[0], at)
        return
    locs = [child.children[i].loc for i in range(1, len(ids))] if child is not None else None
    tr.put("model", {"id": ids[0], "fallbacks": ids[1:]}, at)
    if locs:
        fallbacks = tr.root.children["model"].children["fallbacks"]
        for index, item in enumerate(locs):
            fallbacks.children[index].loc = item


def copilot_model_id(name: str) -> str:
    plain = name.strip()
    if ":" in plain:  # already provider:model (or an agentctl cassette)
        return plain
    key = plain.lower().removesuffix("(copilot)").strip()
    if key in MODELS:
        return MODELS[key]
    if key.startswith("claude") and " " in key:
        return "anthropic:" + key.replace(" ", "-").replace(".", "-")
    return model_id(key.replace(" ", "-"))


# --------------------------------------------------------------------------- writing


def write(spec: Any, losses: list[str]) -> str:
    fields = [("name", markdown.scalar(spec.name))]
    if spec.description:
        fields.append(("description", markdown.scalar(spec.description)))
    tools = tools_of(spec)
    if tools is not None:
        if "ask_user" in tools:
            losses.append("ask_user: Copilot has no tool to ask the user a question")
        names = dedupe(WRITE_BACK[t] for t in tools if t in WRITE_BACK)
        fields.append(("tools", "[" + ", ".join(f"'{n}'" for n in names) + "]"))
    if spec.model is not None:
        ids = [spec.model.id, *(f.id for f in spec.model.fallbacks)]
        shown = [markdown.scalar(copilot_model_name(i)) for i in ids]
        fields.append(("model", shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"))
    return markdown.write(fields, spec.prompt or "")


def copilot_model_name(model_id_: str) -> str:
    for name, full in MODELS.items():
        if full == model_id_:
            return " ".join(
                w.capitalize() if not w.startswith("gpt") else w.upper() for w in name.split()
            )
    return bare_model(model_id_)
