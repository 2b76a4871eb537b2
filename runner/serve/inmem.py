"""The in-memory engine: the LangGraph dev server (`langgraph-api` with its in-memory runtime),
run in this process by uvicorn, so nothing is left behind when serve stops.

Threads, runs, checkpoints and the store live in memory, saved to `.langgraph_api/` in the
working directory every few seconds and at exit, and read back at the next start (as under
`langgraph dev`): a restart keeps the threads. A new thread is saved before the engine answers
its creation (`persist_threads`, which serve's `ThreadGuard` calls), so a crash loses no thread a
client was told about; runs, checkpoints and store items since the last periodic save are lost.
Runs execute on the server's event loop, up to `jobs` at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import types
from collections.abc import Awaitable, Callable, Container, Mapping
from typing import Any

from runner.errors import RunError
from runner.serve.guard import ENGINE_CORS_OFF, Guard, GuardMiddleware

__all__ = ["GroupSaves", "add_graph", "persist_threads", "remove_graph", "run_inmem"]

WEB_MODULE = "agentctl_served_web"
"""The module the engine imports the web page's app from (`http.app` is an import path)."""

DEV_ROUTES = ("/internal", "/deploy")
"""Routes the in-memory runtime adds for LangGraph's own tests and Studio, outside the
authenticated API: `/internal/truncate` empties every thread, `/internal/debug/thread/ID` reads
any thread, `POST /deploy` runs `langgraph deploy` in the working directory. agentctl serves
none of them."""


async def persist_threads() -> None:
    """Save the engine's table of threads, runs, assistants and crons to disk, as its periodic
    save would, and return once a save that holds every change made before the call is on disk:
    a snapshot taken on the event loop (where the engine changes it, so it is consistent),
    written to a file of its own, flushed and renamed over the engine's file. Calls that come
    while one save is written share the next (`GroupSaves`): the table grows with every thread
    kept, and one save per new thread made a busy server spend most of its time pickling it."""
    import pickle

    from langgraph_runtime_inmem import _persistence  # type: ignore[import-untyped]
    from langgraph_runtime_inmem.database import GLOBAL_STORE  # type: ignore[import-untyped]

    if _persistence.DISABLE_FILE_PERSISTENCE:
        return

    async def write(data: bytes) -> None:
        await asyncio.to_thread(_write_atomically, GLOBAL_STORE.filename, data)

    # The engine writes protocol 2 and reads any: the highest pickles its table of 1,230
    # threads and runs in 51 ms against 67, into 2.4 MB against 3.0
    await _SAVES.save(lambda: pickle.dumps(dict(GLOBAL_STORE), pickle.HIGHEST_PROTOCOL), write)


class GroupSaves:
    """Saves of one table, one at a time, each snapshot holding every change made before it was
    taken (all on one event loop): a caller returns once a snapshot taken after its call is on
    disk. Callers that wait while a save is written are all served by the next one (a group
    commit), so a burst of N changes costs two saves, not N; a failed write fails its caller,
    and the next waiting caller takes a snapshot of its own."""

    def __init__(self) -> None:
        self._taken = 0
        """Snapshots taken so far."""
        self._saved = 0
        """The number of the last snapshot written to disk."""
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def save(
        self, snapshot: Callable[[], bytes], write: Callable[[bytes], Awaitable[None]]
    ) -> None:
        needed = self._taken + 1  # the first snapshot taken from now on holds the changes so far
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        async with self._lock:
            if self._saved >= needed:
                return
            self._taken += 1
            taken = self._taken
            await write(snapshot())
            self._saved = taken  # (saves are made one at a time: none later is done)


_SAVES = GroupSaves()


async def add_graph(name: str, make_graph: Any, description: str | None) -> None:
    """Serve one more graph, on the running engine (its event loop): registered as the engine
    registers those it starts with, its default assistant created (or kept, with its threads,
    when the graph was served before under this name)."""
    from langgraph_api.graph import register_graph

    await register_graph(name, make_graph, None, description=description)


def remove_graph(name: str) -> None:
    """Stop serving the graph `name`: runs of it are refused from now on. Its assistant and
    threads are kept (they come back with a file of that name)."""
    from langgraph_api.graph import GRAPHS

    GRAPHS.pop(name, None)


def _write_atomically(filename: str, data: bytes) -> None:
    import tempfile

    folder = os.path.dirname(filename) or "."
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".agentctl-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, filename)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def run_inmem(
    graphs: Mapping[str, str],
    descriptions: Mapping[str, str | None],
    *,
    host: str,
    port: int,
    jobs: int,
    detect_blocking: bool,
    web_app: Any | None = None,
    guard: Guard | None = None,
    authenticated: bool = False,
    served: Container[str] | None = None,
) -> None:
    """Serve `graphs` ({graph id: import path}) until interrupted (blocks). The port should be
    free (`ports.check_port`): the engine would quietly serve on another one. `web_app` (a
    Starlette app, such as a web page) is served in front of the API, on the same port.

    Every request, the API's included, passes `guard` (default: the address served, no other
    origin, 10 MB bodies) first: its middleware is the outermost of the app the engine serves.

    `authenticated`: the API requires the users `runner.serve.auth` lets in. `served`: the
    graph ids served now, when they change while serving (`runner.serve.live`)."""
    # No network beyond the socket we serve: no version check against PyPI.
    os.environ.setdefault("LANGGRAPH_NO_VERSION_CHECK", "true")
    # The engine's own logs (its banner, every request) only when asked for: LOG_LEVEL=INFO.
    if "LOG_LEVEL" not in os.environ:
        os.environ["LOG_LEVEL"] = "WARNING"
        logging.getLogger("langgraph_api.cli").setLevel(logging.WARNING)
    try:
        from langgraph_api.cli import run_server
    except ImportError:
        raise RunError(
            "agentctl serve needs the LangGraph server, which is not installed: "
            "pip install 'agentctl[serve]'"
        ) from None
    # The engine merges its routes into this app (ours come first, `/` included) and puts its
    # middleware before the engine's own (CORS, logging, auth), around every route it serves.
    web_app = _without_dev_routes(web_app)
    from runner.serve.a2a import A2AMiddleware

    # Agents by name under /a2a/, and A2A 1.0 streams for 1.0 clients (see runner.serve.a2a).
    web_app.add_middleware(A2AMiddleware, graphs=served if served is not None else list(graphs))
    # Outermost, so the guard sees each request first. In-process calls the engine makes to
    # itself (its MCP and A2A endpoints) carry the root path `/noauth`.
    web_app.add_middleware(
        GuardMiddleware, guard=guard or Guard.serving(host, port), in_process_root_path="/noauth"
    )
    sys.modules[WEB_MODULE] = module = types.ModuleType(WEB_MODULE, "agentctl's web page.")
    module.app = web_app  # type: ignore[attr-defined]
    # Its own CORS would answer `*` to every origin: it allows none; the guard answers for the
    # origins served with --allow-origin.
    http: dict[str, Any] = {"app": f"{WEB_MODULE}:app", "cors": ENGINE_CORS_OFF}
    auth: dict[str, Any] | None = None
    if authenticated:
        from runner.serve.auth import AUTH_PATH

        # The dev server lets a request that says `x-auth-scheme: langsmith` in as a "studio
        # user", without credentials: not here.
        auth = {"path": AUTH_PATH, "disable_studio_auth": True}
    from runner.serve import messages

    messages.install()
    run_server(
        host=host,
        port=port,
        graphs={
            name: {"path": path, **({"description": d} if (d := descriptions.get(name)) else {})}
            for name, path in graphs.items()
        },
        n_jobs_per_worker=jobs,
        open_browser=False,
        disable_persistence=False,
        allow_blocking=not detect_blocking,
        server_level="WARNING",
        http=http,
        auth=auth,
    )


def _is_dev_route(path: str) -> bool:
    return any(path == route or path.startswith(route + "/") for route in DEV_ROUTES)


def _without_dev_routes(web_app: Any | None) -> Any:
    """`web_app` (or an empty app) with middleware answering 404 on `DEV_ROUTES`, placed
    first (the engine applies the app's middleware to all its routes)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse
    from starlette.types import ASGIApp, Receive, Scope, Send

    class HideDevRoutes:
        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            path = scope.get("path", "")
            if scope["type"] in ("http", "websocket") and _is_dev_route(path):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await JSONResponse({"detail": "Not Found"}, status_code=404)(scope, receive, send)
                return
            await self.app(scope, receive, send)

    if web_app is None:
        return Starlette(middleware=[Middleware(HideDevRoutes)])
    web_app.user_middleware.insert(0, Middleware(HideDevRoutes))  # outermost
    return web_app
