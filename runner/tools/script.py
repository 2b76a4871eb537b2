"""`script:` tools: a command with typed arguments, run through the agent backend's `execute`.

No injection, by construction: the command is an argument list (`[pytest, -q, "{path}"]`) and a
value replaces its placeholder inside one element, so it is always one argument of the program,
whatever it holds (`; rm -rf /`, `$(...)`, backticks, quotes, newlines): no shell ever reads it.
The backend runs the list as it is (`execute_argv`: bubblewrap gets it after `--` and execs it;
without a sandbox, `subprocess` execs it), in the same sandbox, with the same output cap, clean
environment and clean-up as `execute`; the timeout is the tool's, capped by the backend's
`max_timeout`.

Option injection: a value starting with `-` could still be read as an option by the program
(`--output=/etc/passwd`). Such a value is refused unless its argument sets
`allow_leading_dash: true`; an author who needs free values can also put `--` in `command`
before the placeholder, for programs that know it. NUL characters cannot be in an argument and
are refused too. The program itself (`command[0]`) cannot come from an argument.

Values are checked against the arguments' schema (`type`, `enum`) by the check every declared
tool shares (`runner.tools.arguments`), after the arguments model has read them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from langchain.tools import ToolRuntime
from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, ConfigDict, Field, create_model

from runner.backends.protocol import BackendError, argv_runner
from runner.spec.declared_tools import ScriptToolSpec, ToolArg, fill
from runner.tools.arguments import ArgumentCheck

if TYPE_CHECKING:
    from runner.backends import BackendProvider

__all__ = ["argument_text", "script_argv", "script_tool"]

_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}


def argument_text(name: str, value: Any, arg: ToolArg) -> str:
    """A value as the text that goes into the command; a ToolException for a value that could
    be read as an option, or that no argument can hold."""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    if "\0" in text:
        raise ToolException(f"Error: argument {name!r} contains a NUL character")
    if text.startswith("-") and not arg.allow_leading_dash:
        raise ToolException(
            f"Error: argument {name!r} starts with '-' ({text[:40]!r}), which the command could "
            "read as an option; give a value that does not start with '-'"
        )
    return text


def script_argv(spec: ScriptToolSpec, given: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The command line and the extra environment for one call."""
    values: dict[str, str] = {}
    for name, arg in spec.args.items():
        value = given.get(name, arg.default)
        if value is None:
            raise ToolException(f"Error: missing argument {name!r}")
        values[name] = argument_text(name, value, arg)
    argv = [fill(element, values) for element in spec.command]
    env = {key: fill(template, values) for key, template in spec.env.items()}
    return argv, env


def _args_model(spec: ScriptToolSpec) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, arg in spec.args.items():
        kind: Any = _TYPES[arg.type]
        if arg.enum is not None:
            kind = Literal[tuple(arg.enum)]
        default = ... if arg.default is None else arg.default
        fields[name] = (kind, Field(default, description=arg.description))
    fields["runtime"] = (ToolRuntime, Field(exclude=True))
    model_name = "".join(part.capitalize() for part in spec.name.replace("-", "_").split("_"))
    config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    return create_model(model_name or "ScriptArgs", __config__=config, **fields)


def script_tool(spec: ScriptToolSpec, provider: BackendProvider) -> StructuredTool:
    """The tool for one `script:` entry, running on the backend `provider` gives the thread."""
    from runner.middleware.filesystem import execution_report

    check = ArgumentCheck(spec.args_schema())

    def run(runtime: ToolRuntime, **given: Any) -> str:
        check.check(given)
        argv, env = script_argv(spec, given)
        try:
            backend = argv_runner(provider.get(runtime.state, runtime.store))
            return execution_report(backend.execute_argv(argv, spec.timeout, env))
        except (BackendError, OSError) as exc:
            raise ToolException(f"Error: {exc}") from None

    async def arun(runtime: ToolRuntime, **given: Any) -> str:
        check.check(given)
        argv, env = script_argv(spec, given)
        try:
            backend = argv_runner(await provider.aget(runtime.state, runtime.store))
            return execution_report(await backend.aexecute_argv(argv, spec.timeout, env))
        except (BackendError, OSError) as exc:
            raise ToolException(f"Error: {exc}") from None

    return StructuredTool(
        name=spec.name,
        description=spec.description,
        args_schema=_args_model(spec),
        func=run,
        coroutine=arun,
        handle_tool_error=True,
    )
