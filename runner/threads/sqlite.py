"""The thread database in a SQLite file (the default, `$AGENTCTL_HOME/agentctl.db`).

`SqliteHome` is `runner.threads.home.Home` on one `sqlite3` connection shared, under one lock, by
LangGraph's `SqliteSaver` and `SqliteStore` and agentctl's tables (`runner.threads.schema`). Here
too: the `Database` the guards of `runner.threads.guards` run on (a compare-and-set is one
`BEGIN IMMEDIATE` transaction), their SQLite classes, the tool journal of an `AsyncSqliteSaver`,
and the retention's SQLite side (`SqliteRetention`: which tables, and giving space back).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import RunError
from runner.threads.guards import (
    HOST,
    Execute,
    HeldWrites,
    Holder,
    TableAnswerLog,
    TableThreadLease,
    TableToolJournal,
    ToolJournal,
    Write,
)
from runner.threads.home import Home, default_home
from runner.threads.retention import RECLAIM_MIN_BYTES, Pruned, TableRetention
from runner.threads.schema import GUARDS, migrate, now
from runner.threads.transcripts import saved_transcript

if TYPE_CHECKING:
    from runner.events import Action

__all__ = [
    "AsyncSqliteToolJournal",
    "SqliteAnswerLog",
    "SqliteDatabase",
    "SqliteHome",
    "SqliteRetention",
    "SqliteThreadLease",
    "SqliteToolJournal",
    "setup",
]


def setup(conn: sqlite3.Connection) -> None:
    """Create the guards' tables in a SQLite database (idempotent), for a checkpointer agentctl
    did not open; a thread database gets them from its migrations (`runner.threads.schema`)."""
    for statement in GUARDS["sqlite"]:
        conn.execute(statement)
    conn.commit()


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


SECURE_DELETE = "FAST"
"""`PRAGMA secure_delete` on the thread database, but in `SqliteHome.delete`."""


class SqliteDatabase:
    """`Database` on a SQLite connection and the lock every user of it shares."""

    errors: tuple[type[Exception], ...] = (sqlite3.Error,)
    order = "rowid"

    def __init__(self, conn: sqlite3.Connection, lock: Any) -> None:
        self.conn = conn
        self.lock = lock
        self._held = HeldWrites()

    @contextmanager
    def transaction(self, key: str) -> Iterator[Execute]:
        held = self._held.take()
        try:
            with _immediate(self.conn, self.lock) as conn:
                for sql, rows in held:
                    conn.executemany(sql, rows)
                yield lambda sql, args: conn.execute(sql, args).fetchall()
        except BaseException:
            self._held.put_back(held)
            raise

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.conn.execute(sql, args).fetchall()

    def write(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        if self._held.hold(sql, rows):
            return
        with self.lock:
            self.run_deferred()
            self.conn.executemany(sql, rows)
            self.conn.commit()

    def defer(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._held.defer(sql, rows)

    def run_deferred(self) -> None:
        """Run the deferred writes in the transaction the caller is about to commit (with the
        lock held). One that fails is dropped: it is bookkeeping, and must not fail the
        caller's own writes (SQLite undoes only the failed statement)."""
        for sql, rows in self._held.take_deferred():
            with suppress(sqlite3.Error):
                self.conn.executemany(sql, rows)

    def batched(self) -> AbstractContextManager[None]:
        return self._held.block(self._flush)

    def _flush(self, writes: list[Write]) -> None:
        with _immediate(self.conn, self.lock) as conn:
            for sql, rows in writes:
                conn.executemany(sql, rows)


class SqliteThreadLease(TableThreadLease):
    """The lease of a SQLite thread database: an exclusive `flock` on a small file per thread
    (`agentctl.db-leases/<hash of the thread id>`), which holds the holder's pid, host and start.

    Taking and letting go of it commits nothing (the lock is the kernel's), so a turn commits
    what LangGraph does plus the tool journal. The kernel lets go of the lock when its process
    dies, however it dies, so a crashed holder frees the thread at once. A row of
    `agentctl_leases` still counts while its heartbeat is fresh when another host wrote it (the
    table lease of `runner.threads.guards`, which a database without a path, or a system
    without `flock`, still uses).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        lock: threading.Lock,
        *,
        ttl: float = 30.0,
        db: SqliteDatabase | None = None,
        path: Path | None = None,
    ):
        """`db`: the home's, to share its `batched` blocks; `path`: the database file, whose
        lease files sit beside it (without it, the table lease)."""
        super().__init__(db or SqliteDatabase(conn, lock), ttl=ttl)
        self.folder = _lease_folder(path)
        self.beats = self.folder is None
        self._files: dict[str, tuple[int, str, str]] = {}
        """thread id -> (the locked file's descriptor, the lease's token, since when), of the
        leases this object holds."""

    def _file(self, thread_id: str) -> str:
        import hashlib

        assert self.folder is not None
        return str(self.folder / hashlib.sha256(thread_id.encode()).hexdigest()[:40])

    def _seen(self, thread_id: str) -> Holder | None:
        """The holder known without the lock file: another host's, by a fresh row, or this
        object (None when neither)."""
        rows = self.db.fetch(self._SELECT, (thread_id,))
        if rows and rows[0][2] != HOST and not self._free(rows[0]):
            return self.row_holder(rows[0])
        with self._held_lock:
            return self._mine(thread_id) if thread_id in self._files else None

    def _try(self, thread_id: str, token: str) -> Holder | None:
        if self.folder is None:
            return super()._try(thread_id, token)
        import fcntl

        seen = self._seen(thread_id)
        if seen is not None:
            return seen
        with self._held_lock:
            if thread_id in self._files:  # taken by another thread of ours meanwhile
                return self._mine(thread_id)
            fd = os.open(self._file(thread_id), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                return holder
            except BaseException:
                os.close(fd)
                raise
            since = now()
            mine = json.dumps(
                {"pid": os.getpid(), "host": HOST, "since": since, "started": self._started}
            ).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, mine, 0)
            self._files[thread_id] = (fd, token, since)
        return None

    def _mine(self, thread_id: str) -> Holder:
        return Holder(os.getpid(), HOST, self._files[thread_id][2], time.time())

    def holder(self, thread_id: str) -> Holder | None:
        if self.folder is None:
            return super().holder(thread_id)
        import fcntl

        seen = self._seen(thread_id)
        if seen is not None:
            return seen
        try:
            fd = os.open(self._file(thread_id), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd)
        finally:
            os.close(fd)  # a shared lock taken is let go with it
        return None

    def _release(self, lease: Any) -> None:
        if self.folder is None:
            super()._release(lease)
            return
        with self._held_lock:
            self._held.pop(lease.token, None)
            held = self._files.get(lease.thread_id)
            if held is not None and held[1] == lease.token:
                del self._files[lease.thread_id]
                os.close(held[0])  # lets go of the lock

    def close(self) -> None:
        """Let go of every lease this object holds (the database is closing)."""
        with self._held_lock:
            files, self._files = self._files, {}
        for fd, _token, _since in files.values():
            os.close(fd)


def _lease_folder(path: Path | None) -> Path | None:
    """The folder of a database's lease files (made when missing), or None for the table lease:
    no file, or no `flock` (Windows)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return None
    if path is None or str(path) == ":memory:":
        return None
    folder = path.with_name(path.name + "-leases")
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return None
    return folder


def _read_holder(fd: int) -> Holder:
    """Who holds a lease file, from what it holds (its holder writes it just after taking the
    lock: a holder caught before that is described as this host's process 0, now)."""
    try:
        found = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return Holder(int(found["pid"]), str(found["host"]), str(found["since"]), time.time())
    except (OSError, ValueError, KeyError, TypeError):
        return Holder(0, HOST, now(), time.time())


class SqliteAnswerLog(TableAnswerLog):
    """`TableAnswerLog` in a SQLite thread database."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        super().__init__(SqliteDatabase(conn, lock))


class SqliteToolJournal(TableToolJournal):
    """`TableToolJournal` in a SQLite database, sharing the checkpointer's connection and lock
    (creates the tables)."""

    def __init__(self, conn: sqlite3.Connection, lock: Any, *, serde: Any = None) -> None:
        super().__init__(SqliteDatabase(conn, lock), serde=serde)
        with lock:
            setup(conn)


class AsyncSqliteToolJournal:
    """`AsyncToolJournal` for LangGraph's `AsyncSqliteSaver` (aiosqlite), on its connection and
    lock."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.serde = saver.serde
        self._ready = False

    async def _setup(self) -> None:
        if not self._ready:
            await self.saver.setup()  # connects, like the saver's own first call
            async with self.saver.lock:
                for statement in GUARDS["sqlite"]:
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
        row = (thread_id, scope, call_id, kind, data, now())
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


class SqliteRetention(TableRetention):
    """`runner.threads.retention.TableRetention` for `langgraph-checkpoint-sqlite`'s tables
    (`checkpoints`, `writes`), on the connection and lock `SqliteHome` shares with the
    checkpointer; space goes back to the file system by incremental auto-vacuum, and not after
    a turn whose freed pages the next turn reuses (see `reclaim`)."""

    def __init__(self, db: SqliteDatabase) -> None:
        super().__init__(db)
        self.conn = db.conn
        self.lock = db.lock
        self._reused = 0
        """Bytes the last `prune` freed: about what the thread's next turn writes again."""

    def ready(self) -> bool:
        found = self.db.fetch(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
            "AND name IN ('checkpoints', 'writes')"
        )[0][0]
        return bool(found == 2)

    def prune(self, thread_id: str, keep: int | None) -> Pruned:
        _, before = self.sizes()
        pruned = super().prune(thread_id, keep)
        self._reused = max(self.sizes()[1] - before, 0) if pruned.checkpoints else 0
        return pruned

    def sizes(self) -> tuple[int, int]:
        """(file size, free bytes inside it) from the page counts."""
        with self.lock:
            page = self.conn.execute("PRAGMA page_size").fetchone()[0]
            pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
            free = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        return pages * page, free * page

    def incremental(self) -> bool:
        with self.lock:
            return bool(self.conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2)

    def reclaim(self, *, force: bool = False) -> int:
        size, free = self.sizes()
        reused, self._reused = self._reused, 0
        # After a turn's prune the free pages are what the next turn's checkpoints take again:
        # giving them back would cost a vacuum now and growing the file again then (on a long
        # thread, every turn). Only free space beyond twice that is given back.
        if not force and (free < RECLAIM_MIN_BYTES or free * 4 < size or free <= 2 * reused):
            return 0
        with self.lock:
            if self.conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
                # It frees one page per step, and `execute` steps it once (`fetchall` too, on
                # SQLite 3.40); `executescript` runs it to its end.
                self.conn.commit()
                self.conn.executescript("PRAGMA incremental_vacuum;")
            elif force:
                # A database from before incremental auto-vacuum: one full rewrite switches it.
                self.conn.commit()
                self.conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                self.conn.execute("VACUUM")
        after, _ = self.sizes()
        return max(size - after, 0)


def prepare_new_database(conn: sqlite3.Connection) -> None:
    """Incremental auto-vacuum on a database that has no table yet (the mode can change only
    before the first table, or with a full VACUUM)."""
    if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")


class SqliteHome(Home):
    """The thread database in a SQLite file."""

    def __init__(self, db: str | os.PathLike[str] | None = None) -> None:
        path = Path(db) if db is not None else default_home() / "agentctl.db"
        self.path = path.expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            prepare_new_database(self.conn)
            # Durability (docs/threads.md, "Crashes and concurrent runs"): write-ahead log, so
            # readers never block the writer and a killed writer leaves no half-written page; NORMAL
            # sync, so a commit is safe from a process crash once it returns (the OS has it)
            # and costs no fsync per checkpoint; an OS crash or power cut may lose the last
            # commits, never the database.
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            # Freed pages are zeroed only where that costs no extra write (`FAST`). Debian's
            # SQLite defaults to ON, zeroing every freed page: a prune that removed a checkpoint
            # holding a 1 MB snapshot wrote 1 MB of zeros to the log, 1 ms of a turn. A prune
            # frees earlier states of a thread that stays, pages its next turns reuse; `delete`,
            # a thread removed on purpose, overwrites what it frees.
            self.conn.execute(f"PRAGMA secure_delete={SECURE_DELETE}")
            self._lock = threading.Lock()
            self.db: SqliteDatabase = SqliteDatabase(self.conn, self._lock)
            migrate(self.db, "sqlite", str(self.path))
        except (OSError, sqlite3.Error, RunError) as exc:
            if hasattr(self, "conn"):
                self.conn.close()
            if isinstance(exc, RunError):
                raise
            raise RunError(f"cannot open the thread database {self.path}: {exc}") from None
        self._checkpointer: Any = None
        self._store: Any = None
        self.retention: SqliteRetention = SqliteRetention(self.db)
        """Prunes old checkpoints (`runner.threads.retention`); shares the connection and its
        lock."""
        self.lease: SqliteThreadLease = SqliteThreadLease(
            self.conn, self._lock, db=self.db, path=self.path
        )
        self.answers = SqliteAnswerLog(self.conn, self._lock)
        self._journal: ToolJournal | None = None

    def delete(self, thread_id: str) -> bool:
        """As `Home.delete`, with every page it frees overwritten (`PRAGMA secure_delete`), so
        the thread's content is gone from the file once the log is checkpointed."""
        with self._lock:
            self.conn.execute("PRAGMA secure_delete=ON")
        try:
            return super().delete(thread_id)
        finally:
            with self._lock:
                self.conn.execute(f"PRAGMA secure_delete={SECURE_DELETE}")

    @property
    def checkpointer(self) -> Any:
        if self._checkpointer is None:
            saver = _folding_saver()(self.conn)
            saver.agentctl_db = self.db
            saver.lock = self._lock
            saver.setup()
            # the tool journal (runner.middleware.journal) finds its table through the saver
            saver.agentctl_journal = self.journal
            self._checkpointer = saver
        return self._checkpointer

    @property
    def journal(self) -> ToolJournal:
        if self._journal is None:
            self._journal = SqliteToolJournal(self.conn, self._lock)
        return self._journal

    @property
    def store(self) -> Any:
        if self._store is None:
            from langgraph.store.sqlite import SqliteStore

            store = SqliteStore(self.conn)
            store.lock = self._lock
            store.setup()
            self._store = store
        return self._store

    def saved_transcript(self, thread_id: str) -> tuple[list[Any], list[Action]] | None:
        return saved_transcript(self.conn, self._lock, thread_id)

    def close(self) -> None:
        with self._lock:  # not while another thread is in the middle of a write
            try:
                with suppress(sqlite3.Error):  # the deferred bookkeeping, if nothing took it
                    self.db.run_deferred()
                    self.conn.commit()
            finally:
                self.conn.close()
                self.lease.close()


_SAVER: Any = None


def _folding_saver() -> Any:
    """LangGraph's `SqliteSaver` whose transactions also run the home database's deferred writes
    (`Database.defer`): a turn's bookkeeping rides on its first checkpoint's commit."""
    global _SAVER
    if _SAVER is None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        class FoldingSqliteSaver(SqliteSaver):
            agentctl_db: SqliteDatabase

            @contextmanager
            def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
                with super().cursor(transaction) as cur:
                    if transaction:
                        self.agentctl_db.run_deferred()
                    yield cur

        _SAVER = FoldingSqliteSaver
    return _SAVER
