"""The `backend:` key: where the agent's files live, discriminated on `kind`.

`state` keeps files in the thread's graph state (the default); `filesystem` is a real directory;
`store` is a LangGraph store that outlives threads; `local_shell` is a directory plus an `execute`
tool; `composite` routes path prefixes to other backends; `import` is a backend of the user's own (a
remote sandbox: Daytona, Modal, E2B, ...) made by a Python factory. The short form
`backend: state` equals `backend: {kind: state}`, and `backend: {import: pkg.mod:make}` equals
`backend: {kind: import, import: pkg.mod:make}`.
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from runner.spec.base import ImportRef, SpecModel, empty_list, shorthand


class StateBackendSpec(SpecModel):
    """Files in the thread's graph state: private to the thread, saved with its checkpoints."""

    kind: Literal["state"]
    """Files in the thread's graph state: they live and die with the thread."""


class FilesystemBackendSpec(SpecModel):
    """A real directory on the host."""

    kind: Literal["filesystem"]
    """Files in a folder on the host (`root_dir`)."""
    root_dir: str
    """The directory (relative to this spec file); created when missing. `{thread_id}` in it
    gives each thread its own folder."""
    virtual_mode: bool = True
    """Confine every agent path to `root_dir`: the agent sees `/` as `root_dir`, and `..`, `~`,
    drive letters and symlinks leading outside are refused. Turn off only for trusted agents."""
    max_file_size_mb: float = Field(default=10, gt=0)
    """Files larger than this are not read or searched."""


class StoreBackendSpec(SpecModel):
    """Files in a LangGraph store, under a namespace: they outlive the thread (long-term memory)."""

    kind: Literal["store"]
    """Files in the LangGraph store: they outlive the thread."""
    namespace: list[str] = Field(default_factory=lambda: ["files"], min_length=1)
    """The store namespace, e.g. `[memories]`."""


class LocalShellBackendSpec(SpecModel):
    """A real directory plus an `execute` tool that runs shell commands in it.

    Commands run in an OS sandbox when the machine has one (`sandbox`): only `root_dir` is
    writable, agentctl's process and environment are hidden, there is no network. The environment
    is clean (PATH, HOME, LANG and a few more) unless `inherit_env` or `env` add variables, so API
    keys in the runner's environment do not leak into commands."""

    kind: Literal["local_shell"]
    """A host folder, plus `execute` to run shell commands in it."""
    root_dir: str
    """The directory (relative to this spec file) where files live and commands run.
    `{thread_id}` in it gives each thread its own folder."""
    virtual_mode: bool = True
    """Confine file tool paths to `root_dir` (commands are confined by `sandbox`)."""
    max_file_size_mb: float = Field(default=10, gt=0)
    """Files larger than this are not read or searched."""
    timeout: float = Field(default=120, gt=0)
    """Seconds before a command and every process it started are killed, unless the call sets
    its own."""
    max_timeout: float = Field(default=3600, gt=0)
    """The longest `timeout` one `execute` call may ask for; longer requests get this."""
    max_output_bytes: int = Field(default=100_000, gt=0)
    """The most output the agent is shown of one command: longer output shows its first and
    last halves of this, and is flagged as truncated."""
    max_saved_output_bytes: int = Field(default=10_000_000, gt=0)
    """The most output of one command kept to be saved under `/large_tool_results/` when the
    shown part is cut (head and tail again beyond this)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables added to the commands' environment."""
    inherit_env: bool = False
    """Pass the runner's whole environment to commands (API keys included)."""
    sandbox: Literal["auto", "bubblewrap", "none"] = "auto"
    """`auto`: bubblewrap when it works on this machine, else unsandboxed with a warning;
    `bubblewrap`: required (an error where it is missing); `none`: commands run on the host."""
    network: bool = False
    """Let sandboxed commands use the network (off by default)."""
    read_only_paths: list[str] = Field(default_factory=empty_list)
    """Host paths (relative to this spec file) sandboxed commands see read-only: one under the
    private /tmp or /run, or a part of `root_dir` to protect (like `.git`)."""
    writable_paths: list[str] = Field(default_factory=empty_list)
    """More host paths (relative to this spec file) sandboxed commands may change."""


class ImportBackendSpec(SpecModel):
    """A backend of your own, made by Python code: the way to plug a remote sandbox (Daytona,
    Modal, E2B, your own) without changing agentctl. It must implement the backend protocol
    (`runner.backends.protocol.Backend`; with `execute`, `SandboxBackend`): checked when the
    agent is built."""

    kind: Literal["import"]
    """A backend made by Python code (`import:`)."""
    import_: ImportRef = Field(alias="import")
    """`package.module:make` or `path/to/file.py:make` (relative to this spec file): a factory
    called with `args` that returns the backend, or a backend object itself."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments for the factory."""


LeafBackendSpec = Annotated[
    StateBackendSpec
    | FilesystemBackendSpec
    | StoreBackendSpec
    | LocalShellBackendSpec
    | ImportBackendSpec,
    Field(discriminator="kind"),
]


_kind_only = shorthand("kind", str, "a backend kind or a mapping with `kind`")


def _kind_shorthand(value: Any) -> Any:
    """`state` is `{kind: state}`; `{import: ...}` without `kind` is `{kind: import, ...}`."""
    if (
        isinstance(value, dict)
        and "kind" not in value
        and ("import" in value or "import_" in value)
    ):
        return {"kind": "import", **value}
    return _kind_only(value)


def _route_prefix(prefix: str) -> str:
    if prefix == "/":
        raise ValueError("route prefix '/' would take every path; that is what `default` is for")
    if not (prefix.startswith("/") and prefix.endswith("/")):
        raise ValueError(f"route prefix {prefix!r} must start and end with '/', like '/memories/'")
    if ".." in prefix.split("/"):
        raise ValueError(f"route prefix {prefix!r} must not contain '..'")
    return prefix


RoutePrefix = Annotated[str, AfterValidator(_route_prefix)]


class CompositeBackendSpec(SpecModel):
    """A default backend plus routes: a path under a route's prefix goes to that route's backend
    (the longest matching prefix wins). `execute` always runs on the default backend."""

    kind: Literal["composite"]
    """A `default` backend, with path prefixes routed to other backends."""
    default: Annotated[
        LeafBackendSpec,
        BeforeValidator(
            _kind_shorthand,
            json_schema_input_type=Literal["state", "store"] | LeafBackendSpec,
        ),
    ]
    """The backend for every path no route matches."""
    routes: dict[
        RoutePrefix,
        Annotated[
            LeafBackendSpec,
            BeforeValidator(
                _kind_shorthand,
                json_schema_input_type=Literal["state", "store"] | LeafBackendSpec,
            ),
        ],
    ] = Field(default_factory=dict)
    """Path prefix (like `/memories/`) to backend."""


BackendSpec = Annotated[
    StateBackendSpec
    | FilesystemBackendSpec
    | StoreBackendSpec
    | LocalShellBackendSpec
    | ImportBackendSpec
    | CompositeBackendSpec,
    Field(discriminator="kind"),
]

BackendInput = Annotated[
    BackendSpec,
    BeforeValidator(
        _kind_shorthand,
        json_schema_input_type=Literal["state", "store"] | BackendSpec,
    ),
]

BACKEND_KINDS = ("state", "filesystem", "store", "local_shell", "import", "composite")


def backend_leaves(
    backend: BackendSpec, at: tuple[str | int, ...]
) -> list[tuple[Any, tuple[str | int, ...]]]:
    """Each leaf backend of `backend` (itself, or a composite's default and routes) with its key
    path, given the key path `at` of `backend`."""
    if isinstance(backend, CompositeBackendSpec):
        return [(backend.default, (*at, "default"))] + [
            (route, (*at, "routes", prefix)) for prefix, route in backend.routes.items()
        ]
    return [(backend, at)]


def has_local_shell(backend: BackendSpec) -> bool:
    """Whether `backend` is a `local_shell`, or a composite with one among its routes: what the
    sandbox checks (`runner.backends.sandbox`) look at, so they are imported for it only."""
    return any(isinstance(leaf, LocalShellBackendSpec) for leaf, _ in backend_leaves(backend, ()))
