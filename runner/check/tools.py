"""Which tools each agent of a spec has, known without building it (and without langchain).

`agentctl validate` checks `interrupt_on` names and cassette tool calls against these lists, so
they must be the lists a build makes. The harness tools follow from the spec alone:

- `write_todos` when `todos` is on;
- the file tools (`filesystem.tools`, else all six) and `execute` when the backend can run
  commands (`local_shell`, or a composite whose default is one; a subagent without a backend of
  its own uses its parent's);
- `task` when an agent file has subagents (its own, or the built-in general-purpose one).

The spec's own tools are known by name only where the spec says it without running code: an
`import:` entry by its `name:`, else by the name after `:` in the reference (a `@tool` function's
name); an MCP server by its `include:` list (with its `prefix:`). A factory (`import:` with
`args:`), an MCP server without `include:` and `middleware:` entries may add tools whose names only
a build knows: such an agent's list is *open*, and names missing from it are not reported.
The harness tools' arguments are in `runner.check.tool_args`. `tests/check/test_static_tools.py`
compares these lists and those arguments with built agents.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from runner.errors import Problem
from runner.spec import (
    AgentSpec,
    CompositeBackendSpec,
    ImportTool,
    InlineSubagent,
    LocalShellBackendSpec,
    McpTool,
    ModelSpec,
    OpenApiTool,
    RefSubagent,
)
from runner.spec.agent import AgentCore
from runner.spec.checks import GENERAL_PURPOSE, subagent_name
from runner.spec.declared_tools import HttpTool, ScriptTool

__all__ = [
    "FILE_TOOLS",
    "StaticAgent",
    "code_with_placeholder",
    "execute_message",
    "fraction_message",
    "is_shell",
    "script_message",
    "static_agents",
    "unknown_tool_message",
]

KeyPath = tuple[str | int, ...]


class Locator(Protocol):
    """Where a key path is in a spec's files (`AgentSpec.problem`)."""

    def __call__(self, path: KeyPath, message: str, /, *, at_key: bool = False) -> Problem: ...


FILE_TOOLS = ("ls", "read_file", "write_file", "edit_file", "glob", "grep")


# --------------------------------------------------------------------------- agents


@dataclass
class StaticAgent:
    """One agent of a spec as a build would make it, reduced to names."""

    name: str
    core: AgentCore
    where: KeyPath
    """Its key path in the file `locate` reports in (`()` for an agent file)."""
    locate: Locator
    is_main: bool
    tools: list[str]
    open: bool
    """Tools may exist that are not in `tools` (see the module docstring)."""
    subagents: list[str] = field(default_factory=list)
    """The `subagent_type`s its `task` tool accepts."""
    models: list[tuple[str, KeyPath, Locator]] = field(default_factory=list)
    """The model ids it runs (model, then fallbacks), each with where it is written (the
    parent's place when inherited)."""
    explicit_interrupts: bool = True
    """`interrupt_on` is its own (an inherited one is not checked against its tools)."""
    executes: bool = False
    """Its backend can run commands (a subagent without a backend shares its parent's)."""
    spec_tools: list[str] = field(default_factory=list)
    spec_tools_open: bool = False
    """The spec's own tools (`tools:`), which a subagent that sets none inherits."""
    declared_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The JSON Schema of the arguments of each `http:`, `script:` and `openapi:` tool."""
    context_window: int | None = None
    """`model.context_window` as the spec sets it (its own, else inherited)."""
    answer_tool: str | None = None
    """The tool a model without native structured output calls to give a `response_format`
    answer: the schema's `title` (an untitled schema's tool gets a random name)."""

    def has_tool(self, name: str) -> bool:
        return name in self.tools


def execute_message(kind: str) -> str:
    """`execute` asked for on a backend that cannot run commands (`run` says the same)."""
    return (
        f"`execute` needs a backend that can run commands (kind: local_shell, or a "
        f"composite whose default is one); this agent's backend is {kind}"
    )


def script_message(kind: str) -> str:
    """A `script:` tool on an agent whose backend cannot run commands (`run` says the same)."""
    return (
        "a script tool runs through the backend's `execute`, so it needs a backend that can run "
        f"commands (kind: local_shell, or a composite whose default is one); this agent's "
        f"backend is {kind}"
    )


_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"})
"""Programs that run their `-c` argument as shell code."""
_CODE_FLAGS = {"python": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval")}
"""Interpreters that run an argument as code, and the flag that says which."""


def _code_flags(program: str) -> tuple[str, ...] | None:
    """The flags after which `program` runs the next argument as code; None for another."""
    name = program.rsplit("/", 1)[-1]
    if name in _SHELLS:
        return ("-c",)
    if re.fullmatch(r"python[0-9.]*", name):
        return ("-c",)
    return _CODE_FLAGS.get(name)


def is_shell(command: list[str], code: int) -> bool:
    """Whether the code at `command[code]` is run by a shell (not by another interpreter)."""
    return any(e.rsplit("/", 1)[-1] in _SHELLS for e in command[:code])


def code_with_placeholder(command: list[str]) -> tuple[int, str] | None:
    """Where a script's `command` runs a `{placeholder}` as code: the index of the element a
    shell (`sh -c`, `bash -c`, `env sh -c`, `busybox sh -c`) or an interpreter (`python -c`,
    `perl -e`, `ruby -e`, `node -e`) runs, and the placeholder's name; None when none does.
    A placeholder after that element is safe: the code reads it as `$1` or `sys.argv[1]`."""
    from runner.spec.declared_tools import placeholders

    index = 0
    program = command[0].rsplit("/", 1)[-1]
    if program == "env":  # env [-i] [-u NAME] [NAME=VALUE]... program args...
        index = 1
        while index < len(command) and (command[index].startswith("-") or "=" in command[index]):
            index += 2 if command[index] in ("-u", "--unset", "-C", "--chdir") else 1
        if index >= len(command):
            return None
    if command[index].rsplit("/", 1)[-1] == "busybox":
        index += 1
    if index >= len(command) or (flags := _code_flags(command[index])) is None:
        return None
    short = {f[1] for f in flags if len(f) == 2}
    skip = False
    for position in range(index + 1, len(command)):
        element = command[position]
        if skip:  # the value of `-o NAME` (`sh -o pipefail -c ...`)
            skip = False
            continue
        if element in ("-o", "+o"):
            skip = True
            continue
        if not element.startswith("-"):
            return None  # a script file or the code itself, without a code flag: not ours
        # `-c`, `-ec`, `-xc` (short flags run together, the code flag among them), `--eval`
        runs_code = element in flags or (
            not element.startswith("--") and bool(set(element[1:]) & short)
        )
        if runs_code:
            if position + 1 >= len(command):
                return None
            names = placeholders(command[position + 1])[0]
            return (position + 1, names[0]) if names else None
    return None


def fraction_message(model_id: str) -> str:
    """A summarization `fraction` for a model whose context window is not known."""
    return (
        "a fraction needs the model's context window, which is not known for "
        f"{model_id!r}: set `model.context_window`, or use `tokens:`"
    )


def unknown_tool_message(name: str, agent: str, tools: list[str]) -> str:
    """The message for a tool name that an agent lacks; `run` and `validate` both use it."""
    from runner.load.problems import did_you_mean

    names = sorted(set(tools))
    hint = did_you_mean(name, names)
    fix = f"; did you mean {hint!r}?" if hint else f"; its tools: {', '.join(names)}"
    return f"no tool named {name!r} in agent {agent!r}{fix}"


def static_agents(spec: AgentSpec) -> list[StaticAgent]:
    """The main agent of `spec` and every agent under it (inline, ref'd, general-purpose), in
    the order a build resolves them. A ref'd file used twice is listed twice."""
    return list(_walk(spec, name=spec.name, where=(), locate=spec.problem, parent=None, depth=0))


def _models_of(
    model: ModelSpec | None, at: KeyPath, locate: Locator
) -> list[tuple[str, KeyPath, Locator]]:
    if model is None:
        return []
    found = [(model.id, at, locate)]
    found += [(f.id, (*at, "fallbacks", i), locate) for i, f in enumerate(model.fallbacks)]
    return found


def _can_execute(core: AgentCore, parent: StaticAgent | None) -> bool:
    """Whether the agent's backend runs commands: its own, else its parent's (as a build
    shares it), else `state`, which does not."""
    backend = core.backend
    if backend is None:
        return parent is not None and parent.executes
    if isinstance(backend, CompositeBackendSpec):
        backend = backend.default
    return isinstance(backend, LocalShellBackendSpec)


def _answer_tool(schema: dict[str, Any] | None) -> str | None:
    title = schema.get("title") if schema else None
    return str(title) if title is not None else None


def declared_args(core: AgentCore) -> dict[str, dict[str, Any]]:
    """The argument schemas of the agent's own `http:`, `script:` and `openapi:` tools."""
    found: dict[str, dict[str, Any]] = {}
    for entry in core.tools:
        if isinstance(entry, HttpTool):
            found[entry.http.name] = entry.http.args_schema()
        elif isinstance(entry, ScriptTool):
            found[entry.script.name] = entry.script.args_schema()
        elif isinstance(entry, OpenApiTool):
            for op_id, operation in entry.openapi._operations.items():
                found[op_id] = operation.schema
    return found


def _own_tools(core: AgentCore) -> tuple[list[str], bool]:
    names, open_ = entry_tool_names(core.tools)
    return names, open_ or bool(core.middleware)


def entry_tool_names(entries: list[Any]) -> tuple[list[str], bool]:
    """The names of the tools `tools:` entries give, and whether more may come when they are
    built (an MCP server without `include:`, an import of a tool factory)."""
    names: list[str] = []
    open_ = False
    for entry in entries:  # as `_check_approvals` counts them: after renames and prefixes
        if isinstance(entry, ImportTool):
            if entry.name is not None:
                names.append(entry.name)
            elif entry.args is not None:
                open_ = True  # a factory: its tools are named when it runs
            else:
                names.append(entry.import_.rsplit(":", 1)[-1])
        elif isinstance(entry, McpTool):
            server = entry.mcp
            if server.include is None:
                open_ = True
                continue
            prefix = server.prefix
            start = f"{server.name}_" if prefix is True else (prefix or "")
            names += [f"{start}{tool}" for tool in server.include if tool not in server.exclude]
        elif isinstance(entry, HttpTool):
            names.append(entry.http.name)
        elif isinstance(entry, ScriptTool):
            names.append(entry.script.name)
        elif isinstance(entry, OpenApiTool):
            names += entry.openapi.operations
    return names, open_


def _walk(
    core: AgentCore,
    *,
    name: str,
    where: KeyPath,
    locate: Locator,
    parent: StaticAgent | None,
    depth: int,
) -> Iterator[StaticAgent]:
    fields = core.model_fields_set
    if parent is None or "tools" in fields:
        own, own_open = _own_tools(core)
        own_args = declared_args(core)
    else:
        own, own_open = parent.spec_tools, parent.spec_tools_open
        own_args = parent.declared_args
    executes = _can_execute(core, parent)
    harness: list[str] = ["write_todos"] if core.todos else []
    wanted = (
        list(core.filesystem.tools)
        if core.filesystem.tools is not None
        else [*FILE_TOOLS, "execute"]
    )
    harness += [t for t in wanted if t != "execute" or executes]
    subagents: list[str] = []
    if isinstance(core, AgentSpec):
        subagents = [n for entry in core.subagents if (n := subagent_name(entry)) is not None]
        if core.general_purpose_agent.enabled:
            subagents.append(GENERAL_PURPOSE)
        if subagents:
            harness.append("task")
    if core.ask_user is not None and core.ask_user.enabled:
        harness.append("ask_user")
    models = _models_of(core.model, (*where, "model"), locate)
    if not models and parent is not None:
        models = list(parent.models)
    agent = StaticAgent(
        name=name,
        core=core,
        where=where,
        locate=locate,
        is_main=parent is None,
        tools=[*harness, *own],
        open=own_open or bool(core.middleware),
        subagents=subagents,
        models=models,
        explicit_interrupts=parent is None or "interrupt_on" in fields,
        executes=executes,
        spec_tools=own,
        spec_tools_open=own_open,
        declared_args=own_args,
        answer_tool=_answer_tool(core.response_format),
        context_window=(
            core.model.context_window
            if core.model is not None
            else parent.context_window
            if parent is not None
            else None
        ),
    )
    yield agent
    if not isinstance(core, AgentSpec) or depth > 20:
        return
    for index, entry in enumerate(core.subagents):
        at: KeyPath = (*where, "subagents", index)
        if isinstance(entry, InlineSubagent):
            yield from _walk(
                entry, name=entry.name, where=at, locate=locate, parent=agent, depth=depth + 1
            )
        elif isinstance(entry, RefSubagent) and entry._spec is not None:
            ref = entry._spec
            yield from _walk(
                ref,
                name=entry.name or ref.name,
                where=(),
                locate=ref.problem,
                parent=agent,
                depth=depth + 1,
            )
    gp = core.general_purpose_agent
    if gp.enabled:
        # as the resolver makes it; constructed without validation (its values are checked)
        gp_core = InlineSubagent.model_construct(
            name=GENERAL_PURPOSE, description="-", todos=core.todos
        )
        if gp.model is not None:
            gp_core.model = gp.model
        gp_where: KeyPath = (*where, "general_purpose_agent")
        for found in _walk(
            gp_core,
            name=GENERAL_PURPOSE,
            where=gp_where,
            locate=locate,
            parent=agent,
            depth=depth + 1,
        ):
            if gp.model is not None:
                found.models = _models_of(gp.model, (*gp_where, "model"), locate)
                found.context_window = gp.model.context_window
            yield found
