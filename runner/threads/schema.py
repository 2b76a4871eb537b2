"""Every table agentctl keeps in a thread database, for both dialects, and the schema version.

LangGraph's checkpointer and store create and migrate their own tables (`checkpoints`,
`writes`/`checkpoint_writes`, `checkpoint_blobs`, `store`, their `*_migrations`); the tables here
are agentctl's, beside them in the same database:

```
agentctl_threads          the thread registry (`agentctl threads list`)
agentctl_thread_settings  the --model and --var a thread started with
agentctl_settings         the database's settings (keep-checkpoints)
agentctl_leases           who runs a thread now          (runner.threads.guards)
agentctl_answers          the answer given to each approval
agentctl_tool_journal     finished tool calls, never run twice
agentctl_schema_version   one row per migration applied: the schema's version is the highest
```

`MIGRATIONS` is the ordered history of that layout and of what the checkpoints hold. Version 1
is the layout every release before the version table wrote; its statements are all `CREATE
TABLE IF NOT EXISTS`, so on a database written before the version table existed (its tables
are there, the version table is not) they create only what an older release made lazily
(`agentctl_settings`), and the database is recorded at version 1. `migrate` then runs the later
migrations in order, each in one transaction with the row that records it, so a migration is
applied once, or not at all. A database at a version newer than this code knows is refused
with a clear error: an older agentctl must not write tables it does not understand, nor prune
checkpoints whose layout it does not know (version 2: messages kept as deltas; version 3: a
`state` backend's files too).

Opening a thread database (`runner.threads.open_home`) migrates it: SQLite inside one
`BEGIN IMMEDIATE` transaction, Postgres under the setup advisory lock, so processes opening the
same database at once wait for each other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from runner.errors import RunError

__all__ = [
    "GUARDS",
    "GUARD_TABLES",
    "LATEST",
    "MIGRATIONS",
    "THREAD_TABLES",
    "VERSION_TABLE",
    "Dialect",
    "Migration",
    "migrate",
    "now",
    "schema_version",
]

Dialect = Literal["sqlite", "postgres"]


def now() -> str:
    """A timestamp as the tables keep it (`stamp`), of now."""
    return stamp(time.time())


def stamp(seconds: float) -> str:
    """Unix time `seconds` as the tables keep a timestamp: UTC, ISO 8601, to the second; the
    text of two compares as their times do."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _both(statement: str, **types: tuple[str, str]) -> dict[Dialect, str]:
    """One statement in both dialects: each `{name}` is filled with (SQLite type, Postgres type)."""
    return {
        "sqlite": statement.format(**{k: v[0] for k, v in types.items()}),
        "postgres": statement.format(**{k: v[1] for k, v in types.items()}),
    }


_INT = ("INTEGER", "BIGINT")
_REAL = ("REAL", "DOUBLE PRECISION")
_BLOB = ("BLOB", "BYTEA")
_SEQ = ("", "seq BIGSERIAL, ")
"""Postgres has no rowid: a sequence column orders rows by insertion (`Database.order`)."""

_LEASES = _both(
    "CREATE TABLE IF NOT EXISTS agentctl_leases (thread_id TEXT PRIMARY KEY, token TEXT NOT NULL, "
    "pid {int} NOT NULL, host TEXT NOT NULL, started TEXT, since TEXT NOT NULL, "
    "heartbeat {real} NOT NULL)",
    int=_INT,
    real=_REAL,
)
_ANSWERS = _both(
    "CREATE TABLE IF NOT EXISTS agentctl_answers ({seq}thread_id TEXT NOT NULL, "
    "interrupt_id TEXT NOT NULL, summary TEXT NOT NULL, resume TEXT NOT NULL, "
    "pid {int} NOT NULL, host TEXT NOT NULL, answered_at TEXT NOT NULL, "
    "PRIMARY KEY (thread_id, interrupt_id))",
    seq=_SEQ,
    int=_INT,
)
_JOURNAL = _both(
    "CREATE TABLE IF NOT EXISTS agentctl_tool_journal (thread_id TEXT NOT NULL, "
    "scope TEXT NOT NULL, call_id TEXT NOT NULL, type TEXT NOT NULL, result {blob} NOT NULL, "
    "recorded_at TEXT NOT NULL, PRIMARY KEY (thread_id, scope, call_id))",
    blob=_BLOB,
)
_THREADS = _both(
    "CREATE TABLE IF NOT EXISTS agentctl_threads (thread_id TEXT PRIMARY KEY, agent TEXT, "
    "spec TEXT, created_at TEXT, updated_at TEXT, first_message TEXT{seq})",
    seq=("", ", seq BIGSERIAL"),
)
_THREAD_SETTINGS = _both(
    "CREATE TABLE IF NOT EXISTS agentctl_thread_settings "
    "(thread_id TEXT PRIMARY KEY, model TEXT, vars TEXT)"
)
_SETTINGS = _both("CREATE TABLE IF NOT EXISTS agentctl_settings (key TEXT PRIMARY KEY, value TEXT)")

GUARDS: dict[Dialect, tuple[str, ...]] = {
    dialect: (_LEASES[dialect], _ANSWERS[dialect], _JOURNAL[dialect])
    for dialect in ("sqlite", "postgres")
}
"""The guards' tables alone: what the tool journal creates beside a checkpointer agentctl did not
open (`build_agent` with a saver of the caller's), where no thread registry is kept."""

GUARD_TABLES = ("agentctl_leases", "agentctl_answers", "agentctl_tool_journal")
THREAD_TABLES = ("agentctl_threads", "agentctl_thread_settings", *GUARD_TABLES)
"""The tables with a row per thread, by `thread_id` (deleting a thread deletes from each)."""

VERSION_TABLE = "agentctl_schema_version"


@dataclass(frozen=True)
class Migration:
    """One step of the schema's history: its statements in each dialect, run in order in one
    transaction with the row recording `version`."""

    version: int
    description: str
    statements: dict[Dialect, tuple[str, ...]]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "the tables of every release before the schema version",
        {
            dialect: (
                *GUARDS[dialect],
                _THREADS[dialect],
                _THREAD_SETTINGS[dialect],
                _SETTINGS[dialect],
            )
            for dialect in ("sqlite", "postgres")
        },
    ),
    Migration(
        2,
        "checkpoints keep messages as deltas since a snapshot (runner.agent.state)",
        # No table changes: checkpoints written before keep the full message list, which
        # LangGraph reads as the value to replay later writes onto. The version is what
        # matters: an agentctl before deltas would prune the ancestors a checkpoint's
        # messages are rebuilt from, and read its latest checkpoint as an empty conversation;
        # at version 2 it refuses the database instead.
        {"sqlite": (), "postgres": ()},
    ),
    Migration(
        3,
        "checkpoints keep a state backend's files as deltas since a snapshot "
        "(runner.backends.files_channel)",
        # No table changes either: checkpoints written before hold the whole `files` mapping,
        # which LangGraph reads as the value to replay later writes onto. An agentctl of
        # version 2 would read a later checkpoint's files as a `_DeltaSnapshot` or as none at
        # all, and prune the ancestors they are rebuilt from; at version 3 it refuses the
        # database instead.
        {"sqlite": (), "postgres": ()},
    ),
)

LATEST = MIGRATIONS[-1].version
"""The schema version this code writes."""

_VERSION_DDL = _both(
    f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version {{int}} PRIMARY KEY, "
    "description TEXT NOT NULL, applied_at TEXT NOT NULL)",
    int=_INT,
)


Execute = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def _table_exists(execute: Execute, dialect: Dialect, table: str) -> bool:
    if dialect == "sqlite":
        found = execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    else:
        found = execute(
            "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?",
            (table,),
        )
    return bool(found)


def schema_version(execute: Execute, dialect: Dialect) -> int:
    """The database's schema version: the highest recorded, 1 for a database of agentctl's
    written before the version table (it has a thread registry), 0 for one without agentctl's
    tables."""
    if _table_exists(execute, dialect, VERSION_TABLE):
        rows = execute(f"SELECT max(version) FROM {VERSION_TABLE}", ())
        if rows and rows[0][0] is not None:
            return int(rows[0][0])
    return 1 if _table_exists(execute, dialect, "agentctl_threads") else 0


def migrate(
    database: Any,
    dialect: Dialect,
    shown: str,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> tuple[int, int]:
    """Bring `database` (a `runner.threads.guards.Database`) to the last of `migrations`;
    (version found, version now). `shown` names the database in the error for a newer one."""
    latest = migrations[-1].version
    with database.transaction(VERSION_TABLE) as execute:
        found = schema_version(execute, dialect)
        if found > latest:
            raise RunError(
                f"the thread database {shown} has schema version {found}, newer than this "
                f"agentctl knows ({latest}): it was written by a newer agentctl; upgrade "
                "agentctl to use it"
            )
        execute(_VERSION_DDL[dialect], ())
        recorded = {row[0] for row in execute(f"SELECT version FROM {VERSION_TABLE}", ())}
        for migration in migrations:
            # a database from before the version table is at 1: version 1's statements (all
            # IF NOT EXISTS) still run, for the tables older releases created lazily
            if migration.version in recorded or migration.version < found:
                continue
            for statement in migration.statements[dialect]:
                execute(statement, ())
            execute(
                f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.description, now()),
            )
    return found, latest
