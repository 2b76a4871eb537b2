"""Which engine serves, chosen from serve's flags: the in-memory LangGraph server, or Aegra on
Postgres (with Redis, a run queue shared by several servers). Both serve the same graphs (the
factories `graphs.register` made) and may serve an app in front of the API (`web_app`).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.serve.guard import Guard

__all__ = ["Engine"]


@dataclass(frozen=True)
class Engine:
    """The in-memory engine when `database` is None, else Aegra on `database` (+ `redis`)."""

    database: str | None = None
    redis: str | None = None
    detect_blocking: bool = False
    """In-memory engine only: a blocking call on the event loop fails the run (`--dev`)."""

    @classmethod
    def choose(cls, *, database: str | None, redis: str | None, dev: bool) -> Engine:
        """The engine for `--db`, `--redis` and `--dev` (which forces the in-memory one); refuses
        at once what cannot work here (a URL that is not Postgres, Aegra on Python 3.11)."""
        if dev or not database:
            return cls(detect_blocking=dev)
        from runner.serve.aegra import database_url, require_aegra

        engine = cls(database=database_url(database), redis=redis or None)
        require_aegra()
        return engine

    def check(self) -> None:
        """Fail now, saying why, when the database or Redis does not answer."""
        if self.database is None:
            return
        from runner.serve.aegra import check_database, check_redis

        check_database(self.database)
        if self.redis:
            check_redis(self.redis)

    def describe(self) -> str:
        """What serves, for the banner (passwords hidden)."""
        if self.database is None:
            return "in memory"
        from runner.serve.aegra import redact

        queue = f"run queue {redact(self.redis)}" if self.redis else "no run queue"
        return f"Aegra on {redact(self.database)}, {queue}"

    async def add_graph(self, name: str, make_graph: Any, description: str | None) -> None:
        """Serve one more graph while serving (on the engine's event loop); `make_graph` is
        its factory (`graphs.add`)."""
        if self.database is None:
            from runner.serve.inmem import add_graph

            await add_graph(name, make_graph, description)
            return
        from runner.serve.aegra import add_graph as add_aegra_graph
        from runner.serve.graphs import graph_file

        await add_aegra_graph(name, graph_file(name), description)

    def remove_graph(self, name: str) -> None:
        """Stop serving the graph `name` while serving (its assistant and threads are kept)."""
        if self.database is None:
            from runner.serve.inmem import remove_graph

            remove_graph(name)
            return
        from runner.serve.aegra import remove_graph as remove_aegra_graph

        remove_aegra_graph(name)

    def run(
        self,
        graphs: Mapping[str, str],
        descriptions: Mapping[str, str | None],
        *,
        host: str,
        port: int,
        jobs: int,
        web_app: Any | None = None,
        guard: Guard | None = None,
        authenticated: bool = False,
        served: Container[str] | None = None,
    ) -> None:
        """Serve `graphs` (`graphs.register`'s {graph id: import path}) until interrupted.

        `web_app` (a Starlette or FastAPI app, such as a web page) is served in front of the
        API, on the same port, by either engine; its routes come first, `/` included. Every
        request passes `guard` first (`runner.serve.guard`; by default: the address served, no
        other origin, 10 MB bodies).

        `authenticated`: the engine loads `runner.serve.auth.auth` (settings `publish`ed first)
        and the API answers only the users it lets in. `served`: the graph ids served now,
        when they change while serving (`runner.serve.live`)."""
        if self.database is None:
            from runner.serve.inmem import run_inmem

            run_inmem(
                graphs,
                descriptions,
                host=host,
                port=port,
                jobs=jobs,
                detect_blocking=self.detect_blocking,
                web_app=web_app,
                guard=guard,
                authenticated=authenticated,
                served=served,
            )
            return
        from runner.serve.aegra import run_aegra
        from runner.serve.graphs import graph_files

        run_aegra(
            graph_files(graphs),
            descriptions,
            host=host,
            port=port,
            jobs=jobs,
            database=self.database,
            redis=self.redis,
            web_app=web_app,
            guard=guard,
            authenticated=authenticated,
        )
