"""The `tools:` and `middleware:` keys: Python code by import reference, MCP servers, and the
tools declared in YAML (`openapi:`, `http:`, `script:`, see `runner.spec.declared_tools`).

A tools entry is `{import: ...}` or `{mcp: {...}}`; the string short form `- my_pkg.tools:search`
means `- import: my_pkg.tools:search`. Importing code named in a YAML file runs that code, exactly
as `python -c 'import my_pkg.tools'` would; nothing in the YAML can switch off a safety setting of
the runner.
"""

from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Discriminator, Field, Tag, model_validator

from runner.spec.base import ENTRY_ERROR, ImportRef, Name, SpecModel, empty_list, shorthand
from runner.spec.declared_tools import HttpTool, OpenApiTool, ScriptTool


class ImportTool(SpecModel):
    """Tools from Python: a LangChain `BaseTool`, a `@tool` function, a plain typed function (its
    docstring becomes the description), or a factory returning tools (called with `args`)."""

    import_: ImportRef = Field(alias="import")
    """`package.module:name` or `path/to/file.py:name` (relative to this spec file)."""
    args: dict[str, Any] | None = None
    """Keyword arguments: the target is a factory, called with them, returning a tool or a list."""
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """Rename the tool (what the model sees)."""
    description: str | None = None
    """Replace the tool's description."""
    return_direct: bool | None = None
    """End the agent's turn with this tool's result as the answer."""


McpTransport = Literal["stdio", "streamable_http", "sse"]


class McpToolSettings(SpecModel):
    """Settings for one tool of an MCP server."""

    description: str | None = None
    """Replace the tool's description."""
    return_direct: bool | None = None
    """End the agent's turn with this tool's result as the answer."""


class McpServer(SpecModel):
    """An MCP server whose tools the agent gets: a local process over stdio (`command`, `args`,
    `env`), or a remote one over streamable HTTP or SSE (`url`, `headers`)."""

    name: Name
    """The server's name, used in errors and as the tool-name prefix when `prefix: true`."""
    command: str | None = None
    """Program to start for a stdio server."""
    args: list[str] = Field(default_factory=empty_list)
    """Its arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the server process (use `${VAR}` for secrets)."""
    cwd: str | None = None
    """Working directory of the server process (relative to this spec file)."""
    url: str | None = None
    """Address of a remote server."""
    transport: McpTransport | None = None
    """`stdio` (the default with `command`), `streamable_http` (the default with `url`) or `sse`."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers for a remote server, e.g. `Authorization: Bearer ${TOKEN}`."""
    include: list[str] | None = None
    """Only these tools of the server (all when absent)."""
    exclude: list[str] = Field(default_factory=empty_list)
    """Leave these tools of the server out."""
    prefix: bool | str = False
    """Prefix tool names to avoid clashes: `true` gives `<name>_<tool>`, a string gives
    `<string><tool>`."""
    tools: dict[str, McpToolSettings] = Field(default_factory=dict)
    """Per-tool settings by the server's tool name: `{search: {description: ..., return_direct:
    true}}`. Approvals go under the agent's `interrupt_on`, by the final (prefixed) name."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds to wait for a tool call before it fails."""

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (stdio server) or `url` (remote)")
        if self.command is not None and self.transport not in (None, "stdio"):
            raise ValueError(f"transport {self.transport!r} needs `url`, not `command`")
        if self.url is not None and self.transport == "stdio":
            raise ValueError("transport 'stdio' needs `command`, not `url`")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("`args`, `env` and `cwd` apply to stdio servers only")
        if self.command is not None and self.headers:
            raise ValueError("`headers` apply to remote servers (`url`) only")
        return self

    @property
    def resolved_transport(self) -> McpTransport:
        if self.transport:
            return self.transport
        return "stdio" if self.command else "streamable_http"


class McpTool(SpecModel):
    """The tools of one MCP server."""

    mcp: McpServer
    """An MCP server whose tools the agent gets: stdio (`command`) or HTTP (`url`)."""


_KINDS = {
    "import": ImportTool,
    "mcp": McpTool,
    "openapi": OpenApiTool,
    "http": HttpTool,
    "script": ScriptTool,
}
"""A tool entry's kind by its key (the tag of the union below is `<key> tool`)."""


def _tool_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        if "import_" in value:
            return "import tool"
        return next((f"{key} tool" for key in _KINDS if key in value), None)
    return next((f"{key} tool" for key, cls in _KINDS.items() if isinstance(value, cls)), None)


_ENTRY_KEYS = "`import:`, `mcp:`, `openapi:`, `http:` or `script:`"
_tool_shorthand = shorthand("import", str, f"an import reference or a mapping with {_ENTRY_KEYS}")


ToolEntry = Annotated[
    Annotated[ImportTool, Tag("import tool")]
    | Annotated[McpTool, Tag("mcp tool")]
    | Annotated[OpenApiTool, Tag("openapi tool")]
    | Annotated[HttpTool, Tag("http tool")]
    | Annotated[ScriptTool, Tag("script tool")],
    Discriminator(
        _tool_kind,
        custom_error_type=ENTRY_ERROR,
        custom_error_message=f"a tool entry needs {_ENTRY_KEYS}",
    ),
    BeforeValidator(
        _tool_shorthand,
        json_schema_input_type=str | ImportTool | McpTool | OpenApiTool | HttpTool | ScriptTool,
    ),
]


class MiddlewareRef(SpecModel):
    """Extra LangChain middleware, inserted after the subagent middleware (see the harness's
    chain): an `AgentMiddleware` subclass or factory called with `args`, or an instance."""

    import_: ImportRef = Field(alias="import")
    """`package.module:Name` or `path/to/file.py:Name` (relative to this spec file)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments for the class or factory."""
