"""Completion, hover, go to definition, document symbols and "did you mean" fixes.

Each reads what the checks read: the schema generated from the spec models, the agent as
`runner.check.tools` sees it (its tools and subagents, after includes and refs), the files on
disk (and open buffers). They work on a half-typed file: the key path comes from indentation
(`context.py`), and names come from the last version of the agent that loaded.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from runner.lsp import schema
from runner.lsp._deps import (
    FILE_TOOLS,
    KNOWN_PROVIDERS,
    STEP_KINDS,
    AgentSpec,
    StaticAgent,
    WorkflowSpec,
    discover_skills,
    read_yaml,
    static_agents,
)
from runner.lsp.context import Cursor, cursor_at
from runner.lsp.diagnostics import resolve
from runner.lsp.documents import path_to_uri
from runner.tools.known import known_tools, server_key

# --------------------------------------------------------------------------- names


def agent_at(specs: list[AgentSpec], path: tuple[Any, ...]) -> StaticAgent | None:
    """The agent (main or inline subagent) whose part of the file holds `path`."""
    if not specs:
        return None
    agents = static_agents(specs[0])
    where = tuple(path[:2]) if len(path) >= 2 and path[0] == "subagents" else ()
    return next((a for a in agents if a.where == where and a.locate == specs[0].problem), None)


def tool_names(
    specs: list[AgentSpec], path: tuple[Any, ...], text: str = "", written: Any = None
) -> list[str]:
    """The tools of the agent at `path`; for a file that never loaded, those its text shows
    (the harness's, and the declared tools' names), or those of `written`, the agent's mapping
    as typed (an agent written in a workflow)."""
    agent = agent_at(specs, path)
    if agent is not None:
        return sorted({*agent.tools, *_known_mcp(agent, specs)})
    if specs:
        return sorted(
            {t for a in static_agents(specs[0]) for t in (*a.tools, *_known_mcp(a, specs))}
        )
    if written is None:
        written = read_yaml(text, "", env={}).value if text else None
    return _written_tools(written)


def _known_mcp(agent: StaticAgent, specs: list[AgentSpec]) -> list[str]:
    """The tools of the agent's MCP servers without `include:` (its own `tools:`, else the main
    agent's, which it inherits) as they listed them when they last started here."""
    entries = agent.core.tools if "tools" in agent.core.model_fields_set or agent.is_main else []
    if not entries and not agent.is_main and specs:
        entries = specs[0].tools
    names: list[str] = []
    for entry in entries:
        server = getattr(entry, "mcp", None)
        if server is not None and server.include is None:
            names += mcp_tool_names(server.model_dump(by_alias=True))
    return names


def mcp_tool_names(server: dict[str, Any]) -> list[str]:
    """The final names of an MCP server's tools (`include`, `exclude`, `prefix` applied): those
    it lists in `include:`, else those it listed when it last started (`runner.tools.known`)."""
    include = server.get("include")
    if isinstance(include, list):
        listed = [str(t) for t in include]
    else:
        key = server_key(
            url=server.get("url"), command=server.get("command"), args=server.get("args") or ()
        )
        listed = known_tools(key) or []
    exclude = server.get("exclude")
    if not isinstance(exclude, list):
        exclude = []
    prefix = server.get("prefix")
    start = (
        f"{server.get('name')}_" if prefix is True else prefix if isinstance(prefix, str) else ""
    )
    return [f"{start}{t}" for t in listed if t not in exclude]


def _written_tools(value: Any) -> list[str]:
    if not isinstance(value, dict):
        value = {}
    names = {*FILE_TOOLS, "execute", "write_todos"}
    if value.get("subagents"):
        names.add("task")
    for entry in value.get("tools") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            names.add(entry["name"])
        elif isinstance(entry, dict) and isinstance(entry.get("import"), str):
            names.add(entry["import"].rpartition(":")[2].rpartition(".")[2])
        elif isinstance(entry, dict) and len(entry) == 1:  # http:, script:, mcp: as typed
            ((kind, body),) = entry.items()
            if isinstance(body, dict) and kind in ("http", "script") and body.get("name"):
                names.add(str(body["name"]))
            elif kind == "mcp" and isinstance(body, dict):
                names.update(mcp_tool_names(body))
    return sorted(n for n in names if n)


def subagent_names(specs: list[AgentSpec]) -> dict[str, str]:
    """Each agent's name (main and subagents, of every agent loaded) with its description."""
    found: dict[str, str] = {}
    for spec in specs:
        for agent in static_agents(spec):
            found.setdefault(agent.name, getattr(agent.core, "description", None) or "")
    return found


def template_names(text: str, specs: list[AgentSpec]) -> list[str]:
    """The names a prompt may use as `{{ vars.NAME }}`: `vars:` and `inputs:`, of the file as
    typed and of the agent as last loaded (includes too)."""
    names: set[str] = set()
    value = read_yaml(text, "", env={}).value
    if isinstance(value, dict):
        for key in ("vars", "inputs"):
            if isinstance(value.get(key), dict):
                names.update(str(k) for k in value[key])
    for spec in specs[:1]:
        names.update(str(k) for k in (getattr(spec, "vars", None) or {}))
        names.update(str(k) for k in (getattr(spec, "inputs", None) or {}))
    return sorted(names)


def skill_names(specs: list[AgentSpec]) -> dict[str, Path]:
    """Skills in the host skills folders of the agent: name -> its SKILL.md."""
    found: dict[str, Path] = {}
    for spec in specs[:1]:
        for entry in getattr(spec, "skills", []):
            host = getattr(entry, "host", None)
            folder = Path(host) if host else None
            if folder is not None and folder.is_dir():
                for skill in sorted(folder.glob("*/SKILL.md")):
                    found.setdefault(skill.parent.name, skill)
    return found


# --------------------------------------------------------------------------- completion

_TOOL_KEYS = {"interrupt_on", "tool_calls"}  # mappings keyed by tool name
_FILE_VALUES = {"include", "ref", "file", "agent", "spec"}


def complete(
    text: str,
    file: Path,
    kind: str,
    line: int,
    character: int,
    specs: list[AgentSpec],
    workflow: WorkflowSpec | None = None,
) -> list[lsp.CompletionItem]:
    cursor = cursor_at(text, line, character)
    path = tuple(p for p in cursor.path)
    if cursor.template is not None:
        word = re.search(r"[\w.]*$", cursor.template)
        typed = word.group(0) if word else ""
        return _items(
            [f"vars.{n}" for n in template_names(text, specs)],
            lsp.CompletionItemKind.Variable,
            _edit_range(line, character, typed),
        )
    rng = _edit_range(line, character, cursor.prefix)
    names = _workflow_names(cursor, path, text) if kind == "workflow" else None
    if names is None and kind == "workflow":
        inner = workflow_agent(text, path, workflow)
        if inner is not None:
            agent_specs, rest, written = inner
            names = _names_for(cursor, rest, "agent", agent_specs, file, text, written)
    elif names is None:
        names = _names_for(cursor, path, kind, specs, file, text)
    if names is not None:
        return _items(names, lsp.CompletionItemKind.Value, rng)
    if cursor.kind == "key" and not _string_items(kind, path, cursor):
        keys = schema.keys_at("agent" if kind == "fragment" else kind, path)
        return [
            lsp.CompletionItem(
                label=key,
                kind=lsp.CompletionItemKind.Property,
                documentation=lsp.MarkupContent(lsp.MarkupKind.Markdown, about) if about else None,
                text_edit=lsp.TextEdit(rng, f"{key}: "),
            )
            for key, about in keys.items()
        ]
    values = schema.enum_values("agent" if kind == "fragment" else kind, path)
    return _items(values, lsp.CompletionItemKind.EnumMember, rng)


def _string_items(kind: str, path: tuple[Any, ...], cursor: Cursor) -> bool:
    """A list item where the list holds strings only (no mapping keys to offer)."""
    if not cursor.in_list:
        return False
    nodes = schema.at_path("agent" if kind == "fragment" else kind, path)
    return bool(nodes) and not any("properties" in n for n in nodes)


def _names_for(
    cursor: Cursor,
    path: tuple[Any, ...],
    kind: str,
    specs: list[AgentSpec],
    file: Path,
    text: str,
    written: Any = None,
) -> list[str] | None:
    """Names (tools, subagents, skills, models, files) where the spec wants one; None elsewhere.
    `written` is the agent's mapping as typed when it is not the whole file (a workflow's)."""
    last = next((p for p in reversed(path) if isinstance(p, str)), None)
    item = bool(path) and isinstance(path[-1], int)
    container = path[:-1] if item else path
    if kind == "cassette":
        if cursor.kind == "value" and last == "subagent_type":
            return sorted(subagent_names(specs))
        if cursor.kind == "key" and path == ("agents",):
            return sorted(subagent_names(specs))
        if cursor.kind == "value" and last == "name" and "tool_calls" in path:
            return tool_names(specs, ())
        return None
    if kind == "test":
        if last == "subagents" or (cursor.kind == "value" and last == "agent" and "expect" in path):
            return sorted(subagent_names(specs))
        if last == "not_called" or (cursor.kind == "value" and last == "name" and "expect" in path):
            return tool_names(specs, ())
        if cursor.kind == "value" and last == "agent":
            return _files(file, cursor.prefix, (".yaml", ".yml"))
        if cursor.kind == "value" and last == "model" and cursor.prefix.startswith("replay:"):
            return _files(file, cursor.prefix, (".yaml", ".yml"), tag="replay:")
        return None
    if cursor.kind == "key" and container and container[-1] in _TOOL_KEYS and not item:
        return tool_names(specs, path, text, written)
    if cursor.kind == "value" and last == "tool" and "permissions" in path:
        return tool_names(specs, path, text, written)
    if last == "tools" and (item or cursor.in_list) and "filesystem" in path:
        return [*FILE_TOOLS, "execute"]
    if last == "tools" and (item or cursor.in_list) and path[:1] == ("subagents",):
        return tool_names(specs, (), text, written)
    if last == "skills" and (item or cursor.in_list):
        return _files(file, cursor.prefix, ("/",))
    if cursor.kind == "value" and (last == "model" or (last == "id" and "model" in path)):
        if cursor.prefix.startswith("replay:"):
            return _files(file, cursor.prefix, (".yaml", ".yml"), tag="replay:")
        return _model_ids(file, specs)
    if (last in _FILE_VALUES and (cursor.kind == "value" or item)) or (
        last == "include" and cursor.in_list
    ):
        return _files(file, cursor.prefix, (".yaml", ".yml", ".md", ".txt", ".json", "/"))
    if cursor.kind == "value" and last == "import" and ":" not in cursor.prefix:
        return _files(file, cursor.prefix, (".py", "/"))
    return None


def _workflow_names(cursor: Cursor, path: tuple[Any, ...], text: str) -> list[str] | None:
    """In a workflow's steps: step ids (and `end`) where a step jumps, agent names for
    `agent:`, tool names for `tool:`, from the file's text; None elsewhere."""
    last = next((p for p in reversed(path) if isinstance(p, str)), None)
    value = read_yaml(text, "", env={}).value if path[:1] == ("workflow",) else None
    if not isinstance(value, dict):
        return None
    jump = last in ("next", "to", "on_reject") or (
        cursor.kind == "key" and path[-2:-1] == ("choose",) and last == "options"
    )
    if jump and (cursor.kind == "value" or last == "options"):
        ids: list[str] = []

        def visit(steps: Any) -> None:
            for step in steps if isinstance(steps, list) else []:
                if isinstance(step, dict) and isinstance(step.get("id"), str):
                    ids.append(step["id"])
                    visit(step.get("parallel"))
                    body = step.get("map")
                    visit(body.get("steps") if isinstance(body, dict) else None)

        body = value.get("workflow")
        visit(body.get("steps") if isinstance(body, dict) else None)
        return [*ids, "end"]
    if cursor.kind == "value" and last == "agent":
        agents = value.get("agents")
        return sorted(str(k) for k in agents) if isinstance(agents, dict) else []
    if cursor.kind == "value" and last == "tool":
        tools = value.get("tools")
        return sorted(
            str(spec["name"])
            for entry in (tools if isinstance(tools, list) else [])
            if isinstance(entry, dict)
            for spec in entry.values()
            if isinstance(spec, dict) and isinstance(spec.get("name"), str)
        )
    return None


def workflow_agent(
    text: str, path: tuple[Any, ...], workflow: WorkflowSpec | None
) -> tuple[list[AgentSpec], tuple[Any, ...], Any] | None:
    """For a `path` inside an agent written in a workflow file (under `agents:`, or a step's
    `agent:` mapping): that agent's loaded spec (none when the workflow did not load), the path
    within the agent, and its mapping as typed. None outside such an agent."""
    value = read_yaml(text, "", env={}).value
    if not isinstance(value, dict):
        return None
    key: str | None = None
    at = 0
    if path[:1] == ("agents",) and len(path) >= 2 and isinstance(path[1], str):
        key, at = path[1], 2
        agents = value.get("agents")
        written = agents.get(key) if isinstance(agents, dict) else None
    else:
        node: Any = value
        written = None
        for index, part in enumerate(path):
            if part == "agent" and isinstance(node, dict) and isinstance(node.get("agent"), dict):
                key, at, written = node.get("id"), index + 1, node["agent"]
                break
            node = _child(node, part)
            if node is None:
                return None
    if not isinstance(key, str) or not isinstance(written, dict) or "ref" in written:
        return None
    loaded = workflow.agent_specs().get(key) if workflow is not None else None
    return ([loaded] if loaded is not None else []), tuple(path[at:]), written


def _child(node: Any, part: Any) -> Any:
    if isinstance(node, dict) and isinstance(part, str):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _model_ids(file: Path, specs: list[AgentSpec]) -> list[str]:
    """`provider:` for each known provider, and the model ids the agent files beside this one
    already use."""
    used: set[str] = set()
    for sibling in sorted(file.parent.glob("*.y*ml"))[:200]:
        try:
            text = sibling.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        used.update(re.findall(r"^\s*(?:model|id):\s*([a-z_]+:[\w.\-/]+)\s*$", text, re.M))
    used = {m for m in used if m.split(":")[0] in KNOWN_PROVIDERS and not m.startswith("replay:")}
    return [*sorted(used), *(f"{p}:" for p in KNOWN_PROVIDERS)]


def _files(file: Path, typed: str, suffixes: tuple[str, ...], *, tag: str = "") -> list[str]:
    """Paths (relative to the file's folder, as typed) of entries in the folder being typed."""
    typed = typed.removeprefix(tag)
    folder_part = typed.rpartition("/")[0] + "/" if "/" in typed else ""
    folder = resolve(folder_part or ".", file.parent)
    if not folder.is_dir():
        return []
    out: list[str] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry == file:
            continue
        if entry.is_dir():
            if "/" in suffixes or any(s != "/" for s in suffixes):
                out.append(f"{tag}{folder_part}{entry.name}/")
        elif entry.name.endswith(tuple(s for s in suffixes if s != "/")):
            out.append(f"{tag}{folder_part}{entry.name}")
    return out


def _edit_range(line: int, character: int, typed: str) -> lsp.Range:
    return lsp.Range(lsp.Position(line, character - len(typed)), lsp.Position(line, character))


def _items(
    names: Iterable[str], kind: lsp.CompletionItemKind, rng: lsp.Range
) -> list[lsp.CompletionItem]:
    return [lsp.CompletionItem(label=n, kind=kind, text_edit=lsp.TextEdit(rng, n)) for n in names]


# --------------------------------------------------------------------------- hover

_ENV = re.compile(r"\$\{([^}]*)\}")


def hover(
    text: str, file: Path, kind: str, line: int, character: int, specs: list[AgentSpec]
) -> str | None:
    """Markdown for what is under the cursor: a `${VAR}`, a key, a tool, a subagent."""
    lines = text.splitlines()
    if line >= len(lines):
        return None
    source = lines[line]
    for match in _ENV.finditer(source):
        if match.start() <= character <= match.end():
            return env_hover(match.group(1))
    start, end = _word_bounds(source, character)
    word = source[start:end].strip("\"'")
    if not word:
        return None
    cursor = cursor_at(text, line, end)
    is_key = source[end:].lstrip().startswith(":") and cursor.kind == "key"
    path = (*cursor.path, word) if is_key else cursor.path
    schema_kind = "agent" if kind == "fragment" else kind
    if kind in ("agent", "fragment") and (
        (is_key and cursor.path and cursor.path[-1] in _TOOL_KEYS)
        or (not is_key and path and path[-1] in ("tool",))
        or (path and path[-1] == "tools" and cursor.in_list)
    ):
        return tool_hover(word, specs, path)
    if kind == "cassette" and (path[-1:] == ("subagent_type",) or cursor.path == ("agents",)):
        return agent_hover(word, specs)
    if not is_key and "skills" in path[-2:] and kind in ("agent", "fragment"):
        return skills_hover(resolve(word, file.parent))
    if is_key:
        about = schema.key_description(schema_kind, path)
        return f"**{word}**\n\n{about}" if about else None
    return None


def _word_bounds(source: str, character: int) -> tuple[int, int]:
    start = character
    while start > 0 and re.match(r"[\w.\-/:]", source[start - 1]):
        start -= 1
    end = character
    while end < len(source) and re.match(r"[\w.\-/]", source[end]):
        end += 1
    return start, end


def env_hover(body: str) -> str:
    """Where a `${VAR}`'s value comes from: set, its default, or missing. Never the value."""
    match = re.match(r"[A-Za-z_][A-Za-z0-9_]*", body)
    name = match.group(0) if match else body
    rest = body[len(name) :]
    sep = ":-" if rest.startswith(":-") else "-" if rest.startswith("-") else ""
    default = rest[len(sep) :] if sep else None
    value = os.environ.get(name)
    if value is not None and (value or sep != ":-"):
        state = "set in the environment (its value is not shown)"
    elif default is not None:
        state = f"not set: the default `{default}` is used"
    else:
        state = "**missing**: not set, and no default (`${" + name + ":-default}`)"
    return f"`${{{name}}}`: {state}"


def tool_hover(name: str, specs: list[AgentSpec], path: tuple[Any, ...]) -> str:
    agent = agent_at(specs, path)
    if agent is None:
        return f"**{name}**: a tool (its agent did not load; see the diagnostics)"
    if name not in agent.tools:
        return f"**{name}**: no tool of that name in agent `{agent.name}`"
    if name in agent.spec_tools:
        entry = _declared(agent, name)
        about = f"**{name}**: a tool declared in this agent"
        if entry:
            about += f"\n\n{entry}"
        args = agent.declared_args.get(name)
        if args:
            about += "\n\nParameters: " + ", ".join(f"`{a}`" for a in args)
        return about
    return f"**{name}**: a tool of the harness (built in) of agent `{agent.name}`"


def _declared(agent: StaticAgent, name: str) -> str:
    for entry in getattr(agent.core, "tools", []):
        if getattr(entry, "name", None) == name:
            description = getattr(entry, "description", None)
            return str(description) if description else ""
    return ""


def skills_hover(folder: Path) -> str:
    """The skills a host skills folder holds: each name with its description."""
    if not folder.is_dir():
        return f"no folder `{folder}` (yet)"
    found = discover_skills([(folder, "/skills/")])
    lines = [f"- **{s.name}**: {s.description}" for s in found.skills.values()]
    return "Skills here:\n\n" + "\n".join(lines) if lines else "No skills here (no `*/SKILL.md`)"


def agent_hover(name: str, specs: list[AgentSpec]) -> str:
    names = subagent_names(specs)
    if name not in names:
        return f"**{name}**: no agent of that name in the agent files playing this cassette"
    return f"**{name}**: {names[name]}" if names[name] else f"**{name}**"


# --------------------------------------------------------------------------- definition


def definition(
    text: str, file: Path, kind: str, line: int, character: int, specs: list[AgentSpec]
) -> lsp.Location | None:
    """The file (and line) that a path, `file.py:name`, skill or subagent name points to."""
    lines = text.splitlines()
    if line >= len(lines):
        return None
    source = lines[line]
    start, end = _word_bounds(source, character)
    while (
        end < len(source) and source[end] == ":" and re.match(r"[\w.]", source[end + 1 : end + 2])
    ):
        end += 1 + len(re.match(r"[\w.]*", source[end + 1 :]).group(0))  # type: ignore[union-attr]
    word = source[start:end].strip("\"'")
    if not word:
        return None
    cursor = cursor_at(text, line, end)
    last = cursor.path[-1] if cursor.path else None
    if kind == "cassette" or (kind == "test" and last in ("subagents", "agent")):
        for spec in specs:
            for agent in static_agents(spec):
                if agent.name == word:
                    at = agent.locate(agent.where, "")
                    if at.file and (
                        kind != "test" or last == "subagents" or "expect" in cursor.path
                    ):
                        return _location(Path(os.path.abspath(at.file)), at.line)
    if word.startswith("replay:"):
        word = word.removeprefix("replay:")
    if ":" in word and last == "import":
        return _import_target(word, file)
    skills = skill_names(specs)
    if word in skills:
        return _location(skills[word], 1)
    target = resolve(word, file.parent)
    if target.is_file():
        return _location(target, 1)
    if target.is_dir():
        inside = sorted(target.glob("*/SKILL.md")) or sorted(target.glob("SKILL.md"))
        if inside:
            return _location(inside[0], 1)
    return None


def _import_target(ref: str, file: Path) -> lsp.Location | None:
    """`path/to/file.py:name` or `package.module:name`: the line defining `name`, found by
    reading the source (nothing is imported)."""
    module, _, name = ref.partition(":")
    if module.endswith(".py"):
        candidates = [resolve(module, file.parent)]
    else:
        parts = module.split(".")
        roots = [str(file.parent), os.getcwd(), *sys.path]
        candidates = [Path(root, *parts[:-1], f"{parts[-1]}.py") for root in roots if root] + [
            Path(root, *parts, "__init__.py") for root in roots if root
        ]
    for candidate in candidates:
        if candidate.is_file():
            return _location(candidate, _defined_at(candidate, name.split(".")[0]))
    return None


def _defined_at(path: Path, name: str) -> int:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return 1
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return node.lineno
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node.lineno
    return 1


def _location(path: Path, line: int) -> lsp.Location:
    at = lsp.Position(max(line - 1, 0), 0)
    return lsp.Location(uri=path_to_uri(path), range=lsp.Range(at, at))


# --------------------------------------------------------------------------- symbols


def symbols(text: str, kind: str) -> list[lsp.DocumentSymbol]:
    """The agent and its parts (subagents, tools), a workflow's steps (a parallel step's branches
    and a map's steps under it), state fields and agents, a cassette's agents, a test file's
    cases."""
    doc = read_yaml(text, "", env={})
    value, pos = doc.value, doc.pos
    if not isinstance(value, dict):
        return []
    out: list[lsp.DocumentSymbol] = []
    for key, child in value.items():
        if not isinstance(key, str) or key not in pos.children:
            continue
        at = pos.children[key]
        loc = pos.key_locs.get(key, at.loc)
        children: list[lsp.DocumentSymbol] = []
        if isinstance(child, list):
            for index, entry in enumerate(child):
                name = _entry_name(entry)
                sub = at.children.get(index)
                if name and sub is not None:
                    children.append(_symbol(name, _entry_kind(key), sub.loc.line, sub.loc.col))
        elif key == "workflow" and isinstance(child, dict) and "steps" in at.children:
            children = _step_symbols(child.get("steps"), at.children["steps"])
        elif isinstance(child, dict) and (
            kind == "cassette" or key in ("vars", "inputs", "state", "agents")
        ):
            for child_key, sub in at.children.items():
                where = at.key_locs.get(str(child_key), sub.loc)
                children.append(
                    _symbol(str(child_key), lsp.SymbolKind.Variable, where.line, where.col)
                )
        label: str = child if key == "name" and isinstance(child, str) else key
        symbol_kind = lsp.SymbolKind.Class if key == "name" else lsp.SymbolKind.Field
        symbol = _symbol(label, symbol_kind, loc.line, loc.col)
        symbol.children = children or None
        out.append(symbol)
    return out


def _step_symbols(steps: Any, pos: Any) -> list[lsp.DocumentSymbol]:
    """A workflow's steps by id, with the steps inside a `parallel` or a `map` under them."""
    found: list[lsp.DocumentSymbol] = []
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        sub = pos.children.get(index)
        if not isinstance(step, dict) or not isinstance(step.get("id"), str) or sub is None:
            continue
        kind = next((k for k in STEP_KINDS if k in step), None)
        symbol = _symbol(step["id"], lsp.SymbolKind.Event, sub.loc.line, sub.loc.col)
        symbol.detail = kind
        inner = step.get("parallel"), sub.children.get("parallel")
        body = step.get("map")
        if isinstance(body, dict) and "map" in sub.children:
            inner = body.get("steps"), sub.children["map"].children.get("steps")
        if inner[1] is not None:
            symbol.children = _step_symbols(inner[0], inner[1]) or None
        found.append(symbol)
    return found


def _entry_name(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        for key in ("name", "ref", "import", "mcp", "openapi", "http", "script", "tool"):
            if isinstance(entry.get(key), str):
                return str(entry[key])
    return None


def _entry_kind(key: str) -> lsp.SymbolKind:
    return {
        "subagents": lsp.SymbolKind.Class,
        "tools": lsp.SymbolKind.Function,
        "cases": lsp.SymbolKind.Method,
    }.get(key, lsp.SymbolKind.Field)


def _symbol(name: str, kind: lsp.SymbolKind, line: int, col: int) -> lsp.DocumentSymbol:
    at = lsp.Position(max(line - 1, 0), max(col - 1, 0))
    rng = lsp.Range(at, lsp.Position(at.line, at.character + len(name)))
    return lsp.DocumentSymbol(name=name, kind=kind, range=rng, selection_range=rng)


# --------------------------------------------------------------------------- code actions

_DID_YOU_MEAN = re.compile(r"did you mean '([^']+)'\?")


def fixes(uri: str, text: str, diagnostics: Iterable[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    """A quick fix for each diagnostic that says "did you mean 'X'?": X written in place of the
    wrong word, found on the diagnostic's line (a problem about a mapping's key may be placed at
    its value)."""
    lines = text.splitlines()
    actions: list[lsp.CodeAction] = []
    for diagnostic in diagnostics:
        match = _DID_YOU_MEAN.search(diagnostic.message)
        if diagnostic.source != "agentctl" or match is None or not diagnostic.data:
            continue  # (no data: shown on an `include:` line; the fix belongs in the other file)
        line = diagnostic.range.start.line
        wrong = _wrong_word(
            diagnostic.message[: match.start()], lines[line] if line < len(lines) else ""
        )
        if wrong is None:
            continue
        start, end = wrong
        actions.append(
            lsp.CodeAction(
                title=f"Change to '{match.group(1)}'",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=True,
                edit=lsp.WorkspaceEdit(
                    changes={
                        uri: [
                            lsp.TextEdit(
                                lsp.Range(lsp.Position(line, start), lsp.Position(line, end)),
                                match.group(1),
                            )
                        ]
                    }
                ),
            )
        )
    return actions


def _wrong_word(message: str, source: str) -> tuple[int, int] | None:
    """Where on `source` the word the message complains about is: a quoted name (`no tool named
    'X'`, `found text 'X'`) or the last key of the path (`modle: unknown key`)."""
    path, _, rest = message.partition(": ")
    candidates = re.findall(r"'([^']+)'", rest)
    candidates.append(re.split(r"[.\[]", path)[-1])
    for word in candidates:
        found = re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", source)
        if found and word:
            return found.start(), found.end()
    return None
