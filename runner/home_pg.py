"""The thread database on Postgres: `agentctl run --db postgresql://...`.

`PostgresHome` is `runner.run.Home` in a Postgres database: LangGraph's `PostgresSaver`
(checkpoints) and `PostgresStore` (the store), the thread registry (`agentctl_threads`,
`agentctl_thread_settings`), the database's settings (`agentctl_settings`) and the guards of
`runner.threads_pg` (lease, answer log, tool journal), all tables of that one database. A thread
started here continues from any process on any host that reaches the database, and from
`agentctl serve --db` on the same database.

One connection (autocommit, as LangGraph's Postgres classes want it) and one lock serve the
checkpointer, the store and the tables, as in SQLite. Tables are created at open, idempotently,
under an advisory lock (`runner.threads_pg.setup_lock`): processes opening a new database at
once wait for each other.

Durability: a checkpoint, a journaled tool result, an answer is committed when the call that
writes it returns (autocommit; the server's own `synchronous_commit`, on by default, decides
whether a commit is flushed to disk before it is acknowledged).
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from runner import threads_db
from runner.errors import RunError
from runner.retention import (
    DEFAULT_KEEP,
    CheckpointRow,
    Pruned,
    describe_keep,
    keep_setting,
    kept_checkpoints,
)
from runner.retention import SETTING as KEEP_SETTING
from runner.run import _SETTINGS_TABLE, Home
from runner.threads_pg import (
    SCHEMA,
    PostgresAnswerLog,
    PostgresDatabase,
    PostgresThreadLease,
    PostgresToolJournal,
    setup,
    setup_lock,
)

__all__ = ["PostgresHome", "PostgresRetention", "redact"]

TABLES = (
    *SCHEMA,
    "CREATE TABLE IF NOT EXISTS agentctl_threads (thread_id TEXT PRIMARY KEY, agent TEXT, "
    "spec TEXT, created_at TEXT, updated_at TEXT, first_message TEXT, seq BIGSERIAL)",
    _SETTINGS_TABLE,
    "CREATE TABLE IF NOT EXISTS agentctl_settings (key TEXT PRIMARY KEY, value TEXT)",
)

EXTRA = "pip install 'agentctl[postgres]'"


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


class PostgresHome(Home):
    """The thread database in Postgres (see the module docstring)."""

    def __init__(self, db: Any = None) -> None:
        url = str(db)
        self.path = redact(url)
        try:
            import langgraph.checkpoint.postgres
            import langgraph.store.postgres  # noqa: F401
            import psycopg
            from psycopg.rows import dict_row
        except ImportError as exc:
            raise RunError(
                f"the thread database {self.path} is on Postgres, which needs the postgres "
                f"extra ({exc.name} is missing): {EXTRA}"
            ) from None
        try:
            self.conn: Any = psycopg.connect(
                url, autocommit=True, row_factory=dict_row, prepare_threshold=0, connect_timeout=10
            )
        except (psycopg.Error, ValueError) as exc:
            raise RunError(
                f"cannot open the thread database {self.path}: {_first_line(exc)}"
            ) from None
        self._lock = threading.Lock()
        self.db = PostgresDatabase(self.conn, self._lock)
        self.retention: PostgresRetention = PostgresRetention(self.db)
        self.lease = PostgresThreadLease(self.conn, self._lock)
        self.answers = PostgresAnswerLog(self.conn, self._lock)
        self._journal = PostgresToolJournal(self.conn, self._lock)
        try:
            self._checkpointer, self._store = self._setup()
        except psycopg.Error as exc:
            self.conn.close()
            raise RunError(
                f"cannot set up the thread database {self.path}: {_first_line(exc)}"
            ) from None

    def _setup(self) -> tuple[Any, Any]:
        """Create every table (LangGraph's migrations included) while holding the setup lock
        at session level: LangGraph's migrations run statements that cannot run inside a
        transaction (`CREATE INDEX CONCURRENTLY`)."""
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore

        saver = PostgresSaver(self.conn)
        saver.lock = self._lock
        saver.agentctl_journal = self._journal  # type: ignore[attr-defined]
        store = PostgresStore(self.conn)
        store.lock = self._lock
        with setup_lock(self.conn):
            saver.setup()
            store.setup()
            setup(self.conn, TABLES)  # the same lock again: a session has its own locks
        return saver, store

    @property
    def checkpointer(self) -> Any:
        return self._checkpointer

    @property
    def journal(self) -> threads_db.ToolJournal:
        return self._journal

    @property
    def store(self) -> Any:
        return self._store

    def close(self) -> None:
        with self._lock:  # not while another thread is in the middle of a write
            self.conn.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PostgresRetention:
    """`runner.retention.CheckpointRetention` for `langgraph-checkpoint-postgres`'s tables
    (`checkpoints`, `checkpoint_writes`, `checkpoint_blobs`)."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def stored_keep(self) -> tuple[bool, int | None]:
        rows = self.db.fetch("SELECT value FROM agentctl_settings WHERE key = ?", (KEEP_SETTING,))
        return keep_setting(rows[0][0] if rows else None)

    def store_keep(self, keep: int | None) -> None:
        self.db.write(
            "INSERT INTO agentctl_settings (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [(KEEP_SETTING, describe_keep(keep))],
        )

    def effective_keep(self) -> int | None:
        found, keep = self.stored_keep()
        return keep if found else DEFAULT_KEEP

    def prune(self, thread_id: str, keep: int | None) -> Pruned:
        if keep is None:
            return Pruned()
        with self.db.transaction(thread_id) as execute:
            rows = [
                CheckpointRow(*row)
                for row in execute(
                    "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                    "metadata->>'source', metadata->'parents'->>'' "
                    "FROM checkpoints WHERE thread_id = ?",
                    (thread_id,),
                )
            ]
            if len(rows) <= keep:
                return Pruned()
            waited = {
                (ns, cid)
                for ns, cid in execute(
                    "SELECT DISTINCT checkpoint_ns, checkpoint_id FROM checkpoint_writes "
                    "WHERE thread_id = ? AND channel = '__interrupt__'",
                    (thread_id,),
                )
            }
            kept = kept_checkpoints(rows, waited, keep)
            gone = [(r.namespace, r.checkpoint_id) for r in rows]
            gone = [key for key in gone if key not in kept]
            if not gone:
                return Pruned()
            # The channel values only removed checkpoints name: those of a checkpoint being
            # written right now (another process, without the lease) are never among them.
            removed = set(gone)
            values = {
                (ns, channel, version)
                for ns, cid, channel, version in execute(
                    "SELECT c.checkpoint_ns, c.checkpoint_id, v.key, v.value FROM checkpoints c, "
                    "jsonb_each_text(c.checkpoint -> 'channel_versions') v "
                    "WHERE c.thread_id = ? AND c.checkpoint_id = ANY(?)",
                    (thread_id, [cid for _, cid in gone]),
                )
                if (ns, cid) in removed
            }
            writes = 0
            for ns, cid in gone:
                writes += len(
                    execute(
                        "DELETE FROM checkpoint_writes WHERE thread_id = ? AND checkpoint_ns = ? "
                        "AND checkpoint_id = ? RETURNING 1",
                        (thread_id, ns, cid),
                    )
                )
                execute(
                    "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id = ?",
                    (thread_id, ns, cid),
                )
            for ns, channel, version in values:
                execute(
                    "DELETE FROM checkpoint_blobs b WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND channel = ? AND version = ? AND NOT EXISTS (SELECT 1 FROM checkpoints k "
                    "WHERE k.thread_id = b.thread_id AND k.checkpoint_ns = b.checkpoint_ns "
                    "AND k.checkpoint -> 'channel_versions' ->> b.channel = b.version)",
                    (thread_id, ns, channel, version),
                )
        return Pruned(checkpoints=len(gone), writes=writes)

    def prune_all(self, keep: int | None) -> Pruned:
        total = Pruned()
        for (thread_id,) in self.db.fetch("SELECT DISTINCT thread_id FROM checkpoints"):
            done = self.prune(thread_id, keep)
            total = Pruned(total.checkpoints + done.checkpoints, total.writes + done.writes)
        return total

    def latest_checkpoint_id(self, thread_id: str) -> str | None:
        rows = self.db.fetch(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            (thread_id,),
        )
        return str(rows[0][0]) if rows else None

    def has_checkpoints(self, thread_id: str) -> bool:
        return bool(
            self.db.fetch("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (thread_id,))
        )

    def delete_thread(self, thread_id: str) -> None:
        with self.db.transaction(thread_id) as execute:
            for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
                execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))

    def reclaim(self, *, force: bool = False) -> int:
        """Postgres's autovacuum makes the space of removed rows reusable; nothing to do."""
        return 0

    def incremental(self) -> bool:
        return True
