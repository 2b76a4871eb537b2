"""MCP servers as tools: started once per build, served by a loop of their own, closed on exit.

Why a loop thread: an MCP client session is an asyncio object bound to the loop (and, through
anyio's cancel scopes, to the task) that opened it. agentctl drives graphs synchronously, LangGraph
runs sync tools in a thread pool, and library users may call `ainvoke` from their own loop. So one
`McpServers` per build owns a daemon thread running an asyncio loop, and every session of that
build lives there: each server is one task that opens the transport, initializes the session,
lists the tools, and then waits to be told to stop. Each tool has a sync `func` and an async
`coroutine`; both hand the call to that loop (`run_coroutine_threadsafe`) and wait for the answer,
so any caller on any thread or loop talks to the one long-lived session. The langchain-mcp-adapters
tools do the MCP-to-LangChain conversion (content blocks, structured content, `isError`); their
default mode of one session per call is never used.

Lifecycle: `McpServers.start` starts a server when the resolver meets it (a server listed twice
with the same settings starts once) and blocks until its tools are listed or it failed.
`McpServers.close` stops every server (stdio: stdin closed, then SIGTERM, then SIGKILL to its
process group) and joins the thread; it is idempotent and also runs at interpreter exit.

stdio servers run through a small transport here rather than `mcp.client.stdio`, because a run
needs what that one hides: the process's exit code (for "it exited with code 1") and its stderr
(captured to a temporary file, so server logs do not mix with agentctl's output, and its last line
explains a failed start).

Failures: a server that cannot start is a `McpStartError` (the resolver locates it in the spec);
a server that dies mid-run, a call that times out, and an error reported by the server all reach
the model as an error ToolMessage, and the run goes on.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import difflib
import os
import signal
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from runner.errors import Problem, ResolutionError
from runner.spec import McpServer

if TYPE_CHECKING:
    from anyio.abc import Process
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from mcp import ClientSession

__all__ = ["McpServers", "McpStartError", "tools_from_mcp"]

START_TIMEOUT = 30.0
"""Seconds a server has to start, answer the MCP handshake and list its tools."""
STOP_GRACE = 2.0
"""Seconds a stdio server has to exit after its stdin closes, and again after SIGTERM."""

T = TypeVar("T")
KeyPath = tuple[str | int, ...]
Locate = Callable[[KeyPath, str], Problem]
"""Locates a message at a key path relative to the entry's `mcp:` key."""


class McpStartError(Exception):
    """A server could not be started; the message is the reason, for "failed to start: ..."."""


def _require_extra(locate: Locate) -> None:
    try:
        import langchain_mcp_adapters.tools  # noqa: F401
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ResolutionError.at(
            locate(
                (),
                f"MCP servers need the mcp extra, which is not installed ({exc}): "
                "pip install 'agentctl[mcp]'",
            )
        ) from None


def tools_from_mcp(
    server: McpServer, locate: Locate, servers: Callable[[], McpServers]
) -> list[BaseTool]:
    """The tools of one `mcp:` entry, its server started (once) by `servers()`, filtered by
    `include` / `exclude` and renamed by `prefix`."""
    _require_extra(locate)
    try:
        running = servers().start(server)
    except McpStartError as exc:
        raise ResolutionError.at(
            locate((), f"MCP server {server.name!r} failed to start: {exc}")
        ) from None
    available = [t.name for t in running.tools]
    named: list[tuple[tuple[str | int, ...], str]] = [
        ((key, index), wanted)
        for key in ("include", "exclude")
        for index, wanted in enumerate(getattr(server, key) or ())
    ] + [(("tools", wanted), wanted) for wanted in server.tools]
    for where, wanted in named:
        if wanted not in available:
            close = difflib.get_close_matches(wanted, available, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            listing = ", ".join(available) or "no tools at all"
            raise ResolutionError.at(
                locate(
                    where,
                    f"MCP server {server.name!r} has no tool {wanted!r}; {hint}it has: {listing}",
                )
            )
    chosen = [
        t
        for t in running.tools
        if (server.include is None or t.name in server.include) and t.name not in server.exclude
    ]
    prefix = f"{server.name}_" if server.prefix is True else server.prefix or ""
    tools = []
    for t in chosen:
        tool = running.as_tool(t, name=prefix + t.name)
        settings = server.tools.get(t.name)
        if settings is not None:
            overrides = settings.model_dump(exclude_none=True)
            tool = tool.model_copy(update=overrides) if overrides else tool
        tools.append(tool)
    return tools


# --------------------------------------------------------------------------- the loop


class McpServers:
    """The MCP servers of one build and the thread whose event loop owns their sessions."""

    def __init__(self, *, start_timeout: float = START_TIMEOUT) -> None:
        self.start_timeout = start_timeout
        self._servers: dict[str, _RunningServer] = {}
        self._starting: dict[str, tuple[_RunningServer, concurrent.futures.Future[None]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise McpStartError("the build's MCP servers are already closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="agentctl-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
                # Daemon, so a forgotten build never blocks interpreter exit; atexit still
                # stops the server processes while the thread is alive.
                atexit.register(self.close)
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the servers' loop; a RuntimeError once the loop is closed."""
        loop = self._loop
        if loop is None or self._closed or loop.is_closed():
            coro.close()
            raise RuntimeError("the MCP servers of this build are closed")
        return asyncio.run_coroutine_threadsafe(coro, loop)

    @staticmethod
    def _key(server: McpServer) -> str:
        return server.model_dump_json(exclude={"include", "exclude", "prefix", "tools"})

    def _launch(self, server: McpServer) -> tuple[_RunningServer, concurrent.futures.Future[None]]:
        loop = self._ensure_loop()
        running = _RunningServer(server, self)
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        running.task_future = asyncio.run_coroutine_threadsafe(running.serve(ready), loop)
        return running, ready

    def prestart(self, servers: Iterable[McpServer]) -> None:
        """Begin starting `servers` at once, without waiting: several servers then take as
        long as the slowest, not the sum. `start` collects each (and reports its failure)."""
        for server in servers:
            key = self._key(server)
            if key not in self._servers and key not in self._starting:
                self._starting[key] = self._launch(server)

    def start(self, server: McpServer) -> _RunningServer:
        """Start `server` (or return it, already started with the same settings), blocking until
        its tools are listed. Raises McpStartError with the reason when it cannot start."""
        key = self._key(server)
        if key in self._servers:
            return self._servers[key]
        launched = self._starting.pop(key) if key in self._starting else self._launch(server)
        running, ready = launched
        try:
            # `serve` times the handshake itself and stops a failed process before it reports
            # (at most 3 * STOP_GRACE); this bound only guards against a stuck loop.
            ready.result(timeout=self.start_timeout + STOP_GRACE * 4 + 2)
        except concurrent.futures.TimeoutError:
            running.stop()
            raise McpStartError(f"it did not start within {self.start_timeout:g} s") from None
        except McpStartError:
            running.stop()
            raise
        self._servers[key] = running
        return running

    def close(self) -> None:
        """Stop every server and the loop thread. Safe to call twice, and from atexit."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        atexit.unregister(self.close)
        if loop is None or thread is None:
            return
        for running in self._servers.values():
            running.stop()
        for running, _ready in self._starting.values():  # prestarted, never collected
            running.stop()
        # Anything still running on the loop (a call, a server that ignored its stop) ends here.
        with contextlib.suppress(RuntimeError, concurrent.futures.TimeoutError):
            asyncio.run_coroutine_threadsafe(_cancel_all(), loop).result(timeout=STOP_GRACE * 2)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join(timeout=STOP_GRACE * 2)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> McpServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _cancel_all() -> None:
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


# --------------------------------------------------------------------------- one server


class _RunningServer:
    """One started server: its session task on the loop, its tools, and whether it still runs."""

    def __init__(self, spec: McpServer, owner: McpServers) -> None:
        self.spec = spec
        self.owner = owner
        self.tools: list[StructuredTool] = []
        """The server's tools as the adapters convert them (bound to the session)."""
        self.task_future: concurrent.futures.Future[None] | None = None
        self.process: Process | None = None
        self.stderr: IO[bytes] | None = None
        self.gone_reason: str | None = None
        self._gone: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self.finished = threading.Event()

    @property
    def name(self) -> str:
        return self.spec.name

    # ----------------------------------------------------------------- on the loop

    async def serve(self, ready: concurrent.futures.Future[None]) -> None:
        """Open the session, list the tools, report `ready`, then hold the session until
        `stop()`. Everything opened here is closed here: anyio wants one task for both."""
        self._gone = asyncio.Event()
        self._stop = asyncio.Event()
        try:
            with tempfile.TemporaryFile() as self.stderr:
                await self._hold_session(ready)
        finally:
            self._mark_gone("it was stopped")
            self.finished.set()

    async def _hold_session(self, ready: concurrent.futures.Future[None]) -> None:
        import anyio
        from langchain_mcp_adapters.tools import load_mcp_tools

        assert self._stop is not None
        try:
            async with self._session() as session:
                try:
                    with anyio.fail_after(self.owner.start_timeout):
                        await session.initialize()
                        listed = await load_mcp_tools(session, server_name=self.name)
                        self.tools = cast("list[StructuredTool]", listed)  # what it makes
                        self._remember([t.name for t in self.tools])
                except TimeoutError:
                    raise McpStartError(
                        f"no answer to the MCP handshake within {self.owner.start_timeout:g} s"
                    ) from None
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(McpStartError(await self._start_failure(exc)))
            elif not self._stop.is_set():
                self._mark_gone(f"its connection failed: {_reason(exc)}")
            if isinstance(exc, asyncio.CancelledError):
                raise

    def _remember(self, names: list[str]) -> None:
        """What the server listed, for the language server's completion (`runner.tools.known`):
        the server's own names, before `prefix`, `include` and `exclude`."""
        from runner.tools.known import remember_tools, server_key

        spec = self.spec
        remember_tools(server_key(url=spec.url, command=spec.command, args=spec.args), names)

    def _session(self) -> contextlib.AbstractAsyncContextManager[ClientSession]:
        spec = self.spec
        if spec.command is not None:
            return self._stdio_session()
        from langchain_mcp_adapters.sessions import create_session

        connection: dict[str, Any] = {"transport": spec.resolved_transport, "url": spec.url}
        if spec.headers:
            connection["headers"] = dict(spec.headers)
        return create_session(connection)  # type: ignore[arg-type]

    @contextlib.asynccontextmanager
    async def _stdio_session(self) -> AsyncIterator[ClientSession]:
        from mcp import ClientSession

        async with self._stdio() as (read, write), ClientSession(read, write) as session:
            yield session

    @contextlib.asynccontextmanager
    async def _stdio(self) -> AsyncIterator[tuple[Any, Any]]:
        """A stdio transport that keeps the process: newline-delimited JSON-RPC on its stdin and
        stdout, stderr to a temporary file."""
        import anyio
        import mcp.types as types
        from mcp.client.stdio import get_default_environment
        from mcp.shared.message import SessionMessage

        spec = self.spec
        assert spec.command is not None
        try:
            process = await anyio.open_process(
                [spec.command, *spec.args],
                env={**get_default_environment(), **spec.env},
                cwd=spec.cwd,
                stderr=self.stderr,
                start_new_session=True,  # its own process group: stopped as one, and Ctrl-C
            )  # in the terminal reaches agentctl, which then stops it in order
        except FileNotFoundError as exc:
            missing = exc.filename if exc.filename is not None else spec.command
            what = "working directory" if missing == spec.cwd else "command"
            raise McpStartError(f"{what} not found: {missing}") from None
        except OSError as exc:
            raise McpStartError(f"cannot run {spec.command}: {exc.strerror or exc}") from None
        self.process = process
        to_session, from_server = anyio.create_memory_object_stream[Any](0)
        to_server, from_session = anyio.create_memory_object_stream[Any](0)

        async def server_to_session() -> None:
            assert process.stdout is not None
            async with to_session:
                pending = b""
                async for chunk in process.stdout:
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message = types.JSONRPCMessage.model_validate_json(line)
                        except ValueError as exc:
                            await to_session.send(exc)
                            continue
                        await to_session.send(SessionMessage(message))

        async def session_to_server() -> None:
            assert process.stdin is not None
            async with from_session:
                async for item in from_session:
                    data = item.message.model_dump_json(by_alias=True, exclude_none=True)
                    try:
                        await process.stdin.send(data.encode() + b"\n")
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return  # the process is gone; the watcher says so

        async def watch_exit() -> None:
            code = await process.wait()
            if self._stop is None or not self._stop.is_set():
                self._mark_gone(f"it exited with code {code}")

        async with anyio.create_task_group() as group:
            group.start_soon(server_to_session)
            group.start_soon(session_to_server)
            group.start_soon(watch_exit)
            try:
                yield from_server, to_server
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop_process(process)
                group.cancel_scope.cancel()

    async def _start_failure(self, exc: BaseException) -> str:
        """Why the start failed, in one line: the start error itself, else the process's exit
        and the last line it wrote to stderr, else the exception."""
        import anyio

        leaf = _leaf(exc)
        if isinstance(leaf, McpStartError):
            return str(leaf)
        process = self.process
        if process is not None:
            with anyio.move_on_after(1):
                await process.wait()
            if process.returncode is not None:
                last = _last_line(self.stderr)
                return f"it exited with code {process.returncode}" + (f": {last}" if last else "")
        if self.spec.url is not None:
            return f"cannot connect to {self.spec.url}: {_reason(exc)}"
        return _reason(exc)

    def _mark_gone(self, reason: str) -> None:
        if self.gone_reason is None:
            self.gone_reason = reason
        if self._gone is not None:
            self._gone.set()

    async def call(self, tool: StructuredTool, arguments: dict[str, Any]) -> Any:
        """Call one adapter tool on the session, racing the server's exit and the timeout."""
        from langchain_core.tools import ToolException

        assert self._gone is not None and tool.coroutine is not None
        if self._gone.is_set():
            raise self._not_running()
        call = asyncio.ensure_future(tool.coroutine(**arguments))
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            done, _ = await asyncio.wait(
                {call, gone}, timeout=self.spec.timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            gone.cancel()
        if call not in done:
            call.cancel()
            if self._gone.is_set():
                raise self._not_running()
            raise ToolException(
                f"Error: MCP tool {tool.name!r} on server {self.name!r} did not answer within "
                f"{self.spec.timeout:g} s"
            )
        exc = call.exception()
        if exc is None or isinstance(exc, ToolException):
            return call.result()  # a result, or the server's own error report
        # The session failed under the call: when the server just exited, say that.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._gone.wait(), timeout=1)
        if self._gone.is_set():
            raise self._not_running()
        raise ToolException(
            f"Error: calling {tool.name!r} on MCP server {self.name!r} failed: {_reason(exc)}"
        )

    def _not_running(self) -> ToolException:
        from langchain_core.tools import ToolException

        return ToolException(
            f"Error: MCP server {self.name!r} is not running "
            f"({self.gone_reason or 'it was stopped'})"
        )

    # ----------------------------------------------------------------- from any thread

    def stop(self) -> None:
        """Ask the session task to close and wait for it; cancel it when it does not listen."""
        loop = self.owner._loop
        if loop is None or loop.is_closed() or self.task_future is None:
            return
        if self._stop is not None:
            loop.call_soon_threadsafe(self._stop.set)
        # The session task stops its process within 3 * STOP_GRACE (stdin, SIGTERM, SIGKILL).
        if not self.finished.wait(timeout=STOP_GRACE * 4):
            self.task_future.cancel()
            self.finished.wait(timeout=STOP_GRACE * 4)

    def as_tool(self, tool: StructuredTool, *, name: str) -> BaseTool:
        """A tool named `name` that calls the adapter tool `tool` on this server's session."""
        from langchain_core.tools import StructuredTool

        owner = self.owner

        def submit(arguments: dict[str, Any]) -> concurrent.futures.Future[Any]:
            try:
                return owner.submit(self.call(tool, arguments))
            except RuntimeError:
                raise self._not_running() from None

        def call_sync(**arguments: Any) -> Any:
            try:
                return submit(arguments).result()
            except concurrent.futures.CancelledError:
                raise self._not_running() from None

        async def call_async(**arguments: Any) -> Any:
            try:
                return await asyncio.wrap_future(submit(arguments))
            except asyncio.CancelledError:
                if owner._closed:
                    raise self._not_running() from None
                raise

        return StructuredTool(
            name=name,
            description=tool.description,
            args_schema=tool.args_schema,
            func=call_sync,
            coroutine=call_async,
            response_format="content_and_artifact",
            metadata={**(tool.metadata or {}), "mcp_server": self.name, "mcp_tool": tool.name},
            handle_tool_error=_error_content,
        )


# --------------------------------------------------------------------------- helpers


async def _stop_process(process: Process) -> None:
    """The MCP way to stop a stdio server: close its stdin, wait, then SIGTERM, then SIGKILL
    (to its whole process group, so the helpers it started go too)."""
    import anyio

    if process.returncode is None and process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
        if sig is not None and process.returncode is None:
            _signal_group(process, sig)
        with anyio.move_on_after(STOP_GRACE):
            await process.wait()
        if process.returncode is not None:
            return


def _signal_group(process: Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, sig)
        else:  # pragma: no cover - Windows has no process groups to signal
            process.send_signal(sig)


def _error_content(error: ToolException) -> Any:
    """What the model sees for a failed call: the server's error content when it sent some."""
    return getattr(error, "tool_content", None) or str(error)


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    leaf = _leaf(exc)
    text = str(leaf).strip().splitlines()
    if isinstance(leaf, asyncio.CancelledError):
        return "it was cancelled"
    return f"{type(leaf).__name__}: {text[0]}" if text else type(leaf).__name__


def _last_line(stream: IO[bytes] | None) -> str:
    if stream is None or stream.closed:
        return ""
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(max(0, size - 4096))
    lines = stream.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1].strip() if lines else ""
