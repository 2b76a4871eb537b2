"""The in-memory engine: the LangGraph dev server (`langgraph-api` with its in-memory runtime),
run in this process by uvicorn, so nothing is left behind when serve stops.

Threads, runs, checkpoints and the store live in memory, saved to `.langgraph_api/` in the
working directory every few seconds and at exit, and read back at the next start (as under
`langgraph dev`): a restart keeps the threads. Runs execute on the server's event loop, up to
`jobs` at a time.
"""

from __future__ import annotations

import logging
import os
import sys
import types
from collections.abc import Mapping
from typing import Any

from runner.errors import RunError
from runner.serve.guard import ENGINE_CORS_OFF, Guard, GuardMiddleware

__all__ = ["run_inmem"]

WEB_MODULE = "agentctl_served_web"
"""The module the engine imports the web page's app from (`http.app` is an import path)."""


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
) -> None:
    """Serve `graphs` ({graph id: import path}) until interrupted (blocks). The port should be
    free (`ports.check_port`): the engine would quietly serve on another one. `web_app` (a
    Starlette app, such as a web page) is served in front of the API, on the same port.

    Every request, the API's included, passes `guard` (default: the address served, no other
    origin, 10 MB bodies) first: its middleware is the outermost of the app the engine serves.

    `authenticated`: the API requires the users `runner.serve.auth` lets in."""
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
    if web_app is None:
        from starlette.applications import Starlette

        web_app = Starlette()
    # The engine puts a custom app's middleware before its own (CORS, logging, auth), around
    # every route it serves: the guard sees each request first. In-process calls the engine
    # makes to itself (its MCP and A2A endpoints) carry the root path `/noauth`.
    web_app.add_middleware(
        GuardMiddleware, guard=guard or Guard.serving(host, port), in_process_root_path="/noauth"
    )
    # The engine merges its routes into this app: ours come first, `/` included.
    sys.modules[WEB_MODULE] = module = types.ModuleType(WEB_MODULE, "agentctl's web page.")
    module.app = web_app  # type: ignore[attr-defined]
    # Its own CORS would answer `*` to every origin: it allows none; the guard answers for the
    # origins served with --allow-origin.
    http = {"app": f"{WEB_MODULE}:app", "cors": ENGINE_CORS_OFF}
    auth: dict[str, Any] | None = None
    if authenticated:
        from runner.serve.auth import AUTH_PATH

        # The dev server lets a request that says `x-auth-scheme: langsmith` in as a "studio
        # user", without credentials: not here.
        auth = {"path": AUTH_PATH, "disable_studio_auth": True}
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
