"""The `composite` backend: a default backend plus routes that mount other backends on prefixes.

`/memories/notes.md` with a route `/memories/` goes to that route's backend as `/notes.md`; the
longest matching prefix wins, and everything else goes to the default backend. The agent never
sees the inner paths: every result and every error message has the prefix restored, including the
keys of `files_update`, so a state backend mounted on a route keeps its files in the shared `files`
state under their full paths.

A route hides whatever the backend outside it holds at the same place: `ls /` lists each route as
a directory, and `glob`/`grep` over a directory search the backend that owns it plus every route
mounted below it (concurrently in the async twins). `execute` always runs on the default backend,
which is why `can_execute` looks only at that one.

Every operation is planned once as a list of inner calls plus a function that combines their
outcomes, and run by a sync or an async driver, so the routing rules are written once for both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

from runner.backends.paths import (
    compile_glob,
    file_filter,
    is_within,
    join_path,
    normalize_glob,
    relative_to,
    validate_path,
)
from runner.backends.protocol import (
    Backend,
    BackendError,
    EditResult,
    ExecuteResult,
    FileData,
    FileInfo,
    GrepMatch,
    ReadResult,
    SandboxBackend,
    WriteResult,
    argv_runner,
)
from runner.backends.text import check_grep_pattern, grep_regex

__all__ = ["CompositeBackend", "can_execute"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class _Call:
    """One call to an inner backend; errors from it are re-rooted under `prefix`."""

    prefix: str
    backend: Backend
    method: str
    args: tuple[Any, ...]


Outcome = Any  # an inner result, or the BackendError the call raised
_Plan = tuple[list[_Call], Callable[[list[Outcome]], _T]]


def _ok(outcome: Outcome) -> Any:
    if isinstance(outcome, BackendError):
        raise outcome
    return outcome


def _rerooted_update(
    prefix: str, update: dict[str, FileData | None] | None
) -> dict[str, FileData | None] | None:
    if update is None:
        return None
    return {join_path(prefix, path): data for path, data in update.items()}


class CompositeBackend:
    """`default` for paths no route claims; `routes` maps prefixes (`/memories/`) to backends."""

    def __init__(self, default: Backend, routes: Mapping[str, Backend] | None = None) -> None:
        self.default = default
        self.routes: dict[str, Backend] = {}
        for prefix, backend in (routes or {}).items():
            normal = validate_path(prefix)
            if normal == "/":
                raise ValueError("a route cannot be '/': that is the default backend")
            self.routes[normal] = backend
        self._longest_first = sorted(self.routes, key=len, reverse=True)

    def __repr__(self) -> str:
        routes = ", ".join(f"{prefix}/: {backend!r}" for prefix, backend in self.routes.items())
        return f"CompositeBackend(default={self.default!r}, routes={{{routes}}})"

    def _owner(self, path: str) -> str:
        """The prefix of the route owning `path`, or `/` for the default backend."""
        for prefix in self._longest_first:
            if is_within(path, prefix):
                return prefix
        return "/"

    def _backend(self, prefix: str) -> Backend:
        return self.default if prefix == "/" else self.routes[prefix]

    def _locate(self, path: str) -> tuple[str, Backend, str]:
        """(route prefix, backend, inner path) for a normal path."""
        prefix = self._owner(path)
        inner = path if prefix == "/" else "/" + relative_to(path, prefix)
        return prefix, self._backend(prefix), inner

    def backend_for(self, path: str) -> tuple[Backend, str]:
        """The backend that holds the normal path `path`, and the path it knows it by."""
        _, backend, inner = self._locate(path)
        return backend, inner

    def _routes_below(self, directory: str) -> list[str]:
        return sorted(r for r in self.routes if r != directory and is_within(r, directory))

    # Drivers.

    @staticmethod
    def _capture(call: _Call) -> Outcome:
        try:
            return getattr(call.backend, call.method)(*call.args)
        except BackendError as exc:
            return exc.rerooted(call.prefix)

    @staticmethod
    async def _acapture(call: _Call) -> Outcome:
        try:
            return await getattr(call.backend, "a" + call.method)(*call.args)
        except BackendError as exc:
            return exc.rerooted(call.prefix)

    def _sync(self, plan: _Plan[_T]) -> _T:
        calls, combine = plan
        return combine([self._capture(call) for call in calls])

    async def _async(self, plan: _Plan[_T]) -> _T:
        calls, combine = plan
        return combine(list(await asyncio.gather(*(self._acapture(call) for call in calls))))

    # Plans.

    def _plan_ls(self, path: str) -> _Plan[list[FileInfo]]:
        path = validate_path(path)
        prefix, backend, inner = self._locate(path)
        call = _Call(prefix, backend, "ls", (inner,))

        def combine(outcomes: list[Outcome]) -> list[FileInfo]:
            mounted = {
                join_path(path, relative_to(route, path).split("/")[0])
                for route in self._routes_below(path)
            }
            if isinstance(outcomes[0], BackendError) and not mounted:
                raise outcomes[0]
            listed = [] if isinstance(outcomes[0], BackendError) else outcomes[0]
            entries: dict[str, FileInfo] = {}
            for info in listed:
                outer = replace(info, path=join_path(call.prefix, info.path))
                if self._owner(outer.path) == call.prefix:
                    entries[outer.path] = outer
            for directory in mounted:
                if not entries.get(directory, FileInfo(directory, False)).is_dir:
                    entries[directory] = FileInfo(directory, True)
            return [entries[key] for key in sorted(entries)]

        return [call], combine

    def _plan_single(self, path: str, method: str, *args: Any) -> _Plan[Any]:
        prefix, backend, inner = self._locate(validate_path(path))
        return [_Call(prefix, backend, method, (inner, *args))], lambda outcomes: _ok(outcomes[0])

    def _plan_write(self, path: str, content: str) -> _Plan[WriteResult]:
        calls, _ = self._plan_single(path, "write", content)
        prefix = calls[0].prefix

        def combine(outcomes: list[Outcome]) -> WriteResult:
            result: WriteResult = _ok(outcomes[0])
            return WriteResult(
                join_path(prefix, result.path), _rerooted_update(prefix, result.files_update)
            )

        return calls, combine

    def _plan_edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool
    ) -> _Plan[EditResult]:
        calls, _ = self._plan_single(path, "edit", old_string, new_string, replace_all)
        prefix = calls[0].prefix

        def combine(outcomes: list[Outcome]) -> EditResult:
            result: EditResult = _ok(outcomes[0])
            return EditResult(
                join_path(prefix, result.path),
                result.occurrences,
                _rerooted_update(prefix, result.files_update),
            )

        return calls, combine

    def _plan_search(
        self,
        base: str,
        owner_call: _Call,
        route_call: Callable[[str], _Call | None],
        keep: Callable[[str], bool],
    ) -> _Plan[list[Any]]:
        """The owner of `base` plus every route mounted below it; `keep(outer_path)` filters
        what a route returned for its whole tree."""
        calls = [owner_call]
        for route in self._routes_below(base):
            call = route_call(route)
            if call is not None:
                calls.append(call)

        def combine(outcomes: list[Outcome]) -> list[Any]:
            if isinstance(outcomes[0], BackendError) and len(calls) == 1:
                raise outcomes[0]
            found: list[Any] = []
            for index, (call, outcome) in enumerate(zip(calls, outcomes, strict=True)):
                if index and isinstance(outcome, BackendError):
                    raise outcome
                for item in [] if isinstance(outcome, BackendError) else outcome:
                    outer = replace(item, path=join_path(call.prefix, item.path))
                    if self._owner(outer.path) == call.prefix and (index == 0 or keep(outer.path)):
                        found.append(outer)
            return found

        return calls, combine

    def _plan_glob(self, pattern: str, path: str) -> _Plan[list[FileInfo]]:
        base, relative_pattern, within = normalize_glob(pattern, path)
        matcher = compile_glob(relative_pattern)

        def route_call(route: str) -> _Call | None:
            if not matcher.may_match_under(relative_to(route, base)):
                return None
            return _Call(route, self.routes[route], "glob", ("**", "/"))

        prefix, backend, inner = self._locate(base)
        calls, combine = self._plan_search(
            base,
            _Call(prefix, backend, "glob", (relative_pattern, inner)),
            route_call,
            lambda outer: matcher.matches(relative_to(outer, base)),
        )

        def combine_within(outcomes: list[Outcome]) -> list[FileInfo]:
            found = [info for info in combine(outcomes) if is_within(info.path, within)]
            return sorted(found, key=lambda info: info.path)

        return calls, combine_within

    def _plan_grep(
        self, pattern: str, path: str | None, glob: str | None, regex: bool = False
    ) -> _Plan[list[GrepMatch]]:
        check_grep_pattern(pattern)
        if regex:
            grep_regex(pattern)  # an invalid one is refused once, not once per route
        base = validate_path(path or "/")
        accept = file_filter(glob)
        # A glob without '/' matches file names at any depth, so a route can apply it itself.
        route_glob = glob if glob is not None and "/" not in glob else None
        prefix, backend, inner = self._locate(base)
        calls, combine = self._plan_search(
            base,
            _Call(prefix, backend, "grep", (pattern, inner, glob, regex)),
            lambda route: _Call(
                route, self.routes[route], "grep", (pattern, "/", route_glob, regex)
            ),
            lambda outer: accept(relative_to(outer, base)),
        )

        def combine_sorted(outcomes: list[Outcome]) -> list[GrepMatch]:
            return sorted(combine(outcomes), key=lambda match: (match.path, match.line))

        return calls, combine_sorted

    def _sandbox(self) -> SandboxBackend:
        if not can_execute(self.default):
            raise BackendError(
                "Command execution is not available: this agent's default backend cannot run "
                "commands"
            )
        return cast(SandboxBackend, self.default)

    # The protocol.

    def ls(self, path: str) -> list[FileInfo]:
        return self._sync(self._plan_ls(path))

    async def als(self, path: str) -> list[FileInfo]:
        return await self._async(self._plan_ls(path))

    def read(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        result: ReadResult = self._sync(self._plan_single(path, "read", offset, limit))
        return result

    async def aread(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        result: ReadResult = await self._async(self._plan_single(path, "read", offset, limit))
        return result

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        result: bytes = self._sync(self._plan_single(path, "read_bytes", max_bytes))
        return result

    async def aread_bytes(self, path: str, max_bytes: int) -> bytes:
        result: bytes = await self._async(self._plan_single(path, "read_bytes", max_bytes))
        return result

    def write(self, path: str, content: str) -> WriteResult:
        return self._sync(self._plan_write(path, content))

    def write_bytes(self, path: str, data: bytes) -> WriteResult:
        """A binary file the caller puts there (an attachment), on the route that owns `path`,
        when that backend can hold one."""
        prefix, backend, inner = self._locate(validate_path(path))
        writer = getattr(backend, "write_bytes", None)
        if writer is None:
            raise BackendError("{0} is on a route that cannot hold files put there", path)
        result: WriteResult = writer(inner, data)
        return WriteResult(
            join_path(prefix, result.path), _rerooted_update(prefix, result.files_update)
        )

    async def awrite(self, path: str, content: str) -> WriteResult:
        return await self._async(self._plan_write(path, content))

    def edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        return self._sync(self._plan_edit(path, old_string, new_string, replace_all))

    async def aedit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        return await self._async(self._plan_edit(path, old_string, new_string, replace_all))

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        return self._sync(self._plan_glob(pattern, path))

    async def aglob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        return await self._async(self._plan_glob(pattern, path))

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]:
        return self._sync(self._plan_grep(pattern, path, glob, regex))

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]:
        return await self._async(self._plan_grep(pattern, path, glob, regex))

    def execute(self, command: str, timeout: float | None = None) -> ExecuteResult:
        return self._sandbox().execute(command, timeout)

    async def aexecute(self, command: str, timeout: float | None = None) -> ExecuteResult:
        return await self._sandbox().aexecute(command, timeout)

    def execute_argv(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecuteResult:
        return argv_runner(self._sandbox()).execute_argv(argv, timeout, env)

    async def aexecute_argv(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecuteResult:
        return await argv_runner(self._sandbox()).aexecute_argv(argv, timeout, env)


def can_execute(backend: Backend) -> bool:
    """Whether `execute` may be offered with this backend: decided by type, never by a flag.

    A composite backend sends commands to its default backend, so it can execute exactly when
    that one can, whatever its routes are.
    """
    if isinstance(backend, CompositeBackend):
        return can_execute(backend.default)
    return isinstance(backend, SandboxBackend)
