"""The production engine: Aegra (`aegra-api`), the LangGraph Agent Server API on Postgres, run in
this process by uvicorn, so nothing is left behind when serve stops.

Threads, runs, checkpoints, the store, assistants and crons live in Postgres; serve creates or
upgrades the tables at start (Aegra's alembic migrations, LangGraph's checkpoint and store
tables), one server at a time under an advisory lock. With Redis, runs go through a job queue
that every server on the same Postgres and Redis takes from: each run is held under a lease its
worker renews, and a run whose server died is taken by another when the lease expires, resuming
from its last checkpoint (LangGraph resumes a thread whose last checkpoint the same run wrote,
instead of starting it again). Streams and joins reach a run through Redis, whichever server runs
it. Without Redis, runs execute on the server that received them (no recovery, no sharing of
work).

Aegra reads its settings from environment variables when it is first imported, and its graphs
(and an optional app served beside the API) from a JSON file named by `AEGRA_CONFIG`: `run_aegra`
sets those from serve's flags, writes the file to a temporary folder, then imports Aegra. Aegra's
other settings (`LEASE_DURATION_SECONDS`, `HEARTBEAT_INTERVAL_SECONDS`, `REAPER_INTERVAL_SECONDS`,
`WORKER_DRAIN_TIMEOUT`, pool sizes, ...) are taken from the environment as Aegra documents them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from runner.errors import RunError, redact
from runner.serve.guard import ENGINE_CORS_OFF, Guard, GuardMiddleware

__all__ = [
    "add_graph",
    "check_database",
    "check_redis",
    "database_url",
    "redact",
    "remove_graph",
    "require_aegra",
    "run_aegra",
]

MIN_PYTHON = (3, 12)
"""Aegra's releases since 0.7 need Python 3.12 or newer."""

DRAIN_SECONDS = 30
"""How long Ctrl-C waits for runs in flight before handing them back to the queue (Aegra's
`WORKER_DRAIN_TIMEOUT`, unless set)."""


def require_aegra() -> None:
    """Refuse, saying what to do, when Aegra cannot run here."""
    if sys.version_info < MIN_PYTHON:
        running = ".".join(map(str, sys.version_info[:3]))
        raise RunError(
            f"serving on a database (--db) uses Aegra, which needs Python 3.12 or newer; this "
            f"agentctl runs on Python {running}. Reinstall it on Python 3.12+ (scripts/setup picks "
            "the newest Python on the machine), or serve in memory with --dev"
        )
    if importlib.util.find_spec("aegra_api") is None:
        raise RunError(
            "serving on a database (--db) needs Aegra, which is not installed: "
            "pip install 'agentctl[serve]'"
        )


def database_url(url: str) -> str:
    """`url` checked to be a Postgres URL (the only database Aegra runs on), as libpq writes it
    (a SQLAlchemy driver suffix, `postgresql+asyncpg://`, dropped)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+", 1)[0] not in ("postgresql", "postgres"):
        raise RunError(
            f"--db: expected a postgresql:// URL (Aegra runs on PostgreSQL), found {redact(url)!r}"
        )
    return f"postgresql://{rest}"


def check_database(url: str) -> None:
    """Fail now, with the driver's reason, when the database does not answer."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=10):
            pass
    except psycopg.Error as exc:
        reason = " ".join(line.strip() for line in str(exc).splitlines()) or type(exc).__name__
        raise RunError(f"cannot connect to the database {redact(url)}: {reason}") from None


def check_redis(url: str) -> None:
    """Fail now, with the client's reason, when Redis does not answer."""
    import redis

    if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
        raise RunError(f"--redis: expected a redis:// URL, found {redact(url)!r}")
    client = redis.Redis.from_url(url, socket_connect_timeout=10)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise RunError(f"cannot connect to Redis at {redact(url)}: {exc}") from None
    finally:
        client.close()


def run_aegra(
    graphs: Mapping[str, str],
    descriptions: Mapping[str, str | None],
    *,
    host: str,
    port: int,
    jobs: int,
    database: str,
    redis: str | None,
    web_app: Any | None = None,
    guard: Guard | None = None,
    authenticated: bool = False,
) -> None:
    """Serve `graphs` ({graph id: `file.py:NAME`}) on Aegra until interrupted (blocks).

    `web_app` (a Starlette or FastAPI app, such as a web page) is served in front of the API,
    on the same port: Aegra adds the API's routes to it (its `http.app`). Every request passes
    `guard` (default: the address served, no other origin, 10 MB bodies) before Aegra sees it.
    `authenticated`: the API requires the users `runner.serve.auth` lets in (Aegra's
    `auth.path`).
    Call `require_aegra`, `check_database` and `check_redis` first: a failure here is Aegra's.
    """
    with tempfile.TemporaryDirectory(prefix="agentctl-aegra-") as folder:
        config = Path(folder) / "aegra.json"
        entries = {
            name: {"path": path, **({"description": d} if (d := descriptions.get(name)) else {})}
            for name, path in graphs.items()
        }
        # Each step's checkpoint is written before the next step starts, as `agentctl run`
        # does: a run taken over after a crash resumes from its last step, not an earlier one
        # (AEGRA_CHECKPOINT_DURABILITY in the environment overrides it).
        body: dict[str, object] = {"graphs": entries, "checkpointer": {"durability": "sync"}}
        # Aegra's own CORS would answer `*` to every origin: it allows none; the guard answers
        # for the origins served with --allow-origin.
        http: dict[str, object] = {"cors": ENGINE_CORS_OFF}
        if web_app is not None:
            http["app"] = _publish(web_app)
        body["http"] = http
        if authenticated:
            from runner.serve.auth import AUTH_PATH

            body["auth"] = {"path": AUTH_PATH}
        config.write_text(json.dumps(body, indent=2), encoding="utf-8")
        _configure(config, host=host, port=port, jobs=jobs, database=database, redis=redis)
        from aegra_api.utils.setup_logging import setup_logging

        setup_logging()  # before anything of Aegra's logs: at LOG_LEVEL, in its format
        from runner.serve import messages

        messages.install()
        messages.speak_on_aegra_streams()
        _serve(
            host, port, database, guard or Guard.serving(host, port), authenticated=authenticated
        )


async def add_graph(name: str, path: str, description: str | None) -> None:
    """Serve one more graph (`path`: `file.py:NAME`) on the running Aegra (its event loop): put
    in its registry and loaded as those of its config are, its default assistant created (or
    kept, with its threads, when the graph was served before under this name). Only this
    server learns of it: other servers on the same database and Redis do not.

    Aegra has no public call for this: it does what `LangGraphService.initialize` does for
    each graph of its config, with that class's own methods (aegra-api 0.11, as pinned;
    tests/edit/test_edit_served.py runs it)."""
    from aegra_api.services.langgraph_service import (
        _parse_graph_config_entry,
        get_langgraph_service,
    )

    service = get_langgraph_service()
    entry = _parse_graph_config_entry(
        name, {"path": path, **({"description": description} if description else {})}
    )
    service._graph_registry[name] = entry
    service.invalidate_cache(name)
    await service._load_graph_from_file(name, entry)
    await service._ensure_default_assistants()


def remove_graph(name: str) -> None:
    """Stop serving the graph `name` on this server: runs of it are refused from now on. Its
    assistant is kept: Aegra deletes an assistant's runs with it."""
    from aegra_api.services.langgraph_service import get_langgraph_service

    service = get_langgraph_service()
    service._graph_registry.pop(name, None)
    service.invalidate_cache(name)


WEB_MODULE = "agentctl_served_web"
"""The module Aegra imports the web app from (its `http.app` is an import path)."""


def _publish(web_app: Any) -> str:
    """The import path Aegra loads `web_app` by. Aegra takes only a FastAPI app: a Starlette
    app's routes and middleware are moved into one (its routes come before the API's, `/`
    included, and the API's routes go behind its middleware)."""
    import types

    from fastapi import FastAPI

    if not isinstance(web_app, FastAPI):
        web_app = FastAPI(routes=list(web_app.routes), middleware=list(web_app.user_middleware))
    module = types.ModuleType(WEB_MODULE, "agentctl's web page, for Aegra.")
    module.app = web_app  # type: ignore[attr-defined]
    sys.modules[WEB_MODULE] = module
    return f"{WEB_MODULE}:app"


def _configure(
    config: Path, *, host: str, port: int, jobs: int, database: str, redis: str | None
) -> None:
    """Aegra's settings, in the environment it reads them from at import."""
    if "aegra_api.settings" in sys.modules:  # settings are read once, at import
        raise RuntimeError("Aegra was imported before serve configured it")
    os.environ.update(
        {
            "AEGRA_CONFIG": str(config),
            "DATABASE_URL": database,
            "REDIS_BROKER_ENABLED": "true" if redis else "false",
            "HOST": host,
            "PORT": str(port),
            # One queue consumer running up to `jobs` runs at once: --jobs per process.
            "WORKER_COUNT": "1",
            "N_JOBS_PER_WORKER": str(jobs),
            # Migrated by `_migrate` at start-up, in this server's turn (`_started_in_turn`).
            "RUN_MIGRATIONS_ON_STARTUP": "false",
        }
    )
    if redis:
        os.environ["REDIS_URL"] = redis
    os.environ.setdefault("WORKER_DRAIN_TIMEOUT", str(DRAIN_SECONDS))
    # The engine's own logs (every request, every run) only when asked for: LOG_LEVEL=INFO.
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("LANGSMITH_TRACING", "false")


def _require_our_auth() -> None:
    """Refuse to serve unless Aegra loaded our `Auth` object: when it cannot load the one its
    config names, it logs a warning and lets every request in as "anonymous"."""
    from aegra_api.core.auth_middleware import get_auth_instance

    from runner.serve.auth import auth

    if get_auth_instance() is not auth:
        raise RunError(
            "the Aegra engine did not load agentctl's authentication (its log above says why); "
            "not serving without it"
        )


STARTUP_LOCK = 0x61676E746374  # "agntct"
"""Servers started together on one database take turns to start under this Postgres advisory
lock: each would otherwise create the same tables, and Aegra the same default assistants, and
all but one would fail on the duplicates."""


def _migrate(database: str) -> None:
    """Aegra's tables (its alembic migrations) and LangGraph's checkpoint and store tables,
    created or brought up to date (blocking; run it in a worker thread: alembic configures
    logging from its ini file when run on the main thread)."""
    from aegra_api.core.migrations import run_migrations_if_needed
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    run_migrations_if_needed()
    with PostgresSaver.from_conn_string(database) as saver:
        saver.setup()
    with PostgresStore.from_conn_string(database) as store:
        store.setup()
    _adopt_cli_threads(database)


def _adopt_cli_threads(database: str) -> None:
    """The threads `agentctl run --db` started on this database before a server ran on it get
    their row in Aegra's thread table (later ones get it from the CLI:
    `runner.threads.postgres`)."""
    import psycopg

    from runner.threads.postgres import ADOPT

    with psycopg.connect(database, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass('agentctl_threads') IS NOT NULL").fetchone()
        if found and found[0]:
            conn.execute(ADOPT)


@contextlib.asynccontextmanager
async def _startup_turn(database: str) -> AsyncIterator[None]:
    """Hold `STARTUP_LOCK` for the block."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as conn:
        # Polled, not waited for: a session waiting inside pg_advisory_lock holds a snapshot,
        # and the migrations' CREATE INDEX CONCURRENTLY waits for every snapshot to end.
        while True:
            row = await (
                await conn.execute("SELECT pg_try_advisory_lock(%s)", (STARTUP_LOCK,))
            ).fetchone()
            if row and row[0]:
                break
            await asyncio.sleep(0.2)
        try:
            yield
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (STARTUP_LOCK,))


def _started_in_turn(app: Any, database: str) -> None:
    """Make `app`'s start-up migrate the database, then start Aegra, in this server's turn."""
    aegra_lifespan = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as running:
            async with _startup_turn(database):
                try:
                    await asyncio.to_thread(_migrate, database)
                except Exception as exc:
                    raise RunError(
                        f"migrating the database {redact(database)} failed: {exc}"
                    ) from exc
                await running.enter_async_context(aegra_lifespan(app))
            yield

    app.router.lifespan_context = lifespan


def _serve(host: str, port: int, database: str, guard: Guard, *, authenticated: bool) -> None:
    import uvicorn
    from aegra_api.main import app

    if authenticated:
        _require_our_auth()
        from runner.serve.auth import ENV_VAR, AuthSettings
        from runner.serve.ownership import let_admins_see_all_on_aegra

        let_admins_see_all_on_aegra(AuthSettings.from_json(os.environ[ENV_VAR]).admins)

    _started_in_turn(app, database)
    # Around the whole app, outside Aegra's own middleware (which reads a `text/plain` body as
    # JSON): the guard sees each request as the client sent it.
    served = GuardMiddleware(app, guard=guard)
    level = os.environ["LOG_LEVEL"].upper()
    server = uvicorn.Server(
        uvicorn.Config(
            served,
            host=host,
            port=port,
            lifespan="on",
            log_config=None,  # Aegra's logging, set up by `run_aegra`
            log_level=level.lower(),
            access_log=False,  # Aegra logs each request itself, at INFO
            # Open streams get this long to finish before Ctrl-C closes them; runs are then
            # drained by the engine's own shutdown.
            timeout_graceful_shutdown=5,
        )
    )
    server.run()
    if not server.started:
        raise RunError(
            "the Aegra engine did not start (its log above says why; LOG_LEVEL=INFO shows more)"
        )
