"""The latest checkpoint a Postgres session wrote, served from memory (`runner.threads.latest`):
what it serves is what the database reads, and a write it did not make is read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.threads.test_retention import answers, turns

CHANNELS = ["messages", "files"]


@contextmanager
def plain_saver(url: str) -> Iterator[Any]:
    """LangGraph's own saver on a connection of its own: the database as a new process reads
    it."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        yield PostgresSaver(conn)  # type: ignore[arg-type]


@contextmanager
def session(tmp_path: Path, url: str) -> Iterator[Any]:
    from runner.run import Session
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import spec_file

    with Session(spec_file(tmp_path), model=ScriptedChatModel(script=answers), db=url) as s:
        yield s


def served(saver: Any, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each `get_delta_channel_history` of the saver was served from memory."""
    latest = saver.agentctl_latest
    seen: list[bool] = []
    history = latest.history

    def spying(*args: Any) -> Any:
        found = history(*args)
        seen.append(found is not None)
        return found

    monkeypatch.setattr(latest, "history", spying)
    return seen


def read_both(saver: Any, plain: Any, thread: str) -> tuple[Any, Any]:
    """(the session's saver's, LangGraph's own) latest checkpoint and its delta channels'
    history, read as LangGraph reads them at the start of a run."""
    config: Any = {"configurable": {"thread_id": thread}}
    mine, theirs = saver.get_tuple(config), plain.get_tuple(config)
    return (
        (mine, saver.get_delta_channel_history(config=mine.config, channels=CHANNELS)),
        (theirs, plain.get_delta_channel_history(config=theirs.config, channels=CHANNELS)),
    )


def test_the_latest_checkpoint_served_from_memory_is_what_the_database_reads(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.threads.postgres import PostgresRetention

    with session(tmp_path, postgres_url) as s, plain_saver(postgres_url) as plain:
        saver = s.home.checkpointer
        seen = served(saver, monkeypatch)
        marked: list[int] = []  # the turns whose prune marked the latest checkpoint
        write = s.home.db.write

        def marking(statement: str, rows: Any) -> None:
            if statement == PostgresRetention.SNAPSHOT_NEXT:
                marked.append(i)
            write(statement, rows)

        monkeypatch.setattr(s.home.db, "write", marking)
        thread = turns(s, 2)
        for i in range(2, 16):  # past retention's mark (every 50 checkpoints) and its snapshot
            turns(s, 1, thread, start=i)
            mine, theirs = read_both(saver, plain, thread)
            assert mine == theirs
            assert seen[-1] or i in marked, f"turn {i}: read from the database"
        assert marked and seen[-1]
        assert len(theirs[1]["messages"]["writes"]) > 0  # rebuilt from writes, not a snapshot
        asked = [m.content for m in s.state(thread).values["messages"] if m.type == "human"]
    assert asked == [f"question {i}" for i in range(16)]


def test_a_write_the_session_did_not_make_is_read_from_the_database(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer (a process that crashed before its next checkpoint, retention's rewrite
    of the counters): the session reads the thread again instead of serving what it wrote."""
    from langchain_core.messages import AIMessage

    from runner.threads.postgres import PostgresRetention

    with session(tmp_path, postgres_url) as s, plain_saver(postgres_url) as plain:
        saver = s.home.checkpointer
        seen = served(saver, monkeypatch)
        thread = turns(s, 4)
        config: Any = {"configurable": {"thread_id": thread}}
        latest = plain.get_tuple(config)
        assert latest is not None and latest.parent_config is not None

        # a write on the latest checkpoint: an input another process saved before it crashed
        # (after this session took the lease, read the check with it, and let go unused)
        s.home.lease.acquire(thread).release()
        written = [("messages", [AIMessage("from elsewhere", id="elsewhere-1")])]
        plain.put_writes(latest.config, written, task_id="elsewhere")
        mine, theirs = read_both(saver, plain, thread)
        assert mine == theirs and not seen[-1]
        assert [w[1] for w in mine[0].pending_writes] == ["messages"]

        # a write on a checkpoint of the chain the messages are rebuilt from
        turns(s, 1, thread, start=4)
        read_both(saver, plain, thread)
        assert seen[-1]  # served again
        parent = plain.get_tuple(config).parent_config
        plain.put_writes(parent, written, task_id="elsewhere-2")
        mine, theirs = read_both(saver, plain, thread)
        assert mine == theirs and not seen[-1]
        assert "from elsewhere" in [
            m.content for _, _, v in mine[1]["messages"]["writes"] for m in v
        ]

        # retention marking the latest checkpoint for a snapshot at the next step
        turns(s, 1, thread, start=5)
        read_both(saver, plain, thread)
        assert seen[-1]
        latest_id = plain.get_tuple(config).config["configurable"]["checkpoint_id"]
        s.home.db.write(
            PostgresRetention.SNAPSHOT_NEXT, [('{"messages": [1, 0]}', thread, latest_id)]
        )
        mine, theirs = read_both(saver, plain, thread)
        assert mine == theirs and not seen[-1]
        assert mine[0].metadata["counters_since_delta_snapshot"] == {"messages": [1, 0]}


def test_another_session_going_on_with_the_thread_is_read(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        session(tmp_path, postgres_url) as first,
        session(tmp_path, postgres_url) as second,
        plain_saver(postgres_url) as plain,
    ):
        saver = first.home.checkpointer
        seen = served(saver, monkeypatch)
        thread = turns(first, 3)
        turns(second, 1, thread, start=3)
        mine, theirs = read_both(saver, plain, thread)
        assert mine == theirs and not seen[-1]
        turns(first, 1, thread, start=4)
        asked = [m.content for m in first.state(thread).values["messages"] if m.type == "human"]
    assert asked == [f"question {i}" for i in range(5)]
