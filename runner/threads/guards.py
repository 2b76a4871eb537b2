"""What keeps a thread whole when processes crash or meet: a lease, an answer log, a tool journal.

Three small tables live beside LangGraph's checkpoints in the thread database, written on the
same connection under the same lock (see `runner.threads.home.Home`):

- `agentctl_leases`: which process runs a thread now (where no lock of the system's does it:
  SQLite's lock files and Postgres's advisory locks take its place). One runner per thread: a
  second process gets `ThreadBusy` naming the holder (pid, host, since when), or waits. A
  holder that dies loses its lease: on the same host as soon as its process is gone, elsewhere
  when its heartbeat is older than the lease's time to live.
- `agentctl_answers`: the answer given to each approval (pending interrupt). Answering is a
  compare-and-set on the interrupt: the first answer is recorded and runs; any other is told
  who answered it and how. A recorded answer that was cut off by a crash is applied again when
  the thread continues, so an answer is never lost and never doubled.
- `agentctl_tool_journal`: the result of every finished tool call, keyed by thread, scope (the
  chain of `task` calls it runs under, for subagents) and tool-call id, written the moment the
  call returns. `runner.middleware.journal` reads it before running a call, so a call that
  finished before a crash is never run again; only a call in flight at the crash may repeat.

Each is written behind a small protocol (`ThreadLease`, `AnswerLog`, `ToolJournal`,
`AsyncToolJournal`) with one implementation over a `Database`: the few operations they make, in
SQLite's `?` parameter style and SQL both SQLite and Postgres run. `runner.threads.sqlite` holds
the SQLite `Database` (and the async journal of an `AsyncSqliteSaver`), `runner.threads.postgres`
the Postgres one (and the async journal of an `AsyncPostgresSaver`); the tables are
`runner.threads.schema`'s. Every
compare-and-set runs in `Database.transaction`, which makes the read and the write that depends
on it one step for every process: SQLite's write lock (`BEGIN IMMEDIATE`), a Postgres advisory
lock on the thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from runner.errors import RunError
from runner.threads.schema import now

__all__ = [
    "AlreadyAnswered",
    "Answer",
    "AnswerLog",
    "AsyncToolJournal",
    "Database",
    "Holder",
    "Lease",
    "TableAnswerLog",
    "TableThreadLease",
    "TableToolJournal",
    "ThreadBusy",
    "ThreadLease",
    "ToolJournal",
]


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


Execute = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
"""Runs one statement inside a `Database.transaction`; the rows it returns (none for a write)."""


class Database(Protocol):
    """The operations the guards make on a thread database. SQL is written with `?` parameters
    in the dialect SQLite and Postgres share (`INSERT ... ON CONFLICT`)."""

    errors: tuple[type[Exception], ...]
    """What the database raises when it is closed or failing."""
    order: str
    """A column of `agentctl_answers` that orders its rows by insertion."""

    def transaction(self, key: str) -> AbstractContextManager[Execute]:
        """One write transaction, committed at the end (rolled back on an exception), in which
        no other process writes the guards' rows of `key` (a thread id): a read and the write
        that depends on it are one step."""
        ...

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def write(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run `sql` for each of `rows`, committed when it returns (in a `batched` block: with
        the block's transaction)."""
        ...

    def batched(self) -> AbstractContextManager[None]:
        """A block whose `write`s (made by this thread) are held and committed together: with
        the next `transaction` this thread begins in the block, else in one transaction at its
        end. One commit instead of one per write, for the bookkeeping at the end of a turn; a
        transaction that fails leaves them to the end of the block."""
        ...

    def defer(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Write `rows` with the database's next commit, whoever makes it: the next
        `transaction`, `write` or `batched` block of any thread, or (SQLite) the checkpointer's
        next transaction on the shared connection. For bookkeeping that may wait a moment and
        is not worth a commit of its own (a thread's time of last use)."""
        ...


Write = tuple[str, list[Sequence[Any]]]


class HeldWrites:
    """The `write`s of `Database.batched` blocks, per thread; a database calls `hold` in
    `write`, `take` (and `put_back` on a rollback) in `transaction`, and `flush` writes what a
    block leaves."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._deferred: list[Write] = []
        self._deferred_lock = threading.Lock()

    def defer(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Keep a write for the next commit of any thread (`Database.defer`)."""
        with self._deferred_lock:
            self._deferred.append((sql, list(rows)))

    def take_deferred(self) -> list[Write]:
        with self._deferred_lock:
            taken, self._deferred = self._deferred, []
        return taken

    def hold(self, sql: str, rows: Iterable[Sequence[Any]]) -> bool:
        """Hold the write if a block is open in this thread (True), else leave it (False)."""
        held: list[Write] | None = getattr(self._local, "writes", None)
        if held is None:
            return False
        held.append((sql, list(rows)))
        return True

    def take(self) -> list[Write]:
        """The deferred writes and this thread's held ones, to commit now."""
        taken = self.take_deferred()
        held: list[Write] | None = getattr(self._local, "writes", None)
        if held:
            taken.extend(held)
            held.clear()
        return taken

    def put_back(self, writes: list[Write]) -> None:
        held: list[Write] | None = getattr(self._local, "writes", None)
        if held is not None:
            held[:0] = writes
        else:  # no block to leave them to: the next commit takes them
            with self._deferred_lock:
                self._deferred[:0] = writes

    @contextlib.contextmanager
    def block(self, flush: Callable[[list[Write]], None]) -> Iterator[None]:
        if getattr(self._local, "writes", None) is not None:  # nested: the outer block commits
            yield
            return
        self._local.writes = []
        try:
            yield
        finally:
            writes = self.take()
            self._local.writes = None
            if writes:
                flush(writes)


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
    latest: tuple[str | None] | None
    """(the thread's latest main-graph checkpoint id, read as the lease was taken), where the
    lease read it in the same round trip; else None."""

    def release(self) -> None: ...


class ThreadLease(Protocol):
    """One runner per thread.

    `acquire` returns a held `Lease` or raises `ThreadBusy`; with `wait` (seconds, `inf` for no
    limit) it retries until the lease is free. The holder keeps it alive (a heartbeat) until it
    releases it; a lease whose holder died is free again.

    Implemented as a table (`TableThreadLease`), which SQLite (`SqliteThreadLease`: a lock
    file per thread) and Postgres (`runner.threads.postgres.PostgresThreadLease`: a
    session-level advisory lock on a connection of its own) replace with a lock that commits
    nothing and that the system lets go of when the holder dies, still honouring the table's
    rows.
    """

    def acquire(self, thread_id: str, *, wait: float | None = None) -> Lease: ...

    def holder(self, thread_id: str) -> Holder | None: ...


class _TableLease:
    def __init__(self, owner: TableThreadLease, thread_id: str, token: str) -> None:
        self.owner = owner
        self.thread_id = thread_id
        self.token = token
        self.released = False
        self.latest: tuple[str | None] | None = None
        """(the id of the thread's latest main-graph checkpoint, read as the lease was taken),
        where the lease read it in the same round trip; None where it did not."""

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.owner._release(self)


class TableThreadLease:
    """`ThreadLease` as a row per thread being run, in the thread database's `agentctl_leases`.

    A row is free to take when its holder is gone: on this host, when its process no longer
    exists (checked at once, so a crash frees the thread for the next command); on another host
    sharing the database, when its heartbeat is older than `ttl` seconds. The holder's
    heartbeat thread refreshes its rows every `ttl / 3` seconds. Taking a row is a read and a
    write in one `Database.transaction`, so of two processes one takes it and the other is told.
    """

    POLL = 0.1
    """Seconds between tries while waiting."""
    beats = True
    """Whether holders refresh their rows' heartbeat (a subclass that keeps no row does not)."""

    def __init__(self, db: Database, *, ttl: float = 30.0) -> None:
        self.db = db
        self.ttl = ttl
        self._held: dict[str, _TableLease] = {}
        self._held_lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._started = process_started(os.getpid())

    _SELECT = (
        "SELECT token, pid, host, started, since, heartbeat FROM agentctl_leases "
        "WHERE thread_id = ?"
    )

    @staticmethod
    def row_holder(row: Any) -> Holder:
        """The holder an `agentctl_leases` row (`_SELECT`'s columns) names."""
        return Holder(int(row[1]), str(row[2]), str(row[4]), float(row[5]))

    def _free(self, row: Any) -> bool:
        _token, pid, host, started, _since, heartbeat = row
        if host == HOST:
            return not process_alive(int(pid), started)
        return time.time() - float(heartbeat) > self.ttl

    def _try(self, thread_id: str, token: str) -> Holder | None:
        """Take the lease (None) or say who holds it."""
        with self.db.transaction(thread_id) as execute:
            rows = execute(self._SELECT, (thread_id,))
            if rows and not self._free(rows[0]):
                return self.row_holder(rows[0])
            execute(
                "INSERT INTO agentctl_leases (thread_id, token, pid, host, started, since, "
                "heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET "
                "token = excluded.token, pid = excluded.pid, host = excluded.host, "
                "started = excluded.started, since = excluded.since, "
                "heartbeat = excluded.heartbeat",
                (thread_id, token, os.getpid(), HOST, self._started, now(), time.time()),
            )
        return None

    def acquire(self, thread_id: str, *, wait: float | None = None) -> _TableLease:
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
        lease = _TableLease(self, thread_id, token)
        lease.latest = self._latest_seen(thread_id)
        with self._held_lock:
            self._held[token] = lease
            if self.beats and (self._beat is None or not self._beat.is_alive()):
                self._stop.clear()
                self._beat = threading.Thread(
                    target=self._heartbeat, name="agentctl-lease", daemon=True
                )
                self._beat.start()
        return lease

    def _latest_seen(self, thread_id: str) -> tuple[str | None] | None:
        """The thread's latest checkpoint as the last `_try` that took the lease read it (see
        `_TableLease.latest`); None here."""
        return None

    def holder(self, thread_id: str) -> Holder | None:
        rows = self.db.fetch(self._SELECT, (thread_id,))
        if not rows or self._free(rows[0]):
            return None
        return self.row_holder(rows[0])

    def _release(self, lease: _TableLease) -> None:
        with self._held_lock:
            self._held.pop(lease.token, None)
            if not self._held:
                self._stop.set()
        # a database closed already: the row is freed by the process check
        with contextlib.suppress(*self.db.errors):
            self.db.write(
                "DELETE FROM agentctl_leases WHERE thread_id = ? AND token = ?",
                [(lease.thread_id, lease.token)],
            )

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            with self._held_lock:
                tokens = list(self._held)
            try:
                self.db.write(
                    "UPDATE agentctl_leases SET heartbeat = ? WHERE token = ?",
                    [(time.time(), token) for token in tokens],
                )
            except self.db.errors:
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
    unless one of them was answered already (it then returns that answer)."""

    def claim(self, thread_id: str, answers: Mapping[str, tuple[str, Any]]) -> Answer | None: ...

    def recorded(self, thread_id: str, interrupt_ids: list[str]) -> dict[str, Answer]: ...

    def last(self, thread_id: str) -> Answer | None: ...

    def withdraw(self, thread_id: str, interrupt_ids: list[str]) -> None:
        """Take back this process's answers that could not run (the thread was busy)."""


def _answer(row: Any) -> Answer:
    interrupt_id, summary, resume, pid, host, answered_at = row
    return Answer(interrupt_id, summary, json.loads(resume), int(pid), host, answered_at)


class TableAnswerLog:
    """`AnswerLog` as the thread database's `agentctl_answers` table."""

    _COLUMNS = "interrupt_id, summary, resume, pid, host, answered_at"

    def __init__(self, db: Database) -> None:
        self.db = db

    def claim(self, thread_id: str, answers: Mapping[str, tuple[str, Any]]) -> Answer | None:
        """Record `answers` (interrupt id -> (summary, resume value)); None when they were
        recorded, else the answer given before to one of those interrupts."""
        with self.db.transaction(thread_id) as execute:
            for interrupt_id in answers:
                rows = execute(
                    f"SELECT {self._COLUMNS} FROM agentctl_answers "
                    "WHERE thread_id = ? AND interrupt_id = ?",
                    (thread_id, interrupt_id),
                )
                if rows:
                    return _answer(rows[0])
            answered_at = now()
            for iid, (summary, resume) in answers.items():
                execute(
                    f"INSERT INTO agentctl_answers (thread_id, {self._COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (thread_id, iid, summary, json.dumps(resume), os.getpid(), HOST, answered_at),
                )
        return None

    def recorded(self, thread_id: str, interrupt_ids: list[str]) -> dict[str, Answer]:
        if not interrupt_ids:
            return {}
        marks = ", ".join("?" * len(interrupt_ids))
        rows = self.db.fetch(
            f"SELECT {self._COLUMNS} FROM agentctl_answers WHERE thread_id = ? "
            f"AND interrupt_id IN ({marks})",
            (thread_id, *interrupt_ids),
        )
        return {row[0]: _answer(row) for row in rows}

    def withdraw(self, thread_id: str, interrupt_ids: list[str]) -> None:
        self.db.write(
            "DELETE FROM agentctl_answers WHERE thread_id = ? AND interrupt_id = ? AND pid = ? "
            "AND host = ?",
            [(thread_id, iid, os.getpid(), HOST) for iid in interrupt_ids],
        )

    def last(self, thread_id: str) -> Answer | None:
        rows = self.db.fetch(
            f"SELECT {self._COLUMNS} FROM agentctl_answers WHERE thread_id = ? "
            f"ORDER BY {self.db.order} DESC LIMIT 1",
            (thread_id,),
        )
        return _answer(rows[0]) if rows else None


# --------------------------------------------------------------------------- the tool journal


class ToolJournal(Protocol):
    """Finished tool calls and their results, keyed by (thread, scope, call id).

    `record` must be durable when it returns (the result is what a re-run of the call after a
    crash gets instead of running the tool); of two records of one call the first stays."""

    def lookup(self, thread_id: str, scope: str, call_id: str) -> Any | None: ...

    def record(self, thread_id: str, scope: str, call_id: str, result: Any) -> None: ...


@runtime_checkable
class AsyncToolJournal(Protocol):
    """`ToolJournal`'s async twin, for a graph run with `ainvoke` / `astream` on an async
    checkpointer (`AsyncSqliteSaver`, `AsyncPostgresSaver`), on the checkpointer's own
    connection: `runner.middleware.journal` tells the two apart by this protocol."""

    async def alookup(self, thread_id: str, scope: str, call_id: str) -> Any | None: ...

    async def arecord(self, thread_id: str, scope: str, call_id: str, result: Any) -> None: ...


JOURNAL_LOOKUP = (
    "SELECT type, result FROM agentctl_tool_journal "
    "WHERE thread_id = ? AND scope = ? AND call_id = ?"
)
JOURNAL_RECORD = (
    "INSERT INTO agentctl_tool_journal (thread_id, scope, call_id, type, result, recorded_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)


def journal_row(thread_id: str, scope: str, call_id: str, serde: Any, result: Any) -> tuple:
    """The `agentctl_tool_journal` row of a result: stored with LangGraph's checkpoint
    serializer (messages, `Command`s), as the checkpointer stores values."""
    kind, data = serde.dumps_typed(result)
    return (thread_id, scope, call_id, kind, bytes(data), now())


def journal_result(serde: Any, row: Sequence[Any] | None) -> Any | None:
    return None if row is None else serde.loads_typed((row[0], bytes(row[1])))


class TableToolJournal:
    """`ToolJournal` as the thread database's `agentctl_tool_journal` table."""

    def __init__(self, db: Database, *, serde: Any = None) -> None:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        self.db = db
        self.serde = serde or JsonPlusSerializer()

    def lookup(self, thread_id: str, scope: str, call_id: str) -> Any | None:
        rows = self.db.fetch(JOURNAL_LOOKUP, (thread_id, scope, call_id))
        return journal_result(self.serde, rows[0] if rows else None)

    def record(self, thread_id: str, scope: str, call_id: str, result: Any) -> None:
        self.db.write(JOURNAL_RECORD, [journal_row(thread_id, scope, call_id, self.serde, result)])
