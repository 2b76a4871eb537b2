"""The thread database's guards on Postgres: the lease, the answer log and the tool journal.

The same three tables as in SQLite (`runner.threads.guards`), in the database of a `postgresql://`
thread database (`agentctl run --db postgresql://...`) or of any LangGraph Postgres
checkpointer, beside its `checkpoints` tables:

- `PostgresThreadLease`, `PostgresAnswerLog`, `PostgresToolJournal`: on a psycopg `Connection`
  (or `ConnectionPool`) and the lock its other users share, as
  `runner.threads.postgres.PostgresHome` and a sync `PostgresSaver` have them;
- `AsyncPostgresToolJournal(saver)`: the tool journal of an `AsyncPostgresSaver`, on the saver's
  own connection or pool and lock. `runner.middleware.journal` makes one for any graph compiled
  with such a saver (the serve engine's own one included): a finished tool call is not run again
  when its step runs again after a crash.

Every compare-and-set (taking a lease, claiming an answer) is one transaction that first takes
a transaction-level advisory lock on the thread (`pg_advisory_xact_lock`), so a read and the
write that depends on it are one step for every process on every host. The tables are created
idempotently under another advisory lock, so two processes starting at once do not collide in
`CREATE TABLE IF NOT EXISTS` (which Postgres does not make safe against itself). Statements
run on an autocommit connection: what `write` returns from is committed.

psycopg is imported only here (the `postgres` extra).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from runner.threads.guards import (
    JOURNAL_LOOKUP,
    JOURNAL_RECORD,
    Execute,
    TableAnswerLog,
    TableThreadLease,
    TableToolJournal,
    journal_result,
    journal_row,
)

__all__ = [
    "SCHEMA",
    "AsyncPostgresToolJournal",
    "PostgresAnswerLog",
    "PostgresDatabase",
    "PostgresThreadLease",
    "PostgresToolJournal",
    "asetup",
    "setup",
    "setup_lock",
]

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS agentctl_leases (thread_id TEXT PRIMARY KEY, token TEXT NOT NULL, "
    "pid BIGINT NOT NULL, host TEXT NOT NULL, started TEXT, since TEXT NOT NULL, "
    "heartbeat DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS agentctl_answers (seq BIGSERIAL, thread_id TEXT NOT NULL, "
    "interrupt_id TEXT NOT NULL, summary TEXT NOT NULL, resume TEXT NOT NULL, "
    "pid BIGINT NOT NULL, host TEXT NOT NULL, answered_at TEXT NOT NULL, "
    "PRIMARY KEY (thread_id, interrupt_id))",
    "CREATE TABLE IF NOT EXISTS agentctl_tool_journal (thread_id TEXT NOT NULL, "
    "scope TEXT NOT NULL, call_id TEXT NOT NULL, type TEXT NOT NULL, result BYTEA NOT NULL, "
    "recorded_at TEXT NOT NULL, PRIMARY KEY (thread_id, scope, call_id))",
)
"""The guards' tables in Postgres (`runner.threads.guards.SCHEMA` is the SQLite twin)."""

LOCK_SPACE = 0x61676374
"""First key of agentctl's advisory locks ("agct"): (LOCK_SPACE, 0) while creating tables,
(LOCK_SPACE, hashtext(thread id)) while a compare-and-set on a thread runs."""

SETUP_LOCK = (LOCK_SPACE, 0)
"""The advisory lock held while tables are created."""

POLL = 0.05
"""Seconds between tries for the setup lock."""

_TRY_SETUP = "SELECT pg_try_advisory_xact_lock(%s, %s)"


def sql(text: str) -> str:
    """A statement written with SQLite's `?` parameters, in psycopg's `%s` style."""
    return text.replace("?", "%s")


def setup(conn: Any, statements: Iterable[str] = SCHEMA) -> None:
    """Create tables (the guards' by default) idempotently, in one transaction holding the setup
    lock: two processes creating them at once wait for each other instead of failing.

    The lock is tried, not waited for, between short transactions: LangGraph's migrations
    (`CREATE INDEX CONCURRENTLY`, in another process holding the lock) wait for every open
    transaction to end, and one waiting for the lock would never end."""
    from psycopg.rows import tuple_row

    while True:
        with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(_TRY_SETUP, SETUP_LOCK)
            row = cur.fetchone()
            if row is not None and row[0]:
                for statement in statements:
                    cur.execute(statement)
                return
        time.sleep(POLL)


async def asetup(conn: Any, statements: Iterable[str] = SCHEMA) -> None:
    """`setup` on a psycopg `AsyncConnection`."""
    from psycopg.rows import tuple_row

    while True:
        async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(_TRY_SETUP, SETUP_LOCK)
            row = await cur.fetchone()
            if row is not None and row[0]:
                for statement in statements:
                    await cur.execute(statement)
                return
        await asyncio.sleep(POLL)


@contextmanager
def setup_lock(conn: Any) -> Iterator[None]:
    """Hold the setup lock at session level on `conn` (autocommit) for the block, tried between
    short statements as in `setup`: LangGraph's own migrations run in it."""
    from psycopg.rows import tuple_row

    with conn.cursor(row_factory=tuple_row) as cur:
        while True:
            cur.execute("SELECT pg_try_advisory_lock(%s, %s)", SETUP_LOCK)
            row = cur.fetchone()
            if row is not None and row[0]:
                break
            time.sleep(POLL)
        try:
            yield
        finally:
            cur.execute("SELECT pg_advisory_unlock(%s, %s)", SETUP_LOCK)


class PostgresDatabase:
    """`runner.threads.guards.Database` on a psycopg `Connection` (autocommit) or `ConnectionPool`,
    and the lock every user of it shares."""

    order = "seq"

    def __init__(self, conn: Any, lock: Any) -> None:
        import psycopg

        self.conn = conn
        self.lock = lock
        self.errors: tuple[type[Exception], ...] = (psycopg.Error,)

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        from psycopg.rows import tuple_row
        from psycopg_pool import ConnectionPool

        with self.lock:
            if isinstance(self.conn, ConnectionPool):
                with self.conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                    yield cur
            else:
                with self.conn.cursor(row_factory=tuple_row) as cur:
                    yield cur

    @contextmanager
    def transaction(self, key: str) -> Iterator[Execute]:
        with self._cursor() as cur, cur.connection.transaction():
            cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_SPACE, key))

            def execute(statement: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
                cur.execute(sql(statement), args)
                return cur.fetchall() if cur.description else []

            yield execute

    def fetch(self, statement: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._cursor() as cur:
            cur.execute(sql(statement), args)
            return list(cur.fetchall())

    def write(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        with self._cursor() as cur, cur.connection.transaction():
            cur.executemany(sql(statement), rows)


class PostgresThreadLease(TableThreadLease):
    """`runner.threads.guards.TableThreadLease` in Postgres. Holders on other hosts are judged by
    their heartbeat (each host's clock: keep them in sync to well under `ttl`)."""

    def __init__(self, conn: Any, lock: Any, *, ttl: float = 30.0) -> None:
        super().__init__(PostgresDatabase(conn, lock), ttl=ttl)


class PostgresAnswerLog(TableAnswerLog):
    def __init__(self, conn: Any, lock: Any) -> None:
        super().__init__(PostgresDatabase(conn, lock))


class PostgresToolJournal(TableToolJournal):
    """The tool journal of a sync Postgres thread database or `PostgresSaver`."""

    def __init__(self, conn: Any, lock: Any, *, serde: Any = None) -> None:
        super().__init__(PostgresDatabase(conn, lock), serde=serde)

    @classmethod
    def of_saver(cls, saver: Any) -> PostgresToolJournal:
        """The journal in a `PostgresSaver`'s database, on its connection and lock (creates
        the tables)."""
        journal = cls(saver.conn, saver.lock, serde=saver.serde)
        with journal.db._cursor() as cur:  # type: ignore[attr-defined]
            setup(cur.connection)
        return journal


class AsyncPostgresToolJournal:
    """`runner.threads.guards.AsyncToolJournal` of a LangGraph `AsyncPostgresSaver`: its table in
    the saver's database, used through the saver's connection (an `AsyncConnection` with
    autocommit, or an `AsyncConnectionPool`) under the saver's lock. The table is created on
    first use. `arecord` returns once the row is committed."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.serde = saver.serde
        self._ready = False

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        from psycopg_pool import AsyncConnectionPool

        async with self.saver.lock:
            if isinstance(self.saver.conn, AsyncConnectionPool):
                async with self.saver.conn.connection() as conn:
                    yield conn
            else:
                yield self.saver.conn

    async def _setup(self, conn: Any) -> None:
        if not self._ready:
            await asetup(conn)
            self._ready = True

    async def alookup(self, thread_id: str, scope: str, call_id: str) -> Any | None:
        from psycopg.rows import tuple_row

        async with self._connection() as conn:
            await self._setup(conn)
            async with conn.cursor(row_factory=tuple_row) as cur:
                await cur.execute(sql(JOURNAL_LOOKUP), (thread_id, scope, call_id))
                row = await cur.fetchone()
        return journal_result(self.serde, row)

    async def arecord(self, thread_id: str, scope: str, call_id: str, result: Any) -> None:
        row = journal_row(thread_id, scope, call_id, self.serde, result)
        async with self._connection() as conn:
            await self._setup(conn)
            async with conn.transaction(), conn.cursor() as cur:
                await cur.execute(sql(JOURNAL_RECORD), row)
