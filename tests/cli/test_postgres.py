"""The thread database on Postgres (`--db postgresql://...`), as users meet it: `agentctl run`
and `agentctl threads` in separate processes on one real Postgres database (tests/services.py
gives each test a fresh one). Crashes and races on Postgres are in tests/cli/test_crashes.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from runner.run import Session
from runner.threads import open_home
from tests.conftest import ROOT, run_cli


@pytest.fixture
def spine(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tests" / "data" / "spine", tmp_path / "spine")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    return tmp_path / "spine" / "agent.yaml"


def events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_a_thread_runs_waits_and_resumes_across_processes_on_postgres(
    spine: Path, tmp_path: Path, postgres_url: str
) -> None:
    """One-shot run, a message to the thread that stops for approval, the approval from a third
    process: each a new process on the Postgres database, nothing in the SQLite home."""
    db = ("--db", postgres_url)
    first = run_cli("run", str(spine), "add", "--output", "jsonl", *db, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    thread = events(first.stdout)[0]["thread_id"]
    assert events(first.stdout)[-1]["content"] == "The sum is 5."
    asked = run_cli(
        "run", str(spine), "shout now", "--thread", thread, "--output", "jsonl", *db, cwd=tmp_path
    )
    assert asked.returncode == 0, asked.stderr
    assert events(asked.stdout)[-1]["type"] == "interrupt"
    answered = run_cli(
        "run", str(spine), "--thread", thread, "--approve", "--output", "jsonl", *db, cwd=tmp_path
    )
    assert answered.returncode == 0, answered.stderr
    lines = events(answered.stdout)
    assert [e["content"] for e in lines if e["type"] == "tool_result"] == ["HELLO"]
    assert lines[-1]["content"] == "I shouted."
    again = run_cli("run", str(spine), "--thread", thread, "--reject", *db, cwd=tmp_path)
    assert again.returncode == 1
    assert "already answered (approve, by pid" in again.stderr
    assert not (tmp_path / "agentctl.db").exists()  # the home's SQLite file was not used


def test_threads_list_show_rm_on_postgres(spine: Path, tmp_path: Path, postgres_url: str) -> None:
    with Session(spine, db=postgres_url) as session:
        done = session.run("add two and three").thread_id
        waiting = session.run("add again").thread_id
        assert session.run("now shout", thread_id=waiting).interrupt is not None
    for args in (
        ("threads", "--db", postgres_url),
        ("threads", "list", "--db", postgres_url),
        ("threads", "--db", postgres_url, "list", "--agent", "calc"),
    ):
        listed = run_cli(*args, cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        rows = listed.stdout.splitlines()[1:]
        assert [row.split()[0] for row in rows] == [waiting, done]
    shown = run_cli("threads", "show", waiting, "--db", postgres_url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "  shout(text='hello')  [approve/edit/reject]" in shown.stdout
    assert "user: now shout" in shown.stdout
    removed = run_cli("threads", "--db", postgres_url, "rm", done, "--yes", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    home = open_home(postgres_url)
    try:
        # what `threads show` printed was read without LangGraph's saver
        saved = home.saved_transcript(waiting)
        assert home._checkpointer is None and saved is not None
        assert [m.text for m in saved[0] if m.type == "human"] == ["add again", "now shout"]
        assert [(a.name, a.args) for a in saved[1]] == [("shout", {"text": "hello"})]
        assert home.saved_transcript(done) is None
        assert [t.thread_id for t in home.threads()] == [waiting]
        assert not home.retention.has_checkpoints(done)
        assert home.transcript(done) is None
    finally:
        home.close()
    gone = run_cli("threads", "show", done, "--db", postgres_url, cwd=tmp_path)
    assert gone.returncode == 1
    assert gone.stderr == f"error: no thread {done!r} in {postgres_url}\n"


def test_retention_on_postgres_removes_old_checkpoints_and_their_values(
    spine: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`keep-checkpoints` on Postgres: old checkpoints, their writes and the channel values only
    they named go; what the kept ones' messages and files are rebuilt from stays (a snapshot
    at every update or step here, and one of both at the start of each turn, so that the chains
    are short); the thread's latest state is whole."""
    from runner.run import Decision

    monkeypatch.setattr("runner.agent.state.SNAPSHOT_EVERY", 1)
    monkeypatch.setattr("runner.backends.files_channel.FILES_SNAPSHOT_EVERY", 1)
    monkeypatch.setattr("runner.threads.retention.ALIGN_EVERY", 1)

    with Session(spine, db=postgres_url, keep_checkpoints="all") as session:
        thread = session.run("add").thread_id
        assert session.run("shout", thread_id=thread).interrupt is not None
        approved = session.run(thread_id=thread, decisions=[Decision("approve")])
        assert approved.content == "I shouted."
    home = open_home(postgres_url)
    try:

        def count(table: str) -> int:
            rows = home.db.fetch(f"SELECT count(*) FROM {table} WHERE thread_id = ?", (thread,))
            return int(rows[0][0])

        before = {t: count(t) for t in ("checkpoints", "checkpoint_writes", "checkpoint_blobs")}
        home.retention.store_keep(2)
        pruned = home.retention.prune_all(2)
        after = {t: count(t) for t in before}
        assert home.retention.stored_keep() == (True, 2)
        broken = home.db.fetch(
            "SELECT count(*) FROM checkpoints c WHERE c.thread_id = ? "
            "AND c.metadata->'counters_since_delta_snapshot' IS NOT NULL "
            "AND c.parent_checkpoint_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM checkpoints p "
            "WHERE p.thread_id = c.thread_id AND p.checkpoint_ns = c.checkpoint_ns "
            "AND p.checkpoint_id = c.parent_checkpoint_id)",
            (thread,),
        )
        # `threads keep-checkpoints` then vacuums the checkpoint tables, whatever autovacuum does
        assert home.retention.reclaim(force=True) >= 0
        assert home.retention.vacuumed == [
            ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "agentctl_tool_journal"]
        ]
    finally:
        home.close()
    # the latest two, the one where the thread waited for approval, and their chains
    assert broken == [(0,)]
    assert 3 <= after["checkpoints"] < before["checkpoints"]
    assert pruned.checkpoints == before["checkpoints"] - after["checkpoints"]
    assert after["checkpoint_writes"] < before["checkpoint_writes"]
    assert after["checkpoint_blobs"] < before["checkpoint_blobs"]
    home = open_home(postgres_url)
    try:
        transcript = home.transcript(thread)  # decodes every channel value it names
    finally:
        home.close()
    assert transcript is not None
    assert [m.content for m in transcript.messages if m.type == "human"] == ["add", "shout"]
    assert transcript.messages[-1].content == "I shouted."


def test_postgres_errors_are_clear(spine: Path, tmp_path: Path, postgres_url: str) -> None:
    refused = run_cli(
        "threads", "--db", "postgresql://nobody:secret@127.0.0.1:1/none", cwd=tmp_path
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "error: cannot open the thread database postgresql://nobody:***@127.0.0.1:1/none: "
    )
    assert "Traceback" not in refused.stderr and "secret" not in refused.stderr
    missing = run_cli("run", str(spine), "add", "--db", postgres_url + "_nope", cwd=tmp_path)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    other = run_cli("threads", "--db", "mysql://x/y", cwd=tmp_path)
    assert other.returncode == 2
    assert "is neither a file nor a postgresql:// URL" in other.stderr
    # without the postgres extra: a psycopg that cannot be imported
    fake = tmp_path / "no_psycopg" / "psycopg"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise ImportError(\"No module named 'psycopg'\", name='psycopg')\n"
    )
    without = run_cli(
        "threads",
        "--db",
        postgres_url,
        cwd=tmp_path,
        env={"PYTHONPATH": str(fake.parent)},
        process=True,
    )
    assert without.returncode == 1
    assert "needs the postgres extra (psycopg is missing): pip install 'agentctl[postgres]'" in (
        without.stderr
    )


def test_thread_tools_export_fork_search_prune_on_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    """`agentctl threads export/fork/search/prune --db postgresql://...` on the showcase's
    threads: one whose `write_file` approval was answered, one still waiting for it."""
    from datetime import UTC, datetime, timedelta

    from runner.run import Decision
    from runner.threads import history
    from tests.conftest import AGENTS

    notes = "Write the release notes for agentctl 0.1.0"
    shutil.copytree(AGENTS, tmp_path / "agents", ignore=shutil.ignore_patterns("workspace"))
    shutil.copytree(ROOT / "skills", tmp_path / "skills")
    spec = tmp_path / "agents" / "showcase.yaml"
    with Session(spec, db=postgres_url) as session:
        approved = session.run(notes).thread_id
        done = session.run(thread_id=approved, decisions=[Decision("approve")])
        assert done.error is None and done.final is not None
        waiting = session.run(notes)
        assert [a.name for a in waiting.interrupt.actions] == ["write_file"]  # type: ignore[union-attr]
    db = ("--db", postgres_url)

    def export(thread: str) -> list[dict[str, Any]]:
        exported = run_cli("threads", "export", thread, *db, cwd=tmp_path)
        assert exported.returncode == 0, exported.stderr
        return events(exported.stdout)

    answered = export(approved)
    assert answered[0]["type"] == "thread" and answered[0]["agent"] == "showcase"
    [approval] = [r for r in answered if r["type"] == "approval"]
    assert approval["status"] == "answered" and approval["decisions"] == [{"type": "approve"}]
    written = next(r for r in answered if r["type"] == "tool_call" and r["name"] == "write_file")
    assert written["result"] == "Updated file /RELEASE_NOTES.md"
    [pending] = [r for r in export(waiting.thread_id) if r["type"] == "approval"]
    assert pending["status"] == "pending" and pending["decisions"] is None
    markdown = run_cli("threads", "export", approved, "--format", "markdown", *db, cwd=tmp_path)
    assert "## Approvals\n\n- `write_file`: answered: approve (" in markdown.stdout

    found = run_cli("threads", "search", "second pair of eyes", "--json", *db, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert {m["thread_id"] for m in json.loads(found.stdout)} == {approved}
    none = run_cli("threads", "search", "zebra crossing", *db, cwd=tmp_path)
    assert (none.returncode, none.stderr) == (1, "no messages contain 'zebra crossing'\n")

    # A fork of the waiting thread waits for the same approval; answering it there leaves the
    # source waiting.
    forked = run_cli("threads", "fork", waiting.thread_id, *db, cwd=tmp_path)
    assert forked.returncode == 0, forked.stderr
    new = forked.stdout.strip()
    assert new not in (waiting.thread_id, approved)
    shown = json.loads(run_cli("threads", "show", new, "--json", *db, cwd=tmp_path).stdout)
    assert [p["name"] for p in shown["pending"]] == ["write_file"]
    answer = run_cli("run", str(spec), "--thread", new, "--reject", *db, cwd=tmp_path)
    assert answer.returncode == 0, answer.stderr
    [rejected] = [r for r in export(new) if r["type"] == "approval"]
    assert rejected["status"] == "answered" and rejected["decisions"][0]["type"] == "reject"
    [still] = [r for r in export(waiting.thread_id) if r["type"] == "approval"]
    assert still["status"] == "pending"

    kept = run_cli("threads", "prune", "--older-than", "30d", *db, cwd=tmp_path)
    assert (kept.returncode, kept.stdout) == (0, "")
    home = open_home(postgres_url)
    try:
        lease = home.lease.acquire(waiting.thread_id)  # as a run in progress holds it
        later = datetime.now(UTC) + timedelta(days=31)
        pruned = history.prune_threads(home, timedelta(days=30), now=later)
        assert sorted(t.thread_id for t in pruned.deleted) == sorted([approved, new])
        assert [t.thread_id for t, _ in pruned.running] == [waiting.thread_id]
        lease.release()
        assert [t.thread_id for t in home.threads()] == [waiting.thread_id]
        assert home.transcript(approved) is None
    finally:
        home.close()
    gone = run_cli("threads", "export", approved, *db, cwd=tmp_path)
    assert gone.returncode == 1 and f"no thread {approved!r}" in gone.stderr
