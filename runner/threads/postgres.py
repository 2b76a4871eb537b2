"""The thread database on Postgres: `agentctl run --db postgresql://...`.

`PostgresHome` is `runner.threads.home.Home` in a Postgres database: LangGraph's `PostgresSaver`
(checkpoints) and `PostgresStore` (the store), the thread registry (`agentctl_threads`,
`agentctl_thread_settings`), the database's settings (`agentctl_settings`) and the guards of
`runner.threads.guards` (lease, answer log, tool journal), all tables of that one database. A
thread started here continues from any process on any host that reaches the database, and from
`agentctl serve --db` on the same database.

Threads shared with `agentctl serve --db` (Aegra): the server keeps its own registry of threads,
Aegra's `thread` table (status, metadata with `graph_id`, owner), and lists, reads and resumes
only the threads it has a row for; the checkpoints themselves are LangGraph's tables, which both
read and write alike. So when that table exists (a server has run on the database), a thread
the CLI starts or continues gets a row there too: its `graph_id` is the agent's name (the
server's graph of that agent), its owner Aegra's anonymous identity (serve configures no
authentication), its status `interrupted` while an approval waits, else `idle`. The other way
round, `threads()` and `thread()` also answer for threads only the server knows (agent =
their `graph_id`, no spec file, owner = the user the server authenticated, empty without
authentication), so `agentctl threads --db` lists them with their owner and `agentctl run --db
URL SPEC --thread ID` continues them.

One connection (autocommit, as LangGraph's Postgres classes want it) and one lock serve the
checkpointer, the store and the tables, as in SQLite (a `VACUUM` after pruning takes a
connection of its own: `PostgresRetention`). Tables are created at open, idempotently,
under an advisory lock (`setup_lock`): processes opening a new database at once wait for each
other.

Reads: a session's next turn on a thread starts from the checkpoint its last turn wrote, kept
in memory as sent, once one statement (in the lease's round trip) finds the thread unchanged
since (`runner.threads.latest`); LangGraph reads it, and rebuilds the messages from their
deltas, only when something else wrote to the thread.

Durability: a checkpoint, a journaled tool result, an answer is committed when the call that
writes it returns (the server's own `synchronous_commit`, on by default, decides whether a
commit is flushed to disk before it is acknowledged). A checkpoint with its values, or a task's
writes, is one transaction (`_folding_saver`): one commit, where LangGraph's saver makes one per
row.

The guards on Postgres: the same three tables as in SQLite (`runner.threads.guards`), in the
database of a `postgresql://` thread database (`agentctl run --db postgresql://...`) or of any
LangGraph Postgres checkpointer, beside its `checkpoints` tables:

- `PostgresThreadLease`, `PostgresAnswerLog`, `PostgresToolJournal`: on a psycopg `Connection`
  (or `ConnectionPool`) and the lock its other users share, as `PostgresHome` and a sync
  `PostgresSaver` have them; the lease, given the database's URL (as `PostgresHome` gives it),
  is a session-level advisory lock on a connection of its own, which commits nothing;
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

psycopg is imported only here (the `postgres` extra), and only when a database is opened;
LangGraph's saver and store (and their tables' setup) only when a run or a thread tool first
needs them: `agentctl threads` and `threads show` read the tables with psycopg and decode the
saved messages as plain values (`PostgresHome.saved_transcript`), importing no LangChain.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from runner.errors import RunError, first_line, redact
from runner.threads.guards import (
    HOST,
    JOURNAL_LOOKUP,
    JOURNAL_RECORD,
    Execute,
    HeldWrites,
    Holder,
    TableAnswerLog,
    TableThreadLease,
    TableToolJournal,
    ToolJournal,
    Write,
    journal_result,
    journal_row,
)
from runner.threads.home import Home, ThreadInfo
from runner.threads.latest import CHECK, LatestCheckpoints, ServedLatest
from runner.threads.retention import WAITED, Pruned, TableRetention
from runner.threads.schema import GUARDS, migrate, now
from runner.threads.transcripts import (
    SavedMessage,
    Unreadable,
    decode,
    replayed_messages,
    transcript_of,
)

if TYPE_CHECKING:
    from runner.events import Action

__all__ = [
    "ADOPT",
    "AsyncPostgresToolJournal",
    "PostgresAnswerLog",
    "PostgresDatabase",
    "PostgresHome",
    "PostgresRetention",
    "PostgresThreadLease",
    "PostgresToolJournal",
    "asetup",
    "redact",
    "setup",
    "setup_lock",
]

LOCK_SPACE = 0x61676374
"""First key of agentctl's advisory locks ("agct"): (LOCK_SPACE, 0) while creating tables,
(LOCK_SPACE, hashtext(thread id)) while a compare-and-set on a thread runs."""

SETUP_LOCK = (LOCK_SPACE, 0)
"""The advisory lock held while tables are created."""

LEASE_SPACE = LOCK_SPACE + 1
"""First key of the leases' session-level advisory locks ("agcu"), (LEASE_SPACE, hashtext(thread
id)): a space of its own, since a session-level and a transaction-level lock on one key exclude
each other, and the holder's own compare-and-sets on the thread (`LOCK_SPACE`) must not wait for
its lease."""

POLL = 0.05
"""Seconds between tries for the setup lock."""

_TRY_SETUP = "SELECT pg_try_advisory_xact_lock(%s, %s)"


def sql(text: str) -> str:
    """A statement written with SQLite's `?` parameters, in psycopg's `%s` style."""
    return text.replace("?", "%s")


def setup(conn: Any, statements: Iterable[str] = GUARDS["postgres"]) -> None:
    """Create tables (the guards', for a checkpointer agentctl did not open, by default)
    idempotently, in one transaction holding the setup
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


async def asetup(conn: Any, statements: Iterable[str] = GUARDS["postgres"]) -> None:
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


def _is_pool(conn: Any, kind: str) -> bool:
    """Whether `conn` is a `psycopg_pool` pool of that kind (without importing `psycopg_pool`:
    a pool exists only once it was imported)."""
    pools = sys.modules.get("psycopg_pool")
    return pools is not None and isinstance(conn, getattr(pools, kind))


class PostgresDatabase:
    """`runner.threads.guards.Database` on a psycopg `Connection` (autocommit) or `ConnectionPool`,
    and the lock every user of it shares."""

    order = "seq"

    def __init__(self, conn: Any, lock: Any) -> None:
        import psycopg

        self.conn = conn
        self.lock = lock
        self.errors: tuple[type[Exception], ...] = (psycopg.Error,)
        self._held = HeldWrites()

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        from psycopg.rows import tuple_row

        with self.lock:
            if _is_pool(self.conn, "ConnectionPool"):
                with self.conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                    yield cur
            else:
                with self.conn.cursor(row_factory=tuple_row) as cur:
                    yield cur

    @contextmanager
    def transaction(self, key: str) -> Iterator[Execute]:
        held = self._held.take()
        try:
            with self._transaction(key, held) as execute:
                yield execute
        except BaseException:
            self._held.put_back(held)
            raise

    @contextmanager
    def _transaction(self, key: str, held: list[Write]) -> Iterator[Execute]:
        with self._cursor() as cur, cur.connection.transaction():
            cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_SPACE, key))
            for statement, rows in held:
                cur.executemany(sql(statement), rows)

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
        if not rows or self._held.hold(statement, rows):
            return
        self._flush([*self._held.take_deferred(), (statement, rows)])

    def defer(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        self._held.defer(statement, rows)

    def batched(self) -> AbstractContextManager[None]:
        return self._held.block(self._flush)

    def _flush(self, writes: list[Write]) -> None:
        with self._cursor() as cur:
            if len(writes) == 1 and len(writes[0][1]) == 1:  # one statement: its own commit
                statement, rows = writes[0]
                cur.execute(sql(statement), rows[0])
                return
            # several: one transaction, sent in one round trip
            with cur.connection.pipeline(), cur.connection.transaction():
                for statement, rows in writes:
                    cur.executemany(sql(statement), rows)

    def take_deferred(self) -> list[Write]:
        """The deferred writes, for a caller to `run` in the transaction it is about to commit
        (`FoldingPostgresSaver`), and `put_back` if that transaction fails."""
        return self._held.take_deferred()

    @staticmethod
    def run(cur: Any, writes: list[Write]) -> None:
        for statement, rows in writes:
            cur.executemany(sql(statement), rows)

    def put_back(self, writes: list[Write]) -> None:
        self._held.put_back(writes)


_TAKE = (
    "SELECT pg_try_advisory_lock(%s, hashtext(%s)), set_config('application_name', %s, false), "
    "to_regclass('thread') IS NOT NULL, "
    "to_regclass('runs') IS NOT NULL AND to_regclass('thread') IS NOT NULL, "
    "l.token, l.pid, l.host, l.started, l.since, l.heartbeat "
    "FROM (SELECT 1) AS one LEFT JOIN agentctl_leases l ON l.thread_id = %s"
)
"""Take a thread's lease (its advisory lock, at session level), naming the holder in the
connection's `application_name`, and in the same round trip: whether the server's tables are
there, and the thread's row in `agentctl_leases` (written by the table lease of another host or
an older agentctl)."""

_HOLDER = (
    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = %s "
    "AND l.objid::bigint = hashtext(%s)::bigint & 4294967295 "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
"""The `application_name` of the session holding a thread's lease (a two-key advisory lock is
listed with its first key as `classid`, its second as an unsigned `objid`)."""

_UNLOCK = "SELECT pg_advisory_unlock(%s, hashtext(%s))"

_LATEST = "SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = ''"
"""The thread's latest main-graph checkpoint, sent after `_TAKE` in the same pipeline: a
statement of its own, so it sees what the last holder committed before letting go."""

KEEPALIVE = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
"""The server's TCP keepalives on a lease connection: when the holder's host dies or drops off
the network, the server closes its connection (and so lets go of the lease) after about 25 s,
where its default (the system's, often 2 hours) would keep the thread locked."""


def _holder_name(pid: int, since: float) -> str:
    """A lease connection's `application_name`: who holds it, since when (at most 63 bytes, as
    the server keeps it: a long host name is cut)."""
    return f"agentctl {pid} {int(since)} {HOST}"[:63]


def _named_holder(name: str | None) -> Holder:
    """The holder a lease connection's `application_name` names."""
    parts = (name or "").split(" ", 3)
    if len(parts) == 4 and parts[0] == "agentctl" and parts[1].isdigit() and parts[2].isdigit():
        return Holder(int(parts[1]), parts[3], datetime_of(int(parts[2])), time.time())
    return Holder(0, name or "an unknown session", now(), time.time())


class PostgresThreadLease(TableThreadLease):
    """The lease of a Postgres thread database: a session-level advisory lock on the thread,
    held on a connection of its own for as long as the lease is held.

    Taking it and letting go of it commit nothing (one statement each, no transaction), so a
    turn commits what LangGraph does plus the tool journal. The server lets go of a session's
    locks when its connection closes: a holder that dies, however it dies, frees the thread at
    once (its kernel closes the connection); one whose host dies or is cut off, when the
    server's keepalives give up on the connection (`KEEPALIVE`, about 25 s). The holder names
    itself (pid, host, since when) in its connection's `application_name`, which
    `pg_stat_activity` shows to every user, so `ThreadBusy` says who holds the thread.

    A connection per held thread (one, for a process running one thread at a time), kept for
    the next lease when let go. A row of `agentctl_leases` (the table lease of
    `runner.threads.guards`, written by an agentctl before this lease, or by one given a
    connection without its URL) still counts while its holder lives: read in the same round
    trip as the lock is taken, and so is the thread's latest checkpoint (`_TableLease.latest`,
    once LangGraph's tables are there), which tells a session whether the thread moved since
    its last turn.
    """

    IDLE = 2
    """Lease connections kept open while no lease uses them."""

    def __init__(
        self,
        conn: Any,
        lock: Any,
        *,
        ttl: float = 30.0,
        db: PostgresDatabase | None = None,
        url: str | None = None,
        checkpoints: Callable[[], bool] = lambda: False,
        kept: Callable[[], LatestCheckpoints | None] = lambda: None,
        released: Callable[[str], None] = lambda _thread_id: None,
    ) -> None:
        """`url`: the database's, for the lease connections (without it, the table lease);
        `db`: the home's; `checkpoints`: whether LangGraph's tables are there (then the lease
        reads the thread's latest checkpoint as it is taken: `_TableLease.latest`); `kept`: the
        saver's `runner.threads.latest.LatestCheckpoints`, once there is a saver (then that
        read is its check of the checkpoint it keeps of the thread, if it keeps one);
        `released`: called with a thread's id as its lease is let go."""
        super().__init__(db or PostgresDatabase(conn, lock), ttl=ttl)
        self.url = url
        self.beats = url is None
        self._conns: dict[str, tuple[Any, str, str, bool]] = {}
        """thread id -> (its lease connection, the lease's token, since when, whether the
        server's `thread` table was there when it was taken), of the leases held here."""
        self._idle: list[Any] = []
        self.checkpoints = checkpoints
        self.kept = kept
        self.released = released
        self._latest: dict[str, tuple[str | None]] = {}

    def _latest_seen(self, thread_id: str) -> tuple[str | None] | None:
        with self._held_lock:
            return self._latest.pop(thread_id, None)

    def _connect(self) -> Any:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        options = conninfo_to_dict(str(self.url)).get("options")
        return psycopg.connect(
            str(self.url),
            autocommit=True,
            prepare_threshold=0,
            connect_timeout=10,
            options=f"{options} {KEEPALIVE}" if options else KEEPALIVE,
        )

    def _mine(self, thread_id: str) -> Holder:
        return Holder(os.getpid(), HOST, self._conns[thread_id][2], time.time())

    def _try(self, thread_id: str, token: str) -> Holder | None:
        if self.url is None:
            return super()._try(thread_id, token)
        with self._held_lock:
            if thread_id in self._conns:  # held by this process already
                return self._mine(thread_id)
            conn = self._idle.pop() if self._idle else None
        taken = time.time()
        got = False
        try:
            if conn is None or conn.closed:
                conn = self._connect()
            found: Holder | None = None
            read_latest = self.checkpoints()
            kept = self.kept() if read_latest else None
            entry = kept.servable(thread_id) if kept is not None else None
            for _ in range(3):  # a holder that lets go between the two statements: again
                with conn.pipeline():  # one round trip
                    take = conn.execute(
                        _TAKE,
                        (LEASE_SPACE, thread_id, _holder_name(os.getpid(), taken), thread_id),
                    )
                    if entry is not None and kept is not None:  # its id, and the check
                        latest = conn.execute(CHECK, kept.check_args(thread_id, entry))
                    else:
                        latest = conn.execute(_LATEST, (thread_id,)) if read_latest else None
                got, _, served, runs, *lease_row = take.fetchone()
                if got:
                    break
                holders = conn.execute(_HOLDER, (LEASE_SPACE, thread_id)).fetchall()
                if holders:
                    found = _named_holder(holders[0][0])
                    break
            else:
                found = _named_holder(None)
            if got and lease_row[0] is not None and not self._free(lease_row):
                found = self.row_holder(lease_row)
            elif got and runs:
                self._no_server_run(conn, thread_id)
        except BaseException:
            if conn is not None:  # whatever it holds, let go with it
                conn.close()
            raise
        if found is not None:
            self._let_go(conn, thread_id, got)
            return found
        since = datetime_of(taken)
        with self._held_lock:
            self._conns[thread_id] = (conn, token, since, bool(served))
            if latest is not None:
                row = latest.fetchone()
                self._latest[thread_id] = (row[0] if row else None,)
        if entry is not None and kept is not None:  # for the turn's first `get_tuple`
            kept.checked(thread_id, entry, row)
        return None

    def _no_server_run(self, conn: Any, thread_id: str) -> None:
        """Raise `RunError` if a server shares the database and runs the thread
        (`_ServedThreadLease`); nothing here."""

    def _let_go(self, conn: Any, thread_id: str, got: bool) -> None:
        """Done with `conn` without taking the lease: unlocked if `got`, kept."""
        if got:
            self._unlock(conn, thread_id)
        else:
            self._keep(conn)

    def _unlock(self, conn: Any, thread_id: str) -> None:
        """Let go of the thread's lock on `conn`, and keep the connection for the next lease
        (a broken one is closed: the server has let go of its locks)."""
        import psycopg

        try:
            conn.execute(_UNLOCK, (LEASE_SPACE, thread_id))
        except psycopg.Error:
            conn.close()
            return
        self._keep(conn)

    def _keep(self, conn: Any) -> None:
        with self._held_lock:
            if len(self._idle) < self.IDLE and not conn.closed:
                self._idle.append(conn)
                return
        conn.close()

    def holder(self, thread_id: str) -> Holder | None:
        if self.url is None:
            return super().holder(thread_id)
        with self._held_lock:
            if thread_id in self._conns:
                return self._mine(thread_id)
        rows = self.db.fetch(_HOLDER, (LEASE_SPACE, thread_id))
        if rows:
            return _named_holder(rows[0][0])
        return super().holder(thread_id)

    def served(self) -> bool | None:
        """Whether the server's `thread` table was there when this process took the lease it
        holds (None when it holds none): what a turn goes by, instead of asking again."""
        with self._held_lock:
            return next((held[3] for held in self._conns.values()), None)

    def _release(self, lease: Any) -> None:
        if self.url is None:
            super()._release(lease)
            return
        with self._held_lock:
            self._held.pop(lease.token, None)
            held = self._conns.get(lease.thread_id)
            if held is None or held[1] != lease.token:
                return
            del self._conns[lease.thread_id]
        kept = self.kept()
        if kept is not None:  # a check not used in the holding is no longer true
            kept.checked(lease.thread_id, None, None)
        self.released(lease.thread_id)
        self._unlock(held[0], lease.thread_id)

    def holds(self, thread_id: str) -> bool:
        """Whether this process holds the thread's lease (the advisory lock)."""
        with self._held_lock:
            return thread_id in self._conns

    def close(self) -> None:
        """Close every lease connection (letting go of the leases held on them)."""
        with self._held_lock:
            conns = [held[0] for held in self._conns.values()] + self._idle
            self._conns, self._idle = {}, []
        for conn in conns:
            conn.close()


def datetime_of(seconds: float) -> str:
    """A time (seconds since the epoch) as the tables keep it (`runner.threads.schema.now`)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(int(seconds), UTC).isoformat(timespec="seconds")


class PostgresAnswerLog(TableAnswerLog):
    def __init__(self, conn: Any, lock: Any) -> None:
        super().__init__(PostgresDatabase(conn, lock))


class PostgresToolJournal(TableToolJournal):
    """The tool journal of a sync Postgres thread database or `PostgresSaver`.

    In a thread database, it also knows the calls the model made in this process while it held
    the thread's lease (`made`: their message was just written by the home's saver), and
    `new_call` tells the journal middleware that such a call, looked up the first time, has no
    entry: no other process can have run it (the lease), nor this one (it has not been looked up
    yet). What the journal records as the call returns is unchanged; only the lookup is not sent.
    The calls are forgotten when the lease goes (`forget`)."""

    def __init__(
        self,
        conn: Any,
        lock: Any,
        *,
        serde: Any = None,
        held: Callable[[str], bool] = lambda _thread_id: False,
    ) -> None:
        """`held`: whether this process holds a thread's lease (never, by default)."""
        super().__init__(PostgresDatabase(conn, lock), serde=serde)
        self.held = held
        self._made: dict[str, set[str]] = {}
        self._made_lock = threading.Lock()

    def made(self, thread_id: str, call_ids: list[str]) -> None:
        """The ids of the calls in a message of the main agent this process just wrote."""
        if call_ids and self.held(thread_id):
            with self._made_lock:
                self._made.setdefault(thread_id, set()).update(call_ids)

    def new_call(self, thread_id: str, scope: str, call_id: str) -> bool:
        """Whether the call is one `made` here and not asked about since (once)."""
        if scope:
            return False
        with self._made_lock:
            made = self._made.get(thread_id)
            if made is None or call_id not in made:
                return False
            made.discard(call_id)
        return True

    def forget(self, thread_id: str) -> None:
        with self._made_lock:
            self._made.pop(thread_id, None)

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
        async with self.saver.lock:
            if _is_pool(self.saver.conn, "AsyncConnectionPool"):
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


SERVER_USER = "anonymous"
"""The identity Aegra gives every request when no authentication is configured (serve configures
none): the owner of the threads the CLI shares with the server."""

_STATUS = (
    "CASE WHEN EXISTS (SELECT 1 FROM checkpoint_writes w WHERE w.thread_id = {0} "
    "AND w.checkpoint_ns = '' AND w.channel = '__interrupt__' AND w.checkpoint_id = "
    "(SELECT max(c.checkpoint_id) FROM checkpoints c WHERE c.thread_id = {0} "
    "AND c.checkpoint_ns = '')) THEN 'interrupted' ELSE 'idle' END"
)
"""The server's status of a thread (SQL, `{0}` its id): `interrupted` while an approval waits."""

_METADATA = (
    f"jsonb_build_object('owner', '{SERVER_USER}', 'assistant_id', NULL, 'graph_id', "
    "{0}::text, 'thread_name', '')"
)
"""The server's metadata of a thread (SQL, `{0}` its agent), as Aegra writes it for a new one."""

ADOPT = (
    "INSERT INTO thread (thread_id, status, metadata_json, user_id) SELECT a.thread_id, "
    f"{_STATUS.format('a.thread_id')}, {_METADATA.format('a.agent')}, '{SERVER_USER}' "
    "FROM agentctl_threads a ON CONFLICT (thread_id) DO NOTHING"
)
"""Give the server a row for every thread of the CLI's registry that has none: `agentctl serve
--db` runs it at start, for the threads started before any server ran on the database."""

EXTRA = "pip install 'agentctl[postgres]'"


class PostgresHome(Home):
    """The thread database in Postgres (see the module docstring)."""

    def __init__(self, db: Any = None) -> None:
        url = str(db)
        self.path = redact(url)
        try:
            import psycopg
            from psycopg.rows import dict_row
        except ImportError as exc:
            raise self._missing(exc) from None
        try:
            self.conn: Any = psycopg.connect(
                url, autocommit=True, row_factory=dict_row, prepare_threshold=0, connect_timeout=10
            )
        except (psycopg.Error, ValueError) as exc:
            raise RunError(
                f"cannot open the thread database {self.path}: {first_line(exc)}"
            ) from None
        self._lock = threading.Lock()
        self.db: PostgresDatabase = PostgresDatabase(self.conn, self._lock)
        self.retention: PostgresRetention = PostgresRetention(self.db, url)
        self.lease: _ServedThreadLease = _ServedThreadLease(
            self.conn,
            self._lock,
            db=self.db,
            url=url,
            checkpoints=self._has_checkpointer,
            kept=lambda: getattr(self._checkpointer, "agentctl_latest", None),
            released=self._forget_calls,
        )
        self.answers = PostgresAnswerLog(self.conn, self._lock)
        self._journal: PostgresToolJournal | None = None
        self._checkpointer: Any = None
        self._store: Any = None
        # first: a newer database is refused
        self._guarded(lambda: migrate(self.db, "postgres", str(self.path)))

    def _forget_calls(self, thread_id: str) -> None:
        """The thread's lease was let go: the journal's calls made while it was held no longer
        tell anything (`PostgresToolJournal.made`)."""
        if self._journal is not None:
            self._journal.forget(thread_id)

    def _has_checkpointer(self) -> bool:
        """Whether LangGraph's saver was made here (and so its tables set up)."""
        return self._checkpointer is not None

    def _missing(self, exc: ImportError) -> RunError:
        return RunError(
            f"the thread database {self.path} is on Postgres, which needs the postgres "
            f"extra ({exc.name} is missing): {EXTRA}"
        )

    def _guarded(self, setup: Any) -> Any:
        """Run `setup` (creating or migrating tables) holding the setup lock at session level
        (LangGraph's migrations run statements that cannot run inside a transaction, `CREATE
        INDEX CONCURRENTLY`); on failure, close the connection and say so."""
        import psycopg

        try:
            with setup_lock(self.conn):
                return setup()
        except (psycopg.Error, RunError) as exc:
            self.conn.close()
            if isinstance(exc, RunError):
                raise
            raise RunError(
                f"cannot set up the thread database {self.path}: {first_line(exc)}"
            ) from None

    # LangGraph's saver and store, made (and their tables created or migrated) when a run or a
    # thread tool first needs them: listing and showing threads read the tables directly
    # (`saved_transcript`), importing no LangChain.

    @property
    def checkpointer(self) -> Any:
        if self._checkpointer is None:
            try:
                saver = _folding_saver()(self.conn)
            except ImportError as exc:
                raise self._missing(exc) from None
            saver.lock = self._lock
            saver.agentctl_db = self.db
            saver.agentctl_written = {}
            saver.agentctl_journal = self.journal
            self._guarded(saver.setup)
            self._checkpointer = saver
        return self._checkpointer

    @property
    def store(self) -> Any:
        if self._store is None:
            try:
                from langgraph.store.postgres import PostgresStore
            except ImportError as exc:
                raise self._missing(exc) from None
            store = PostgresStore(self.conn)
            store.lock = self._lock
            self._guarded(store.setup)
            self._store = store
        return self._store

    @property
    def journal(self) -> ToolJournal:
        if self._journal is None:
            self._journal = PostgresToolJournal(self.conn, self._lock, held=self.lease.holds)
        return self._journal

    def saved_transcript(self, thread_id: str) -> tuple[list[SavedMessage], list[Action]] | None:
        """The latest checkpoint's messages and pending approvals read from LangGraph's tables
        (`runner.threads.transcripts`): the messages' value in `checkpoint_blobs`, the
        approvals in `checkpoint_writes`."""
        if not self.retention.ready():
            return None
        rows = self.db.fetch(
            "SELECT c.checkpoint_id, "
            "c.checkpoint -> 'channel_versions' ->> 'messages' IS NOT NULL, b.type, b.blob, "
            "c.metadata -> 'counters_since_delta_snapshot' ->> 'messages' IS NOT NULL, "
            "c.parent_checkpoint_id "
            "FROM checkpoints c LEFT JOIN checkpoint_blobs b "
            "ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns "
            "AND b.channel = 'messages' "
            "AND b.version = c.checkpoint -> 'channel_versions' ->> 'messages' "
            "WHERE c.thread_id = ? AND c.checkpoint_ns = '' "
            "ORDER BY c.checkpoint_id DESC LIMIT 1",
            (thread_id,),
        )
        if not rows:
            return None
        checkpoint_id, versioned, kind, blob, delta, parent = rows[0]
        if not versioned or kind == "empty":
            messages: Any = []
        elif blob is not None:
            messages = decode(kind, bytes(blob))
        elif delta:  # kept as deltas (`runner.agent.state`): rebuilt from the ancestors
            messages = replayed_messages(
                parent,
                lambda cid: self._ancestor(thread_id, cid),
                lambda chain: self._message_writes(thread_id, chain),
            )
        else:
            raise Unreadable("the messages' value is not in checkpoint_blobs")
        writes = self.db.fetch(
            "SELECT type, blob FROM checkpoint_writes WHERE thread_id = ? "
            "AND checkpoint_ns = '' AND checkpoint_id = ? AND channel = '__interrupt__' "
            "ORDER BY task_id, idx",
            (thread_id, checkpoint_id),
        )
        return transcript_of(messages, [(k, None if b is None else bytes(b)) for k, b in writes])

    def _ancestor(self, thread_id: str, checkpoint_id: str) -> tuple[str | None, Any] | None:
        """A checkpoint's parent and its stored messages (None for a delta) for
        `replayed_messages`; None when there is no such checkpoint."""
        rows = self.db.fetch(
            "SELECT c.parent_checkpoint_id, "
            "c.metadata -> 'counters_since_delta_snapshot' ->> 'messages' IS NOT NULL, "
            "b.type, b.blob FROM checkpoints c LEFT JOIN checkpoint_blobs b "
            "ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns "
            "AND b.channel = 'messages' "
            "AND b.version = c.checkpoint -> 'channel_versions' ->> 'messages' "
            "WHERE c.thread_id = ? AND c.checkpoint_ns = '' AND c.checkpoint_id = ?",
            (thread_id, checkpoint_id),
        )
        if not rows:
            return None
        parent, delta, kind, blob = rows[0]
        if delta or blob is None:
            return parent, None
        return parent, [] if kind == "empty" else decode(kind, bytes(blob))

    def _message_writes(
        self, thread_id: str, chain: list[str]
    ) -> list[tuple[str, str | None, bytes | None]]:
        rows = self.db.fetch(
            "SELECT checkpoint_id, type, blob FROM checkpoint_writes WHERE thread_id = ? "
            "AND checkpoint_ns = '' AND channel = 'messages' AND checkpoint_id = ANY(?) "
            "ORDER BY task_path, task_id, idx",
            (thread_id, chain),
        )
        return [(c, k, None if b is None else bytes(b)) for c, k, b in rows]

    # ------------------------------------------------------- threads shared with the server

    def _served(self) -> bool:
        """Whether Aegra's thread table is in this database: as the lease this process holds
        found it when taken (a turn asks once), else looked up now (a server may start on the
        database while this process runs)."""
        served = self.lease.served()
        if served is not None:
            return served
        rows = self.db.fetch("SELECT to_regclass('thread') IS NOT NULL", ())
        return bool(rows and rows[0][0])

    def _publish(self, thread_id: str, agent: str | None) -> None:
        """Create or update the server's row of the thread (see the module docstring)."""
        if not self._served():
            return
        self.db.write(
            "INSERT INTO thread (thread_id, status, metadata_json, user_id) "
            f"SELECT ?, {_STATUS.format('?')}, {_METADATA.format('?')}, '{SERVER_USER}' "
            "ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status, updated_at = now(), "
            "metadata_json = CASE WHEN thread.metadata_json->>'graph_id' IS NULL "
            "THEN thread.metadata_json || jsonb_build_object('graph_id', "
            "excluded.metadata_json->>'graph_id') ELSE thread.metadata_json END",
            [(thread_id, thread_id, thread_id, agent)],
        )

    def register(self, thread_id: str, *, agent: str, spec: str | None, first_message: str) -> None:
        super().register(thread_id, agent=agent, spec=spec, first_message=first_message)
        self._publish(thread_id, agent)

    def _republish(self, thread_id: str) -> None:
        """The server's row of the thread, its status as it is now (the registry's row read
        only when the server's table is there)."""
        if self._served():
            info = self.thread(thread_id)
            self._publish(thread_id, info.agent if info is not None else None)

    def turn_ended(self, thread_id: str) -> None:
        self._republish(thread_id)  # idle, or interrupted: as the turn left it

    def touch(self, thread_id: str, *, later: bool = False) -> None:
        super().touch(thread_id, later=later)
        self._republish(thread_id)

    def _served_threads(self, where: str, args: tuple[Any, ...]) -> list[ThreadInfo]:
        if not self._served():
            return []
        stamp = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"')"
        rows = self.db.fetch(
            f"SELECT t.thread_id, coalesce(t.metadata_json->>'graph_id', ''), NULL, "
            f"{stamp.format('t.created_at')}, {stamp.format('t.updated_at')}, '', "
            "CASE WHEN t.user_id = ? THEN '' ELSE t.user_id END FROM thread t "
            "WHERE NOT EXISTS (SELECT 1 FROM agentctl_threads a WHERE a.thread_id = t.thread_id) "
            f"{where}",
            (SERVER_USER, *args),
        )
        return [ThreadInfo(*row) for row in rows]

    def thread(self, thread_id: str) -> ThreadInfo | None:
        found = super().thread(thread_id)
        if found is not None:
            return found
        served = self._served_threads("AND t.thread_id = ?", (thread_id,))
        return served[0] if served else None

    def delete(self, thread_id: str) -> bool:
        found = super().delete(thread_id)
        if self._served():  # and the server's row, with its runs (cascade)
            found = (
                bool(
                    self.db.fetch(
                        "DELETE FROM thread WHERE thread_id = ? RETURNING 1", (thread_id,)
                    )
                )
                or found
            )
        return found

    def threads(self, *, agent: str | None = None) -> list[ThreadInfo]:
        found = super().threads(agent=agent)
        served = self._served_threads(
            "AND t.metadata_json->>'graph_id' = ?" if agent else "", (agent,) if agent else ()
        )
        if not served:
            return found
        return sorted(found + served, key=lambda t: t.updated_at, reverse=True)

    def last_written(self, thread_id: str) -> str | None:
        written = getattr(self._checkpointer, "agentctl_written", {}).get(thread_id)
        return written or super().last_written(thread_id)

    def close(self) -> None:
        self.retention.close()
        deferred = self.db._held.take_deferred()  # the bookkeeping no commit took yet
        if deferred and not self.conn.closed:
            with contextlib.suppress(*self.db.errors):
                self.db._flush(deferred)
        self.lease.close()
        with self._lock:  # not while another thread is in the middle of a write
            self.conn.close()


_SAVER: Any = None


class _HeldStatements:
    """A cursor that holds the statements run on it, to send them later (`send`); for
    statements whose results nobody reads. A checkpoint's JSON is encoded here, once, and
    sent as encoded (`runner.threads.latest` keeps the text)."""

    def __init__(self, checkpoint_query: str) -> None:
        self.statements: list[tuple[str, Any, list[Any]]] = []
        self.rows = 0
        self.checkpoint_query = checkpoint_query

    def execute(self, query: Any, params: Any = None) -> None:
        if query is self.checkpoint_query or query == self.checkpoint_query:
            params = (*params[:4], _encoded(params[4]), _encoded(params[5]))
        self.statements.append(("execute", query, [params]))
        self.rows += 1

    def executemany(self, query: Any, params_seq: Any) -> None:
        rows = list(params_seq)
        if rows:
            self.statements.append(("executemany", query, rows))
            self.rows += len(rows)

    def send(self, cur: Any) -> None:
        for method, query, rows in self.statements:
            if method == "execute":
                cur.execute(query, rows[0])
            else:
                cur.executemany(query, rows)


def _tool_call_ids(writes: Any) -> list[str]:
    """The ids of the tool calls in the messages among a task's writes."""
    ids: list[str] = []
    for channel, value in writes:
        if channel != "messages":
            continue
        for message in value if isinstance(value, list) else [value]:
            for call in getattr(message, "tool_calls", None) or ():
                if call.get("id"):
                    ids.append(str(call["id"]))
    return ids


def _encoded(value: Any) -> Any:
    """A psycopg `Jsonb` whose text is encoded now (and what it sends)."""
    from psycopg.types.json import Jsonb

    text = json.dumps(value.obj)
    return Jsonb(value.obj, dumps=lambda _obj: text)


def _folding_saver() -> Any:
    """LangGraph's `PostgresSaver` whose writes (a checkpoint with its values, a task's writes)
    are each committed once, with the home's deferred writes (`Database.defer`), and which
    remembers the latest main-graph checkpoint it wrote to each thread (`Home.last_written`).

    LangGraph's saver sends a checkpoint's statements in a pipeline on an autocommit
    connection: each row its own transaction, each waiting for the server to flush the
    write-ahead log (about 3 ms where it goes to disk, most of a turn). Here the statements of
    one write (LangGraph's `put`, `put_writes` and `delete_thread` read no result back) are
    held, then sent in one pipeline: in one transaction (`BEGIN` ... `COMMIT` in the pipeline,
    no round trip more) when they are more than one row or deferred writes go with them, else
    alone. In one transaction a checkpoint is also whole or absent after a crash, never its
    values without its row.

    It also keeps the latest checkpoint it wrote to each thread, as sent, and serves LangGraph's
    next read of it from memory once the database is checked to still have it so
    (`runner.threads.latest.ServedLatest`); and it tells the home's journal the tool calls the
    main agent's model just made (`PostgresToolJournal.made`)."""
    global _SAVER
    if _SAVER is None:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.pq import TransactionStatus
        from psycopg.rows import dict_row

        _IDLE = TransactionStatus.IDLE

        class FoldingPostgresSaver(ServedLatest, PostgresSaver):
            agentctl_db: PostgresDatabase
            agentctl_written: dict[str, str]
            agentctl_journal: PostgresToolJournal

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.agentctl_latest = LatestCheckpoints()
                self._kinds = {
                    self.UPSERT_CHECKPOINTS_SQL: "checkpoint",
                    self.UPSERT_CHECKPOINT_BLOBS_SQL: "blobs",
                    self.UPSERT_CHECKPOINT_WRITES_SQL: "upsert",
                    self.INSERT_CHECKPOINT_WRITES_SQL: "insert",
                }
                self._reading = threading.local()

            @contextmanager
            def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
                if not pipeline or self.pipe is not None or _is_pool(self.conn, "ConnectionPool"):
                    if pipeline:  # writes not seen here: nothing kept is sure any more
                        self.agentctl_latest.forget()
                    with super()._cursor(pipeline=pipeline) as cur:
                        yield cur
                    return
                held = _HeldStatements(self.UPSERT_CHECKPOINTS_SQL)
                yield held  # LangGraph's statements (it reads no result back), then sent:
                deferred: list[Write] = []
                conn: Any = self.conn
                with self.lock, conn.cursor(binary=True, row_factory=dict_row) as cur:
                    try:
                        with conn.pipeline():  # in one round trip
                            deferred = self.agentctl_db.take_deferred()
                            if deferred or held.rows > 1:  # one commit for all, not one a row
                                cur.execute("BEGIN")
                                self.agentctl_db.run(cur, deferred)
                                held.send(cur)
                                cur.execute("COMMIT")
                            else:  # one row: its own commit already
                                held.send(cur)
                    except BaseException:
                        self.agentctl_latest.forget()
                        self.agentctl_db.put_back(deferred)
                        if not conn.closed and conn.info.transaction_status != _IDLE:
                            conn.execute("ROLLBACK")
                        raise
                    self.agentctl_latest.sent(held.statements, self._kinds)

            def put_writes(
                self, config: Any, writes: Any, task_id: str, task_path: str = ""
            ) -> None:
                super().put_writes(config, writes, task_id, task_path)
                configurable = config["configurable"]
                calls = [] if configurable.get("checkpoint_ns") else _tool_call_ids(writes)
                if calls:  # the main agent's model just asked for them: the journal knows
                    self.agentctl_journal.made(str(configurable["thread_id"]), calls)

            def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
                saved = super().put(config, checkpoint, metadata, new_versions)
                configurable = config["configurable"]
                if not configurable.get("checkpoint_ns"):
                    self.agentctl_written[str(configurable["thread_id"])] = checkpoint["id"]
                return saved

        _SAVER = FoldingPostgresSaver
    return _SAVER


class _ServedThreadLease(PostgresThreadLease):
    """The lease, also refused while the server (Aegra, on the same database) has a run of the
    thread pending or running: the server's runs take no agentctl lease. (The home gives it its
    URL: the table lease, without one, would not look.)"""

    def _no_server_run(self, conn: Any, thread_id: str) -> None:
        active = conn.execute(
            "SELECT run_id, status FROM runs WHERE thread_id = %s "
            "AND status IN ('pending', 'running') ORDER BY created_at LIMIT 1",
            (thread_id,),
        ).fetchall()
        if active:
            run_id, status = active[0]
            raise RunError(
                f"thread {thread_id} has a run {status} on the server (run {run_id}); "
                "continue it when that run has finished"
            )


VACUUM_MIN_DEAD = 100
"""Dead rows (left by pruning, or by LangGraph's upserts) a checkpoint table, or its TOAST table
(where a large value's chunks of about 2 KB go), holds before agentctl vacuums it..."""

VACUUM_DEAD_FRACTION = 0.5
"""... plus this fraction of its live rows: the table holds at most about half its live size
again in dead rows, and a vacuum (whose cost grows with the table) comes after a number of
deleted rows that grows with it too. A long thread replaces about a third of its kept
checkpoints' values each turn: a vacuum every two or three turns, in the background."""

_DEAD = (
    "SELECT c.relname FROM pg_class c JOIN pg_stat_all_tables s ON s.relid = c.oid "
    "LEFT JOIN pg_stat_all_tables t ON t.relid = c.reltoastrelid "
    "WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY(?) "
    "AND (s.n_dead_tup >= ? + ? * s.n_live_tup OR t.n_dead_tup >= ? + ? * t.n_live_tup)"
)
_SIZE = "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) FROM unnest(?::text[]) t"


class PostgresRetention(TableRetention):
    """`runner.threads.retention.TableRetention` for `langgraph-checkpoint-postgres`'s tables
    (`checkpoints`, `checkpoint_writes`, `checkpoint_blobs`).

    Space: a deleted row's space is reusable only once a `VACUUM` has passed over it. The
    server's autovacuum may be off for these tables, or slow to come, and a long thread then
    grows with the square of its length as if nothing were pruned. So after a prune that
    removed rows, `reclaim` looks at the server's count of dead rows in the three tables and
    the tool journal (`VACUUMED`), and their TOAST tables (`pg_stat_all_tables`, one query)
    and, for those holding more than `VACUUM_MIN_DEAD` plus `VACUUM_DEAD_FRACTION` of their
    live rows, runs a plain `VACUUM` (no lock that blocks reading or writing) on a connection
    of its own in a background thread: the turn does not wait for it. One runs at a time,
    without truncating the tables (that takes a lock the run's statements would wait for);
    `close` waits for it (the end of a run). `reclaim(force=True)` (`agentctl threads
    keep-checkpoints`) vacuums the four tables now. A vacuum that fails (say, the user does not
    own the tables) costs only space and is not reported."""

    TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
    VACUUMED = (*TABLES, "agentctl_tool_journal")
    """The tables a prune leaves dead rows in: LangGraph's, and the tool journal's entries no
    checkpoint left can need."""

    def __init__(self, db: PostgresDatabase, url: str | None = None) -> None:
        super().__init__(db)
        self.url = url
        """The database's URL, for the vacuum's own connection (None: never vacuum)."""
        self._ready = False
        self._removed = False
        """Whether rows were removed since the last look at the dead rows."""
        self._vacuum: threading.Thread | None = None
        self._conn: Any = None
        """The vacuum's connection, opened at the first vacuum."""
        self._flush_stats = True
        """Whether the server has `pg_stat_force_next_flush` (PostgreSQL 15 and later)."""
        self.vacuumed: list[list[str]] = []
        """The tables of each vacuum this process ran, in order (what tests and benches read)."""

    def ready(self) -> bool:
        if not self._ready:  # LangGraph's tables, created by the saver's setup: never dropped
            rows = self.db.fetch(
                "SELECT count(to_regclass(t)) FROM unnest(?::text[]) t", (list(self.TABLES),)
            )
            self._ready = bool(rows and rows[0][0] == len(self.TABLES))
        return self._ready

    def prune(self, thread_id: str, keep: int | None) -> Pruned:
        pruned = super().prune(thread_id, keep)
        self._removed = self._removed or bool(pruned.checkpoints)
        return pruned

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        self._removed = True

    def crowded(self) -> list[str]:
        """The checkpoint tables with more dead rows than the thresholds allow. A backend
        reports its counts to the server's statistics at most once a second, so the rows this
        connection's prune just deleted are first flushed (`pg_stat_force_next_flush`, from
        PostgreSQL 15: the flush happens before the server answers); without it the counts
        lagged by up to a second, and how many vacuums a thread got depended on timing."""
        if self._flush_stats:
            try:
                self.db.fetch("SELECT pg_stat_force_next_flush()")
            except self.db.errors:
                self._flush_stats = False  # before PostgreSQL 15: the counts may lag
        limits = (VACUUM_MIN_DEAD, VACUUM_DEAD_FRACTION)
        rows = self.db.fetch(_DEAD, (list(self.VACUUMED), *limits, *limits))
        return sorted(str(row[0]) for row in rows)

    def reclaim(self, *, force: bool = False) -> int:
        if self.url is None or not self.ready():
            return 0
        if force:
            self.wait()
            (before,) = self.db.fetch(_SIZE, (list(self.VACUUMED),))[0]
            self._run_vacuum(list(self.VACUUMED), truncate=True)
            (after,) = self.db.fetch(_SIZE, (list(self.VACUUMED),))[0]
            return max(int(before) - int(after), 0)
        if not self._removed or (self._vacuum is not None and self._vacuum.is_alive()):
            return 0
        self._removed = False
        tables = self.crowded()
        if tables:
            self._vacuum = threading.Thread(
                target=self._run_vacuum, args=(tables,), name="agentctl-vacuum", daemon=True
            )
            self._vacuum.start()
        return 0

    def _run_vacuum(self, tables: list[str], *, truncate: bool = False) -> None:
        """`VACUUM` the tables on a connection of its own (it cannot run in a transaction, and
        the home's connection stays free for the run), kept for the next one. In the background
        without `TRUNCATE`: giving the tables' empty tail back to the file system takes a lock
        that stops the run's own statements, and the next checkpoints fill that space again."""
        import psycopg

        options = "" if truncate else " (TRUNCATE false)"
        try:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(str(self.url), autocommit=True, connect_timeout=10)
            self._conn.execute(f"VACUUM{options} {', '.join(tables)}")
        except psycopg.Error:
            return
        self.vacuumed.append(tables)

    def wait(self) -> None:
        """Until the background vacuum, if one runs, has finished."""
        if self._vacuum is not None:
            self._vacuum.join()
            self._vacuum = None

    def close(self) -> None:
        """Wait for the vacuum, and close its connection."""
        self.wait()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    WRITES = "checkpoint_writes"
    ROWS = (
        "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
        "metadata->>'source', metadata->'parents'->>'', "
        "ARRAY(SELECT jsonb_object_keys(CASE WHEN jsonb_typeof(metadata->"
        "'counters_since_delta_snapshot') = 'object' "
        "THEN metadata->'counters_since_delta_snapshot' END)), "
        f"{WAITED.format(writes='checkpoint_writes')} FROM checkpoints c WHERE thread_id = ?"
    )
    SNAPSHOT_NEXT = (
        "UPDATE checkpoints SET metadata = jsonb_set(metadata, "
        "'{counters_since_delta_snapshot}', CAST(? AS jsonb)) "
        "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?"
    )
    OWN = ("checkpoint_blobs", "checkpoints")

    def values_of(self, execute: Execute, thread_id: str, gone: list[tuple[str, str]]) -> set[Any]:
        """The channel values (`checkpoint_blobs`) the removed checkpoints name; those of a
        checkpoint being written right now (another process, without the lease) are never among
        them."""
        removed = set(gone)
        return {
            (ns, channel, version)
            for ns, cid, channel, version in execute(
                "SELECT c.checkpoint_ns, c.checkpoint_id, v.key, v.value FROM checkpoints c, "
                "jsonb_each_text(c.checkpoint -> 'channel_versions') v "
                "WHERE c.thread_id = ? AND c.checkpoint_id = ANY(?)",
                (thread_id, [cid for _, cid in gone]),
            )
            if (ns, cid) in removed
        }

    def drop_values(self, execute: Execute, thread_id: str, values: set[Any]) -> None:
        """Remove the `values` (namespace, channel, version) no kept checkpoint names: one
        statement."""
        if not values:
            return
        namespaces, channels, versions = (list(column) for column in zip(*values, strict=True))
        execute(
            "DELETE FROM checkpoint_blobs b "
            "USING unnest(?::text[], ?::text[], ?::text[]) AS g(ns, channel, version) "
            "WHERE b.thread_id = ? AND b.checkpoint_ns = g.ns AND b.channel = g.channel "
            "AND b.version = g.version AND NOT EXISTS (SELECT 1 FROM checkpoints k "
            "WHERE k.thread_id = b.thread_id AND k.checkpoint_ns = b.checkpoint_ns "
            "AND k.checkpoint -> 'channel_versions' ->> b.channel = b.version)",
            (namespaces, channels, versions, thread_id),
        )
