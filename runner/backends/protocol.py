"""The contract every file backend keeps, so the file tools work the same on any of them.

The tools (`ls`, `read_file`, `write_file`, `edit_file`, `glob`, `grep`, `execute`) only ever see
this module: a small `Backend` protocol with sync methods and `a`-prefixed async twins, plain result
dataclasses, and one exception type whose text is written for the agent. Whether a backend can run
commands is decided by its type (`SandboxBackend`), never by a flag a caller could get wrong.

```
Exception
  BackendError     the agent made a request the backend refuses: the message says why and what to do
    PathError      the path itself is unacceptable (traversal, ~, Windows syntax, outside the root)
```

A `BackendError` is not a bug and not a `RunnerError`: the tool layer returns `f"Error: {exc}"` to
the model, which reads it and tries again. Anything else raised by a backend is a real failure.

Backends of your own (a remote sandbox: Daytona, Modal, E2B, ...) plug in without a change to
agentctl: `backend: {import: my_pkg.sandboxes:make, args: {...}}` in the YAML (a factory called
with `args`, or the backend object itself), or `runner.build_agent(spec, backend=obj)`. The object
must have every method of `Backend` (sync and async; `grep` takes `regex`), and `execute` /
`aexecute` too (`SandboxBackend`) for the agent to get the `execute` tool; this is checked when
the agent is built, with an error naming what is missing. `runner.backends.base.SyncBackend`
gives the async twins of sync methods. The object is used for every call of every thread, so a
per-thread sandbox is the object's own business (keyed by `runner.backends.current_thread_id()`).
Paths arrive validated (absolute, normalised, no `..`); results are the dataclasses below;
`ExecuteResult.full_output` may carry the whole output of a command whose `output` was cut.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, Protocol, Self, TypedDict, runtime_checkable

__all__ = [
    "ArgvRunner",
    "Backend",
    "BackendError",
    "EditResult",
    "ExecuteResult",
    "FileData",
    "FileInfo",
    "GrepMatch",
    "PathError",
    "ReadResult",
    "SandboxBackend",
    "WriteResult",
    "argv_runner",
    "quote_path",
    "too_large",
]


def quote_path(path: str) -> str:
    """A path as it appears in messages: in single quotes, escaped only when not printable."""
    return f"'{path}'" if path.isprintable() else repr(path)


class BackendError(Exception):
    """A refusal the agent should read: `str()` is one complete sentence, never starting "Error".

    When the message names agent paths, it is a `str.format` template whose `{0}`, `{1}`... are
    those `paths`, so a composite backend can report the paths the agent used (with the route
    prefix restored) instead of the stripped ones its inner backend saw: see `rerooted`. Without
    paths the message is used as it is, braces and all.
    """

    def __init__(self, template: str, *paths: str) -> None:
        self.template = template
        self.paths = paths
        super().__init__(template.format(*map(quote_path, paths)) if paths else template)

    def __reduce__(self) -> tuple[type[Self], tuple[str, ...]]:
        return type(self), (self.template, *self.paths)

    def rerooted(self, prefix: str) -> Self:
        """The same error with every absolute path it names moved under `prefix` (`/memories`)."""
        moved = tuple(
            ((prefix.rstrip("/") + path).rstrip("/") or "/") if path.startswith("/") else path
            for path in self.paths
        )
        return type(self)(self.template, *moved)


def too_large(path: str, size: int, limit: int) -> BackendError:
    """The refusal of `read_bytes` for the file `path` of `size` bytes, over `limit`."""
    return BackendError(
        f"{{0}} is {size:,} bytes, over the {limit:,}-byte limit for this read",
        path,
    )


FILE_NOT_FOUND = "File not found: {0}"
"""The template of the error for reading a path that holds no file; callers that treat a
missing file as normal (memory not created yet) compare `BackendError.template` with it."""


class PathError(BackendError):
    """The path is refused before any backend looks at it (or resolves outside the root)."""


class FileData(TypedDict):
    """One file as the state and store backends keep it: text plus ISO 8601 UTC timestamps.

    A binary file (an image put there by the caller) has `encoding: base64` and its bytes in
    `content` as base64; it is read with `read_bytes`, never as text. The file tools only write
    text (`encoding` absent, or `utf-8`).
    """

    content: str
    created_at: str
    modified_at: str
    encoding: NotRequired[Literal["utf-8", "base64"]]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """A directory entry or a glob hit; `modified_at` is ISO 8601 UTC when the backend knows it."""

    path: str
    is_dir: bool
    size: int | None = None
    modified_at: str | None = None


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """One line containing the searched text; `line` is 1-based, `text` has no line terminator."""

    path: str
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class ReadResult:
    """The selected lines joined with "\\n" (no line numbers), where they start, and the total."""

    content: str
    start_line: int
    total_lines: int


@dataclass(frozen=True, slots=True)
class WriteResult:
    """A created file; `files_update` is the state update for backends that live in graph state."""

    path: str
    files_update: dict[str, FileData | None] | None = None


@dataclass(frozen=True, slots=True)
class EditResult:
    """An edited file and how many occurrences were replaced."""

    path: str
    occurrences: int
    files_update: dict[str, FileData | None] | None = None


@dataclass(frozen=True, slots=True)
class ExecuteResult:
    """Merged stdout and stderr; `exit_code` is None when the command was killed on timeout.

    `output` is what the model is shown: when it is `truncated` (cut to the backend's output
    cap), `full_output` may hold the whole output (up to a larger cap), which the `execute` tool
    saves to a file the model can read; a backend that keeps no more leaves it None.
    """

    output: str
    exit_code: int | None
    truncated: bool
    full_output: str | None = None


@runtime_checkable
class Backend(Protocol):
    """Files addressed by absolute POSIX paths (`/dir/file.txt`).

    Every method raises `BackendError` for a request the agent can correct. `read` takes a 0-based
    line `offset` and a line `limit`; `read_bytes` returns a whole file as it is stored (images),
    refusing one over `max_bytes`; `write` only creates; `edit` replaces exact text; `glob`
    supports `**` and returns files sorted by path; `grep` searches LITERAL text line by line (a
    Python regular expression searched in each line when `regex` is true; an invalid one is a
    `BackendError`) and returns matches sorted by path, then line.
    """

    def ls(self, path: str) -> list[FileInfo]: ...

    def read(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult: ...

    def read_bytes(self, path: str, max_bytes: int) -> bytes: ...

    def write(self, path: str, content: str) -> WriteResult: ...

    def edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult: ...

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]: ...

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]: ...

    async def als(self, path: str) -> list[FileInfo]: ...

    async def aread(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult: ...

    async def aread_bytes(self, path: str, max_bytes: int) -> bytes: ...

    async def awrite(self, path: str, content: str) -> WriteResult: ...

    async def aedit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult: ...

    async def aglob(self, pattern: str, path: str = "/") -> list[FileInfo]: ...

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]: ...


@runtime_checkable
class SandboxBackend(Backend, Protocol):
    """A backend that can also run shell commands (`timeout` in seconds; None: its default)."""

    def execute(self, command: str, timeout: float | None = None) -> ExecuteResult: ...

    async def aexecute(self, command: str, timeout: float | None = None) -> ExecuteResult: ...


@runtime_checkable
class ArgvRunner(Protocol):
    """A backend that runs an argument list as it is, no shell in between (what `script:` tools
    need: a model's values stay single arguments, so nothing in them is shell syntax)."""

    def execute_argv(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecuteResult: ...

    async def aexecute_argv(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecuteResult: ...


def argv_runner(backend: Any) -> ArgvRunner:
    """`backend` as an `ArgvRunner`, or a BackendError saying it cannot run commands so."""
    if isinstance(backend, ArgvRunner):
        return backend
    raise BackendError(
        "this backend cannot run a command as an argument list (script tools need `local_shell`)"
    )
