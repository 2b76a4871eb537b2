"""Databases written before the schema version (tests/data/threads_v1/README.md) open with
today's code, and their threads resume: the approval one waits on is answered, the finished one
reads as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.run import Decision, Session
from runner.threads import open_home
from tests.conftest import ROOT

OLD = ROOT / "tests" / "data" / "threads_v1"
# (waiting for approval, finished) in each database
SQLITE_THREADS = ("20261125-152034-0935bd", "20261125-152039-e29d25")
POSTGRES_THREADS = ("20261125-152058-9a7f79", "20261125-152102-f8d1ae")


@pytest.fixture
def showcase(tmp_path: Path) -> Path:
    """A copy of the showcase agent (it writes into a workspace beside its spec)."""
    (tmp_path / "agents" / "workspace" / "showcase").mkdir(parents=True)
    for name in ("showcase.yaml", "showcase.cassette.yaml"):
        shutil.copy(ROOT / "agents" / name, tmp_path / "agents" / name)
    shutil.copytree(ROOT / "skills" / "release-notes", tmp_path / "skills" / "release-notes")
    return tmp_path / "agents" / "showcase.yaml"


def _resume_and_read(db: str, showcase: Path, waiting: str, finished: str) -> None:
    home = open_home(db)
    try:
        assert [t.thread_id for t in home.threads()] == [finished, waiting]
        info = home.thread(waiting)
        assert (
            info is not None and info.first_message == "Write the release notes for agentctl 0.1.0"
        )
        done = home.transcript(finished)
        assert done is not None and done.pending == []
        assert "RELEASE_NOTES.md" in str(done.messages[-1].content)
        transcript = home.transcript(waiting)
        assert transcript is not None
        assert [a.name for a in transcript.pending] == ["write_file"]
    finally:
        home.close()
    with Session(showcase, db=db) as session:
        assert [[a.name for a in actions] for _id, actions in session.pending(waiting)] == [
            ["write_file"]
        ]
        result = session.run(thread_id=waiting, decisions=[Decision("approve")])
        assert result.error is None and result.interrupt is None
        assert result.content is not None and "RELEASE_NOTES.md" in result.content
        assert session.pending(waiting) == []
    home = open_home(db)
    try:
        # the turn after the migration stored its messages as deltas on the full list the old
        # checkpoint holds, and the whole conversation reads back through them
        latest = home.checkpointer.get_tuple({"configurable": {"thread_id": waiting}})
        assert "messages" not in latest.checkpoint["channel_values"]
        assert latest.metadata["counters_since_delta_snapshot"]["messages"][0] > 0
        after = home.transcript(waiting)
        assert after is not None and len(after.messages) > len(transcript.messages)
        assert after.messages[: len(transcript.messages)] == transcript.messages
        assert after.messages[-1].content == result.content
    finally:
        home.close()
    notes = showcase.parent / "workspace" / "showcase" / "RELEASE_NOTES.md"
    assert notes.read_text(encoding="utf-8").startswith("# agentctl 0.1.0")


def test_a_sqlite_database_of_the_previous_release_resumes(showcase: Path, tmp_path: Path) -> None:
    db = tmp_path / "agentctl.db"
    shutil.copy(OLD / "agentctl.db", db)
    _resume_and_read(str(db), showcase, *SQLITE_THREADS)


def test_a_postgres_database_of_the_previous_release_resumes(
    showcase: Path, postgres_url: str
) -> None:
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute((OLD / "postgres.sql").read_text(encoding="utf-8"))
    _resume_and_read(postgres_url, showcase, *POSTGRES_THREADS)
