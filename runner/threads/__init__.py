"""The thread database: LangGraph's checkpoints and store, and agentctl's tables beside them.

```
home.py         Home: the face the run loop, the CLI and the thread tools use; ThreadInfo, ...
schema.py       every agentctl table in both dialects, the schema version and its migrations
guards.py       the lease, the answer log and the tool journal, over a `Database`
retention.py    which checkpoints a thread keeps, and the one prune over a `Database`
sqlite.py       SqliteHome and the SQLite side of the above
postgres.py     PostgresHome and the Postgres side of the above (threads shared with serve too)
transcripts.py  a saved conversation and its pending approvals, read without LangChain
export.py       thread records, JSON lines and Markdown exports
history.py      checkpoints, fork, search and prune of threads
```

`open_home(db)` opens a thread database: a `postgresql://` URL on Postgres, anything else a
SQLite file (default `$AGENTCTL_HOME/agentctl.db`); either is migrated to the current schema
version on the way (`runner.threads.schema`).
"""

from __future__ import annotations

import os

from runner.threads.home import Home

__all__ = ["Home", "is_postgres_url", "open_home"]


def is_postgres_url(db: object) -> bool:
    """Whether `--db` names a Postgres thread database rather than a SQLite file."""
    return isinstance(db, str) and db.startswith(("postgresql://", "postgres://"))


def open_home(db: str | os.PathLike[str] | None = None) -> Home:
    """The thread database `db` names (see the module docstring), open and migrated."""
    if is_postgres_url(db):
        from runner.threads.postgres import PostgresHome

        return PostgresHome(db)
    from runner.threads.sqlite import SqliteHome

    return SqliteHome(db)
