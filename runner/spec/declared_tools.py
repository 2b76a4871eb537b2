"""Tools declared in YAML, without Python: HTTP endpoints (`http:`), the operations of an OpenAPI
document (`openapi:`) and commands with typed arguments (`script:`).

Arguments a model gives never reach a shell: a script's values are substituted into elements of
its `command` list (and its `env`), each value staying one argument; an HTTP tool's values are
percent-encoded into the URL path, sent as query parameters, headers or a JSON body. Secrets go
in through `${VAR}` (headers, `env`), and `agentctl inspect` shows header values as `***`.
"""

import re
from typing import Any, Literal, Self

from pydantic import Field, PrivateAttr, model_validator

from runner.spec.base import SpecModel

ArgType = Literal["string", "integer", "number", "boolean"]
HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
ToolName = str

_TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"
MAX_RESPONSE_BYTES = 1_000_000
"""The default `max_response_bytes` of `http:` and `openapi:` tools (1 MB)."""
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|\{|\}")
"""`{name}` is an argument; `{{` and `}}` are literal braces; a lone brace is a mistake."""


def placeholders(template: str) -> tuple[list[str], str | None]:
    """The argument names a template uses, in order, and the first problem (a lone brace)."""
    names: list[str] = []
    for match in PLACEHOLDER.finditer(template):
        text = match.group(0)
        if match.group(1):
            names.append(match.group(1))
        elif text in ("{", "}"):
            return names, (
                f"a lone {text!r} in {template!r}: write `{{name}}` for an argument, "
                f"`{text * 2}` for a literal brace"
            )
    return names, None


def fill(template: str, values: dict[str, str]) -> str:
    """`template` with each `{name}` replaced by its value (text) and `{{`/`}}` unescaped."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name:
            return values[name]
        return match.group(0)[0]

    return PLACEHOLDER.sub(replace, template)


class ToolArg(SpecModel):
    """One argument of a declared tool, as the model sees it in the tool's schema."""

    type: ArgType = "string"
    """`string`, `integer`, `number` or `boolean`."""
    description: str | None = None
    """What the model should pass (shown to it in the tool's schema)."""
    enum: list[str | int | float] | None = Field(default=None, min_length=1)
    """The only values allowed."""
    default: str | int | float | bool | None = None
    """The value used when the model leaves the argument out; an argument with a default is
    optional, one without is required."""
    allow_leading_dash: bool = False
    """Script tools only: accept a value starting with `-`. Off by default, so a value cannot be
    read as an option by the command (`--output=/etc/passwd`, `-rf`)."""

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.type}
        if self.description:
            schema["description"] = self.description
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        if self.default is not None:
            schema["default"] = self.default
        return schema


class _Declared(SpecModel):
    name: ToolName = Field(pattern=_TOOL_NAME)
    """The tool's name (what the model calls)."""
    description: str = Field(min_length=1)
    """What the tool does, for the model."""
    args: dict[str, ToolArg] = Field(default_factory=dict)
    """The tool's arguments by name: `{path: {type: string, description: ...}}`."""
    timeout: float = Field(default=30, gt=0)
    """Seconds before a call fails."""

    def args_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments."""
        return {
            "type": "object",
            "properties": {name: arg.json_schema() for name, arg in self.args.items()},
            "required": [name for name, arg in self.args.items() if arg.default is None],
            "additionalProperties": False,
        }


class HttpToolSpec(_Declared):
    """One HTTP endpoint as a tool: `{name, description, method, url, args, headers, body}`."""

    method: HttpMethod = "GET"
    """The HTTP method."""
    url: str = Field(min_length=1)
    """The URL, with `{arg}` placeholders in its path (percent-encoded):
    `https://api.example.com/issues/{number}`. Arguments not in the URL or `body` are sent as
    query parameters (GET, HEAD, DELETE) or as the JSON body's fields (other methods)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Request headers; secrets through `${VAR}` (`inspect` shows `***`)."""
    body: list[str] | None = None
    """The arguments that make the JSON body (default: every argument not in the URL, for
    POST, PUT and PATCH)."""
    timeout: float = Field(default=30, gt=0)
    """Seconds the whole call may take, the response's body included (a deadline, not an idle
    timeout)."""
    max_response_bytes: int = Field(default=MAX_RESPONSE_BYTES, gt=0)
    """Bytes of the response's body read at most; a longer body is cut there and the model is
    told so."""

    @model_validator(mode="after")
    def _placeholders(self) -> Self:
        used, problem = placeholders(self.url)
        if problem:
            raise ValueError(f"url: {problem}")
        unknown = [n for n in used if n not in self.args]
        if unknown:
            raise ValueError(
                f"url: {{{unknown[0]}}} names no argument; declare it under `args:`"
                + (f" (its arguments: {', '.join(self.args)})" if self.args else "")
            )
        for name in self.body or ():
            if name not in self.args:
                raise ValueError(f"body: {name!r} names no argument under `args:`")
            if name in used:
                raise ValueError(f"body: {name!r} is in the URL already")
        return self


class HttpTool(SpecModel):
    """A single HTTP endpoint as a tool."""

    http: HttpToolSpec
    """`{name, description, method, url, args, headers, body, timeout, max_response_bytes}`."""


class OpenApiSpec(SpecModel):
    """Tools made from an OpenAPI 3.x document: one per listed operation, named by its
    `operationId`, with arguments from its path, query and header parameters and its JSON
    request body (local `$ref`s resolved)."""

    spec: str = Field(min_length=1)
    """The OpenAPI document (YAML or JSON), relative to this spec file."""
    operations: list[str] = Field(min_length=1)
    """The `operationId`s to offer as tools."""
    base_url: str | None = None
    """The API's address; default: the document's first `servers` URL."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Headers sent with every call, e.g. `Authorization: Bearer ${TOKEN}` (`inspect` shows
    `***`)."""
    timeout: float = Field(default=30, gt=0)
    """Seconds each call may take, the response's body included (a deadline, not an idle
    timeout)."""
    max_response_bytes: int = Field(default=MAX_RESPONSE_BYTES, gt=0)
    """Bytes of a response's body read at most; a longer body is cut there and the model is
    told so."""
    _operations: dict[str, Any] = PrivateAttr(default_factory=dict)
    """The listed operations as the loader read them (`runner.load.openapi.Operation` by id)."""
    _servers: list[str] = PrivateAttr(default_factory=list)


class OpenApiTool(SpecModel):
    """The operations of an OpenAPI document as tools."""

    openapi: OpenApiSpec
    """`{spec, operations, base_url, headers, timeout, max_response_bytes}`."""


class ScriptToolSpec(_Declared):
    """A command with typed arguments: `{name, description, command: [pytest, -q, "{path}"],
    args, timeout, env}`. It runs through the agent backend's `execute` (so in its sandbox, with
    its output cap), as an argument list: no shell reads it."""

    command: list[str] = Field(min_length=1)
    """The program and its arguments; `{arg}` in an element is replaced by the argument's value,
    which stays inside that one element whatever it contains (spaces, `;`, `$(...)`, quotes,
    newlines)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the command; `{arg}` placeholders allowed in values."""
    timeout: float = Field(default=120, gt=0)
    """Seconds before the command is killed (the backend's `max_timeout` still caps it)."""

    @model_validator(mode="after")
    def _placeholders(self) -> Self:
        used: set[str] = set()
        templates = [(f"command[{i}]", t) for i, t in enumerate(self.command)]
        templates += [(f"env.{k}", v) for k, v in self.env.items()]
        for where, template in templates:
            names, problem = placeholders(template)
            if problem:
                raise ValueError(f"{where}: {problem}")
            for name in names:
                if name not in self.args:
                    known = f" (its arguments: {', '.join(self.args)})" if self.args else ""
                    raise ValueError(
                        f"{where}: {{{name}}} names no argument; declare it under `args:`{known}"
                    )
            used.update(names)
        unused = [name for name in self.args if name not in used]
        if unused:
            raise ValueError(
                f"args: {unused[0]!r} is used nowhere: put `{{{unused[0]}}}` in `command` or `env`"
            )
        if names := placeholders(self.command[0])[0]:
            raise ValueError(
                f"command[0]: the program cannot come from an argument ({{{names[0]}}})"
            )
        return self


class ScriptTool(SpecModel):
    """A command with typed arguments as a tool."""

    script: ScriptToolSpec
    """`{name, description, command, args, timeout, env}`."""
