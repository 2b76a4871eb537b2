"""The schema version of a thread database: recorded at open, later migrations run once and in
order, and a database newer than the code is refused with a clear error."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from runner.errors import RunError
from runner.threads import open_home
from runner.threads.home import Home
from runner.threads.schema import LATEST, MIGRATIONS, VERSION_TABLE, Migration, migrate
from tests.conftest import ROOT

OLD = ROOT / "tests" / "data" / "threads_v1"

OWNER = Migration(
    LATEST + 1,
    "a thread's owner",
    {
        "sqlite": ("ALTER TABLE agentctl_threads ADD COLUMN owner TEXT",),
        "postgres": ("ALTER TABLE agentctl_threads ADD COLUMN owner TEXT",),
    },
)
"""A later migration, as the next schema change will be: it fails if it runs twice."""


@pytest.fixture(params=["sqlite", "postgres"])
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A thread database written before the schema version, opened by today's code."""
    if request.param == "postgres":
        psycopg = pytest.importorskip("psycopg")
        url = request.getfixturevalue("postgres_url")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute((OLD / "postgres.sql").read_text(encoding="utf-8"))
        opened = open_home(url)
    else:
        shutil.copy(OLD / "agentctl.db", tmp_path / "agentctl.db")
        opened = open_home(tmp_path / "agentctl.db")
    yield opened
    opened.close()


def _dialect(home: Home) -> Any:
    return "postgres" if isinstance(home.path, str) and "://" in home.path else "sqlite"


def _versions(home: Home) -> list[int]:
    return [row[0] for row in home.db.fetch(f"SELECT version FROM {VERSION_TABLE} ORDER BY 1")]


def test_a_database_from_before_the_version_is_recorded_at_version_1_then_migrated(
    home: Home,
) -> None:
    assert _versions(home) == [1, 2, 3] == [m.version for m in MIGRATIONS]
    # the table an older release created only when keep-checkpoints was set is there too
    assert home.retention.effective_keep() == 4


def test_a_later_migration_runs_once(home: Home) -> None:
    dialect = _dialect(home)
    assert migrate(home.db, dialect, "db", (*MIGRATIONS, OWNER)) == (LATEST, LATEST + 1)
    assert migrate(home.db, dialect, "db", (*MIGRATIONS, OWNER)) == (LATEST + 1, LATEST + 1)
    assert _versions(home) == [1, 2, 3, LATEST + 1]
    owners = home.db.fetch("SELECT owner FROM agentctl_threads")
    assert owners == [(None,), (None,)]


def test_a_newer_database_is_refused(home: Home) -> None:
    dialect = _dialect(home)
    migrate(home.db, dialect, "db", (*MIGRATIONS, OWNER))
    with pytest.raises(RunError) as raised:
        migrate(home.db, dialect, "the-db", MIGRATIONS)
    assert str(raised.value) == (
        f"the thread database the-db has schema version {LATEST + 1}, newer than this agentctl "
        f"knows ({LATEST}): it was written by a newer agentctl; upgrade agentctl to use it"
    )


def test_opening_a_newer_sqlite_database_fails_with_the_reason(tmp_path: Path) -> None:
    db = tmp_path / "agentctl.db"
    open_home(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(f"INSERT INTO {VERSION_TABLE} VALUES (99, 'from the future', 'now')")
    with pytest.raises(RunError, match="has schema version 99, newer than this agentctl knows"):
        open_home(db)


def test_opening_a_newer_postgres_database_fails_with_the_reason(postgres_url: str) -> None:
    open_home(postgres_url).close()
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {VERSION_TABLE} VALUES (99, 'from the future', 'now')")
    with pytest.raises(RunError, match="has schema version 99, newer than this agentctl knows"):
        open_home(postgres_url)


def test_a_new_database_starts_at_the_latest_version(tmp_path: Path) -> None:
    home = open_home(tmp_path / "new.db")
    try:
        assert _versions(home) == [m.version for m in MIGRATIONS]
    finally:
        home.close()
