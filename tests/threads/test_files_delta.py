"""A `state` backend's files kept as deltas (`runner.backends.files_channel`): a checkpoint does
not grow with the files, retention keeps a bounded chain and every checkpoint it leaves reads
the files (and messages) it had, threads written with whole `files` resume, and forks and
exports carry the files; on SQLite and Postgres."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

import pytest
from langchain_core.messages import BaseMessage

from runner.backends.protocol import FileData
from runner.backends.state import merge_files
from runner.run import Session
from runner.threads.export import export_records
from runner.threads.history import fork_thread
from runner.threads.sqlite import SqliteHome
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import spec_file
from tests.threads.test_retention import turns as retention_turns

KEEP = 3


def writer(messages: list[BaseMessage]) -> dict[str, Any]:
    """Each turn writes a new file `/notes/N.md` (N: the turn), then answers."""
    turn = sum(1 for m in messages if m.type == "human")
    if messages[-1].type == "tool":
        return {"content": f"wrote {turn}"}
    args = {"file_path": f"/notes/{turn}.md", "content": f"note {turn}\n" * 40}
    return {"content": "", "tool_calls": [{"name": "write_file", "args": args}]}


def session(directory: Path, db: str | Path, **kwargs: Any) -> Session:
    return Session(spec_file(directory), model=ScriptedChatModel(script=writer), db=db, **kwargs)


def turns(s: Session, count: int, thread: str | None = None, start: int = 1) -> str:
    return retention_turns(s, count, thread, start, ask="note {}", answer=lambda i: f"wrote {i}")


def contents(files: dict[str, Any] | None) -> dict[str, str]:
    """Path -> text (the timestamps differ between two runs of the same script)."""
    return {path: "".join(data["content"]) for path, data in (files or {}).items()}


def notes(count: int) -> dict[str, str]:
    return {f"/notes/{n}.md": f"note {n}\n" * 40 for n in range(1, count + 1)}


def main_checkpoints(s: Session, thread: str) -> list[Any]:
    """The thread's main-graph checkpoints, oldest first."""
    listed = s.home.checkpointer.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    return sorted(listed, key=lambda t: t.config["configurable"]["checkpoint_id"])


def read_back(s: Session, thread: str) -> dict[int, tuple[dict[str, str], list[str]]]:
    """Each main-graph checkpoint's step -> (its files, its human messages), as the graph reads
    them (every ancestor they are rebuilt from must be there)."""
    out = {}
    for saved in main_checkpoints(s, thread):
        state = s.graph.get_state(saved.config)
        humans = [str(m.content) for m in state.values.get("messages", ()) if m.type == "human"]
        out[saved.metadata["step"]] = (contents(state.values.get("files")), humans)
    return out


@pytest.fixture
def cadence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short cadences, so that a short thread goes through many snapshots of each channel and
    many checkpoints made to hold them all."""
    monkeypatch.setattr("runner.agent.state.SNAPSHOT_EVERY", 10)
    monkeypatch.setattr("runner.backends.files_channel.FILES_SNAPSHOT_EVERY", 8)
    monkeypatch.setattr("runner.threads.retention.ALIGN_EVERY", 12)


def test_the_files_channel_is_a_delta_channel_counting_steps(tmp_path: Path) -> None:
    from runner.backends.files_channel import FILES_SNAPSHOT_EVERY, FilesChannel

    with session(tmp_path, tmp_path / "db") as s:
        channel = dict(s.graph.channels)["files"]
    assert isinstance(channel, FilesChannel)
    assert channel.snapshot_frequency == FILES_SNAPSHOT_EVERY


def _long_thread(tmp_path: Path, pruned_db: str, full_db: str, count: int) -> None:
    kept_counts = []
    with session(tmp_path, pruned_db, keep_checkpoints=KEEP) as s:
        thread = turns(s, 1)
        for i in range(2, count + 1):
            turns(s, 1, thread, start=i)
            kept_counts.append(len(main_checkpoints(s, thread)))
        pruned = read_back(s, thread)
        assert contents(s.values(thread).get("files")) == notes(count)
    with session(tmp_path, full_db, keep_checkpoints="all") as s:
        full_thread = turns(s, count)
        full = read_back(s, full_thread)
        sizes = checkpoint_sizes(s, full_thread)
    # retention: the latest KEEP and the chain back to a checkpoint holding every channel,
    # one made every ALIGN_EVERY (12) checkpoints or so; not growing with the thread
    assert max(kept_counts) <= KEEP + 12 + 7 + 1, kept_counts
    assert max(kept_counts[-10:]) <= max(kept_counts[:10]), kept_counts
    # every checkpoint left reads the files and conversation it had without pruning
    assert len(pruned) < len(full) / 3
    for step, values in pruned.items():
        assert values == full[step], step
    assert full[max(full)][0] == notes(count)
    # a checkpoint holds the whole files only at a snapshot; the others do not grow with them
    whole = [size for size, held in sizes if "files" in held]
    deltas = [size for size, held in sizes if not held]
    assert len(whole) * 3 < len(sizes)
    assert max(deltas[-20:]) < max(deltas[:20]) + 1024
    assert max(deltas) * 4 < max(whole)


def checkpoint_sizes(s: Session, thread: str) -> list[tuple[int, set[str]]]:
    """(bytes of the stored checkpoint, which of files and messages it holds) of each
    main-graph checkpoint, oldest first: the blob on SQLite, its channel values on Postgres."""
    from runner.threads.transcripts import decode

    out = []
    if isinstance(s.home, SqliteHome):
        conn = sqlite3.connect(s.home.path)  # type: ignore[arg-type]
        try:
            found = conn.execute(
                "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? "
                "AND checkpoint_ns = '' ORDER BY checkpoint_id",
                (thread,),
            ).fetchall()
        finally:
            conn.close()
        for kind, blob in found:
            held = set(decode(kind, blob)["channel_values"]) & {"files", "messages"}
            out.append((len(blob), held))
        return out
    found = s.home.db.fetch(
        "SELECT c.checkpoint_id, coalesce(sum(length(b.blob)), 0), "
        "bool_or(b.channel = 'files' AND b.type <> 'empty'), "
        "bool_or(b.channel = 'messages' AND b.type <> 'empty') "
        "FROM checkpoints c LEFT JOIN checkpoint_blobs b ON b.thread_id = c.thread_id "
        "AND b.checkpoint_ns = c.checkpoint_ns "
        "AND b.version = c.checkpoint -> 'channel_versions' ->> b.channel "
        "WHERE c.thread_id = ? AND c.checkpoint_ns = '' "
        "GROUP BY c.checkpoint_id ORDER BY c.checkpoint_id",
        (thread,),
    )
    return [
        (int(size), {c for c, held in (("files", files), ("messages", messages)) if held})
        for _, size, files, messages in found
    ]


def test_a_long_thread_writing_a_file_a_turn_keeps_small_checkpoints_and_a_bounded_chain(
    tmp_path: Path, cadence: None
) -> None:
    _long_thread(tmp_path, str(tmp_path / "pruned.db"), str(tmp_path / "full.db"), 30)


def test_the_same_on_postgres(tmp_path: Path, cadence: None, postgres_url: str) -> None:
    pytest.importorskip("psycopg")
    import psycopg

    full = postgres_url.rsplit("/", 1)[0] + "/" + postgres_url.rsplit("/", 1)[1] + "_full"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{full.rsplit("/", 1)[1]}"')
    try:
        _long_thread(tmp_path, postgres_url, full, 20)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{full.rsplit("/", 1)[1]}" WITH (FORCE)')


class PlainFilesState(TypedDict):
    """`FilesState` as agentctl kept it before files were deltas (schema version 2)."""

    files: Annotated[NotRequired[dict[str, FileData]], merge_files]


def _old_thread(tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A thread of three turns written with a plain `files` channel, in a database recorded at
    schema version 2 (what agentctl wrote before this change)."""
    with monkeypatch.context() as patch:
        patch.setattr(
            "runner.middleware.filesystem.middleware.files_state", lambda _: PlainFilesState
        )
        with session(tmp_path, db, keep_checkpoints="all") as s:
            thread = turns(s, 3)
            latest = s.home.checkpointer.get_tuple({"configurable": {"thread_id": thread}})
            assert contents(latest.checkpoint["channel_values"]["files"]) == notes(3)
            with s.home.db.transaction("agentctl_schema_version") as execute:
                execute("DELETE FROM agentctl_schema_version WHERE version = 3", ())
    return thread


def _resume_old(tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.threads.schema import LATEST, schema_version

    thread = _old_thread(tmp_path, db, monkeypatch)
    with session(tmp_path, db, keep_checkpoints=2) as s:
        dialect = "sqlite" if isinstance(s.home, SqliteHome) else "postgres"
        assert schema_version(s.home.db.fetch, dialect) == LATEST == 3
        assert contents(s.values(thread).get("files")) == notes(3)
        turns(s, 2, thread, start=4)
        latest = s.home.checkpointer.get_tuple({"configurable": {"thread_id": thread}})
        # the new turns stored only their own files, on the whole mapping the old one holds
        assert latest.metadata["counters_since_delta_snapshot"]["files"][0] > 0
        assert contents(s.values(thread).get("files")) == notes(5)
        for step, (files, humans) in read_back(s, thread).items():
            if step == -1:  # the first input, not applied yet
                continue
            assert humans[:1] == ["note 1"], step
            assert set(files) <= set(notes(5)), step
        assert read_back(s, thread)[max(read_back(s, thread))][0] == notes(5)


def test_a_thread_with_whole_files_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _resume_old(tmp_path, str(tmp_path / "db"), monkeypatch)


def test_a_thread_with_whole_files_resumes_on_postgres(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    pytest.importorskip("psycopg")
    _resume_old(tmp_path, postgres_url, monkeypatch)


def test_an_agentctl_before_files_as_deltas_refuses_the_database(tmp_path: Path) -> None:
    from runner.errors import RunError
    from runner.threads import open_home
    from runner.threads.schema import MIGRATIONS, migrate

    home = open_home(tmp_path / "db")
    try:
        with pytest.raises(RunError, match=r"schema version 3, newer than this agentctl knows"):
            migrate(home.db, "sqlite", "db", MIGRATIONS[:2])
    finally:
        home.close()


def test_a_fork_and_an_export_carry_the_files(tmp_path: Path, cadence: None) -> None:
    with session(tmp_path, tmp_path / "db", keep_checkpoints=KEEP) as s:
        thread = turns(s, 16)
        kept = main_checkpoints(s, thread)
        # the oldest checkpoint left where a turn ended (kept for a chain: its files are
        # rebuilt from its ancestors' writes, or held there)
        at = next(c for c in kept if not s.graph.get_state(c.config).next)
        expected = contents(s.graph.get_state(at.config).values.get("files"))
        assert expected and expected.items() <= notes(16).items()
        fork = fork_thread(s.home, thread, at=at.config["configurable"]["checkpoint_id"])
        forked = s.home.checkpointer.get_tuple({"configurable": {"thread_id": fork.thread_id}})
        # the fork's checkpoint stands alone: both channels held whole, no counters
        assert {"files", "messages"} <= set(forked.checkpoint["channel_values"])
        assert "counters_since_delta_snapshot" not in forked.metadata
        assert contents(s.values(fork.thread_id).get("files")) == expected
        assert turns(s, 1, fork.thread_id, start=len(expected) + 1) == fork.thread_id
        assert contents(s.values(fork.thread_id).get("files")) == notes(len(expected) + 1)
        assert contents(s.values(thread).get("files")) == notes(16)  # the source's unchanged
        records = export_records(s.home, thread)
    exported = {r["path"]: r["content"] for r in records if r["type"] == "file"}
    assert exported == notes(16)
