"""What keeps a thread whole when processes crash or meet: a lease, an answer log, a tool journal.

Three small tables live beside LangGraph's checkpoints in the thread database, written on the
same connection under the same lock (see `runner.run.Home`):

- `agentctl_leases`: which process runs a thread now. One runner per thread: a second process
  gets `ThreadBusy` naming the holder (pid, host, since when), or waits. A holder that dies loses
  its lease: on the same host as soon as its process is gone, elsewhere when its heartbeat is
  older than the lease's time to live.
- `agentctl_answers`: the answer given to each approval (pending interrupt). Answering is a
  compare-and-set on the interrupt: the first answer is recorded and runs; any other is told
  who answered it and how. A recorded answer that was cut off by a crash is applied again when
  the thread continues, so an answer is never lost and never doubled.
- `agentctl_tool_journal`: the result of every finished tool call, keyed by thread, scope (the
  chain of `task` calls it runs under, for subagents) and tool-call id, written the moment the
  call returns. `runner.middleware.journal` reads it before running a call, so a call that
  finished before a crash is never run again; only a call in flight at the crash may repeat.

Each is written behind a small protocol (`ThreadLease`, `AnswerLog`, `ToolJournal`) with one
SQLite implementation; a Postgres checkpointer (`agentctl serve --db postgresql://`) holds the
same three as tables in its database. The SQLite ones take SQLite's write lock
(`BEGIN IMMEDIATE`) for every compare-and-set, which is what makes them safe between processes.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from runner.errors import RunError

__all__ = [
    "AlreadyAnswered",
    "Answer",
    "AnswerLog",
    "AsyncSqliteToolJournal",
    "Holder",
    "Lease",
    "SqliteAnswerLog",
    "SqliteThreadLease",
    "SqliteToolJournal",
    "ThreadBusy",
    "ThreadLease",
    "ToolJournal",
    "setup",
]

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS agentctl_leases (thread_id TEXT PRIMARY KEY, token TEXT NOT NULL, "
    "pid INTEGER NOT NULL, host TEXT NOT NULL, started TEXT, since TEXT NOT NULL, "
    "heartbeat REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS agentctl_answers (thread_id TEXT NOT NULL, "
    "interrupt_id TEXT NOT NULL, summary TEXT NOT NULL, resume TEXT NOT NULL, "
    "pid INTEGER NOT NULL, host TEXT NOT NULL, answered_at TEXT NOT NULL, "
    "PRIMARY KEY (thread_id, interrupt_id))",
    "CREATE TABLE IF NOT EXISTS agentctl_tool_journal (thread_id TEXT NOT NULL, "
    "scope TEXT NOT NULL, call_id TEXT NOT NULL, type TEXT NOT NULL, result BLOB NOT NULL, "
    "recorded_at TEXT NOT NULL, PRIMARY KEY (thread_id, scope, call_id))",
)


def setup(conn: sqlite3.Connection) -> None:
    """Create the three tables (idempotent)."""
    for statement in SCHEMA:
        conn.execute(statement)
    conn.commit()


def forget_thread(conn: sqlite3.Connection, thread_id: str) -> None:
    """Drop what the three tables hold about a deleted thread (the caller commits)."""
    for table in ("agentctl_leases", "agentctl_answers", "agentctl_tool_journal"):
        conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


HOST = socket.gethostname()


def process_started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, from /proc), to tell a live holder
    from a new process that reuses a dead holder's pid; None where /proc is not there."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int, started: str | None) -> bool:
    """Whether process `pid` (started at `started`, when known) still runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, run by another user
    if started is not None:
        now = process_started(pid)
        if now is not None and now != started:
            return False  # the pid was reused by a new process
    return True


@contextmanager
def _immediate(conn: sqlite3.Connection, lock: threading.Lock) -> Iterator[sqlite3.Connection]:
    """One write transaction, begun with SQLite's write lock held (so a read in it and the write
    that depends on it are one step for every process), committed or rolled back."""
    with lock:
        if conn.in_transaction:
            conn.commit()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


# --------------------------------------------------------------------------- the lease


@dataclass(frozen=True)
class Holder:
    """The process that holds a thread's lease."""

    pid: int
    host: str
    since: str
    """When it took the lease (ISO 8601, UTC)."""
    heartbeat: float
    """When it last said it was alive (seconds since the epoch)."""

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, since {self.since}"


class ThreadBusy(RunError):
    """Another process runs the thread."""

    def __init__(self, thread_id: str, holder: Holder, *, waited: float | None = None) -> None:
        self.thread_id = thread_id
        self.holder = holder
        after = f" (waited {waited:g} s)" if waited else ""
        super().__init__(
            f"thread {thread_id} is being run by another process ({holder.describe()}){after}; "
            "wait for it with --wait [SECONDS], or try again when it is done"
        )


class AlreadyAnswered(RunError):
    """The approval was answered by someone else first (or the thread went on since)."""


class Lease(Protocol):
    """A held lease: released once, by its holder."""

    thread_id: str

    def release(self) -> None: ...


class ThreadLease(Protocol):
    """One runner per thread.

    `acquire` returns a held `Lease` or raises `ThreadBusy`; with `wait` (seconds, `inf` for no
    limit) it retries until the lease is free. The holder keeps it alive (a heartbeat) until it
    releases it; a lease whose holder died is free again.

    The SQLite implementation is `SqliteThreadLease`. A Postgres one is a table of the same
    shape: take the lease with `INSERT ... ON CONFLICT (thread_id) DO UPDATE ... WHERE
    leases.heartbeat < now() - ttl` (the row comes back only when it was taken), heartbeat with
    `UPDATE ... WHERE token = $1`, release with `DELETE ... WHERE token = $1`. (A session-level
    `pg_try_advisory_lock(hashtext(thread_id))` also works, and the server frees it when the
    holder's connection drops; but it ties the lease to one connection of a pool.)
    """

    def acquire(self, thread_id: str, *, wait: float | None = None) -> Lease: ...

    def holder(self, thread_id: str) -> Holder | None: ...


class _SqliteLease:
    def __init__(self, owner: SqliteThreadLease, thread_id: str, token: str) -> None:
        self.owner = owner
        self.thread_id = thread_id
        self.token = token
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.owner._release(self)


class SqliteThreadLease:
    """`ThreadLease` on the thread database: a row per thread being run.

    A row is free to take when its holder is gone: on this host, when its process no longer
    exists (checked at once, so a crash frees the thread for the next command); on another host
    sharing the database file, when its heartbeat is older than `ttl` seconds. The holder's
    heartbeat thread refreshes its rows every `ttl / 3` seconds.
    """

    POLL = 0.1
    """Seconds between tries while waiting."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock, *, ttl: float = 30.0):
        self.conn = conn
        self.lock = lock
        self.ttl = ttl
        self._held: dict[str, _SqliteLease] = {}
        self._held_lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._started = process_started(os.getpid())

    def _free(self, row: Any) -> bool:
        _token, pid, host, started, _since, heartbeat = row
        if host == HOST:
            return not process_alive(int(pid), started)
        return time.time() - float(heartbeat) > self.ttl

    def _try(self, thread_id: str, token: str) -> Holder | None:
        """Take the lease (None) or say who holds it."""
        with _immediate(self.conn, self.lock) as conn:
            row = conn.execute(
                "SELECT token, pid, host, started, since, heartbeat FROM agentctl_leases "
                "WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            if row is not None and not self._free(row):
                return Holder(int(row[1]), str(row[2]), str(row[4]), float(row[5]))
            conn.execute(
                "INSERT OR REPLACE INTO agentctl_leases VALUES (?, ?, ?, ?, ?, ?, ?)",
                (thread_id, token, os.getpid(), HOST, self._started, _now(), time.time()),
            )
        return None

    def acquire(self, thread_id: str, *, wait: float | None = None) -> _SqliteLease:
        import uuid

        token = uuid.uuid4().hex
        started = time.monotonic()
        while True:
            holder = self._try(thread_id, token)
            if holder is None:
                break
            waited = time.monotonic() - started
            if wait is None or waited >= wait:
                raise ThreadBusy(thread_id, holder, waited=round(waited, 1) if wait else None)
            time.sleep(min(self.POLL, max(wait - waited, 0.0)))
        lease = _SqliteLease(self, thread_id, token)
        with self._held_lock:
            self._held[token] = lease
            if self._beat is None or not self._beat.is_alive():
                self._stop.clear()
                self._beat = threading.Thread(
                    target=self._heartbeat, name="agentctl-lease", daemon=True
                )
                self._beat.start()
        return lease

    def holder(self, thread_id: str) -> Holder | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT token, pid, host, started, since, heartbeat FROM agentctl_leases "
                "WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
        if row is None or self._free(row):
            return None
        return Holder(int(row[1]), str(row[2]), str(row[4]), float(row[5]))

    def _release(self, lease: _SqliteLease) -> None:
        with self._held_lock:
            self._held.pop(lease.token, None)
            if not self._held:
                self._stop.set()
        try:
            with self.lock:
                self.conn.execute(
                    "DELETE FROM agentctl_leases WHERE thread_id = ? AND token = ?",
                    (lease.thread_id, lease.token),
                )
                self.conn.commit()
        except sqlite3.ProgrammingError:
            pass  # the database is closed already: the row is freed by the process check

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            with self._held_lock:
                tokens = list(self._held)
            try:
                with self.lock:
                    self.conn.executemany(
                        "UPDATE agentctl_leases SET heartbeat = ? WHERE token = ?",
                        [(time.time(), token) for token in tokens],
                    )
                    self.conn.commit()
            except sqlite3.Error:
                return  # closed or failing: the holder's process check still guards the row


# --------------------------------------------------------------------------- approvals


@dataclass(frozen=True)
class Answer:
    """The answer recorded for one pending interrupt."""

    interrupt_id: str
    summary: str
    """The decisions in words: "approve", "approve, reject"."""
    resume: Any
    """What was sent to the interrupt (LangGraph's `Command(resume=...)` value for it)."""
    pid: int
    host: str
    answered_at: str

    def describe(self) -> str:
        by = f"pid {self.pid}" if self.host == HOST else f"pid {self.pid} on {self.host}"
        return f"already answered ({self.summary}, by {by} at {self.answered_at})"

    @property
    def process_gone(self) -> bool:
        """The answering process ended (known only on the same host)."""
        return self.host == HOST and not process_alive(self.pid, None)


class AnswerLog(Protocol):
    """Approvals answered once: `claim` records the answers to pending interrupts, all or none,
    unless one of them was answered already (it then returns that answer). A Postgres log is the
    same table, claimed with `INSERT ... ON CONFLICT DO NOTHING` in one transaction."""

    def claim(self, thread_id: str, answers: Mapping[str, tuple[str, Any]]) -> Answer | None: ...

    def recorded(self, thread_id: str, interrupt_ids: list[str]) -> dict[str, Answer]: ...

    def last(self, thread_id: str) -> Answer | None: ...

    def withdraw(self, thread_id: str, interrupt_ids: list[str]) -> None:
        """Take back this process's answers that could not run (the thread was busy)."""


def _answer(row: Any) -> Answer:
    interrupt_id, summary, resume, pid, host, answered_at = row
    return Answer(interrupt_id, summary, json.loads(resume), int(pid), host, answered_at)


class SqliteAnswerLog:
    _COLUMNS = "interrupt_id, summary, resume, pid, host, answered_at"

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock

    def claim(self, thread_id: str, answers: Mapping[str, tuple[str, Any]]) -> Answer | None:
        """Record `answers` (interrupt id -> (summary, resume value)); None when they were
        recorded, else the answer given before to one of those interrupts."""
        with _immediate(self.conn, self.lock) as conn:
            for interrupt_id in answers:
                row = conn.execute(
                    f"SELECT {self._COLUMNS} FROM agentctl_answers "
                    "WHERE thread_id = ? AND interrupt_id = ?",
                    (thread_id, interrupt_id),
                ).fetchone()
                if row is not None:
                    return _answer(row)
            now = _now()
            conn.executemany(
                "INSERT INTO agentctl_answers VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (thread_id, iid, summary, json.dumps(resume), os.getpid(), HOST, now)
                    for iid, (summary, resume) in answers.items()
                ],
            )
        return None

    def recorded(self, thread_id: str, interrupt_ids: list[str]) -> dict[str, Answer]:
        if not interrupt_ids:
            return {}
        marks = ", ".join("?" * len(interrupt_ids))
        with self.lock:
            rows = self.conn.execute(
                f"SELECT {self._COLUMNS} FROM agentctl_answers WHERE thread_id = ? "
                f"AND interrupt_id IN ({marks})",
                (thread_id, *interrupt_ids),
            ).fetchall()
        return {row[0]: _answer(row) for row in rows}

    def withdraw(self, thread_id: str, interrupt_ids: list[str]) -> None:
        with self.lock:
            self.conn.executemany(
                "DELETE FROM agentctl_answers WHERE thread_id = ? AND interrupt_id = ? AND pid = ? "
                "AND host = ?",
                [(thread_id, iid, os.getpid(), HOST) for iid in interrupt_ids],
            )
            self.conn.commit()

    def last(self, thread_id: str) -> Answer | None:
        with self.lock:
            row = self.conn.execute(
                f"SELECT {self._COLUMNS} FROM agentctl_answers WHERE thread_id = ? "
                "ORDER BY rowid DESC LIMIT 1",
                (thread_id,),
            ).fetchone()
        return _answer(row) if row else None


# --------------------------------------------------------------------------- the tool journal


class ToolJournal(Protocol):
    """Finished tool calls and their results, keyed by (thread, scope, call id).

    `record` must be durable when it returns (the result is what a re-run of the call after a
    crash gets instead of running the tool). A Postgres journal is the same table, written with
    `INSERT ... ON CONFLICT DO NOTHING` and committed at once."""

    def lookup(self, thread_id: str, scope: str, call_id: str) -> Any | None: ...

    def record(self, thread_id: str, scope: str, call_id: str, result: Any) -> None: ...


class SqliteToolJournal:
    """`ToolJournal` in a SQLite database, sharing the checkpointer's connection and lock.
    Results are stored with LangGraph's checkpoint serializer (messages, `Command`s)."""

    def __init__(self, conn: sqlite3.Connection, lock: Any, *, serde: Any = None) -> None:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        self.conn = conn
        self.lock = lock
        self.serde = serde or JsonPlusSerializer()
        with lock:
            setup(conn)

    def lookup(self, thread_id: str, scope: str, call_id: str) -> Any | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT type, result FROM agentctl_tool_journal "
                "WHERE thread_id = ? AND scope = ? AND call_id = ?",
                (thread_id, scope, call_id),
            ).fetchone()
        return None if row is None else self.serde.loads_typed((row[0], row[1]))

    def record(self, thread_id: str, scope: str, call_id: str, result: Any) -> None:
        kind, data = self.serde.dumps_typed(result)
        with self.lock:
            self.conn.execute(
                "INSERT OR IGNORE INTO agentctl_tool_journal VALUES (?, ?, ?, ?, ?, ?)",
                (thread_id, scope, call_id, kind, data, _now()),
            )
            self.conn.commit()


class AsyncSqliteToolJournal:
    """`ToolJournal`'s async twin for LangGraph's `AsyncSqliteSaver` (aiosqlite), on its
    connection and lock: `alookup` / `arecord`, for graphs run with `ainvoke` / `astream`."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.serde = saver.serde
        self._ready = False

    async def _setup(self) -> None:
        if not self._ready:
            await self.saver.setup()  # connects, like the saver's own first call
            async with self.saver.lock:
                for statement in SCHEMA:
                    await self.saver.conn.execute(statement)
                await self.saver.conn.commit()
            self._ready = True

    async def alookup(self, thread_id: str, scope: str, call_id: str) -> Any | None:
        await self._setup()
        async with self.saver.lock:  # one trip to aiosqlite's thread: query and rows
            rows = await self.saver.conn.execute_fetchall(
                "SELECT type, result FROM agentctl_tool_journal "
                "WHERE thread_id = ? AND scope = ? AND call_id = ?",
                (thread_id, scope, call_id),
            )
        row = next(iter(rows), None)
        return None if row is None else self.serde.loads_typed((row[0], row[1]))

    async def arecord(self, thread_id: str, scope: str, call_id: str, result: Any) -> None:
        kind, data = self.serde.dumps_typed(result)
        row = (thread_id, scope, call_id, kind, data, _now())
        conn = self.saver.conn
        async with self.saver.lock:
            run_in_thread = getattr(conn, "_execute", None)
            if run_in_thread is not None and hasattr(conn, "_conn"):
                # The insert and its commit in one trip to aiosqlite's thread, not two
                # (`_execute` runs a function there; aiosqlite's own helpers are built on it).
                await run_in_thread(_insert_and_commit, conn, row)
                return
            await conn.execute(_INSERT_JOURNAL, row)
            await conn.commit()


_INSERT_JOURNAL = "INSERT OR IGNORE INTO agentctl_tool_journal VALUES (?, ?, ?, ?, ?, ?)"


def _insert_and_commit(conn: Any, row: tuple[Any, ...]) -> None:
    """On aiosqlite's thread: record one journal row and commit (`conn._conn` is the sqlite3
    connection it wraps)."""
    sqlite_conn = conn._conn
    sqlite_conn.execute(_INSERT_JOURNAL, row)
    sqlite_conn.commit()
