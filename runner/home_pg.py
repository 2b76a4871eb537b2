"""The thread database on Postgres: `agentctl run --db postgresql://...`.

`PostgresHome` is `runner.run.Home` in a Postgres database: LangGraph's `PostgresSaver`
(checkpoints) and `PostgresStore` (the store), the thread registry (`agentctl_threads`,
`agentctl_thread_settings`), the database's settings (`agentctl_settings`) and the guards of
`runner.threads_pg` (lease, answer log, tool journal), all tables of that one database. A thread
started here continues from any process on any host that reaches the database, and from
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
from runner.run import _SETTINGS_TABLE, Home, ThreadInfo
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
        self.lease = _ServedThreadLease(self.conn, self._lock)
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

    # ------------------------------------------------------- threads shared with the server

    def _served(self) -> bool:
        """Whether Aegra's thread table is in this database (looked up each time: a server may
        start on the database while this process runs)."""
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

    def touch(self, thread_id: str) -> None:
        super().touch(thread_id)
        info = self.thread(thread_id)
        self._publish(thread_id, info.agent if info is not None else None)

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

    @property
    def journal(self) -> threads_db.ToolJournal:
        return self._journal

    @property
    def store(self) -> Any:
        return self._store

    def close(self) -> None:
        with self._lock:  # not while another thread is in the middle of a write
            self.conn.close()


class _ServedThreadLease(PostgresThreadLease):
    """The lease, also refused while the server (Aegra, on the same database) has a run of the
    thread pending or running: the server's runs take no agentctl lease."""

    def _try(self, thread_id: str, token: str) -> Any:
        rows = self.db.fetch(
            "SELECT to_regclass('runs') IS NOT NULL AND to_regclass('thread') IS NOT NULL", ()
        )
        if rows and rows[0][0]:
            active = self.db.fetch(
                "SELECT run_id, status FROM runs WHERE thread_id = ? "
                "AND status IN ('pending', 'running') ORDER BY created_at LIMIT 1",
                (thread_id,),
            )
            if active:
                run_id, status = active[0]
                raise RunError(
                    f"thread {thread_id} has a run {status} on the server (run {run_id}); "
                    "continue it when that run has finished"
                )
        return super()._try(thread_id, token)


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
