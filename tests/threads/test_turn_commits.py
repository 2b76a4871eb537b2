"""What a turn commits to the thread database: LangGraph's checkpoints (as bare `create_agent` on a
`SqliteSaver` commits them, the thread's time of last use riding on the first) and the tool
journal; the lease (a lock file) commits nothing, and the pruning commits only on the turns that
leave checkpoints to remove."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from runner.threads import open_home
from tests.threads.test_retention import session, turns

LANGGRAPH = {"checkpoints", "writes"}
JOURNAL = {"agentctl_tool_journal"}


def transactions(conn: sqlite3.Connection) -> tuple[list[set[str]], Any]:
    """The tables each committed transaction of `conn` wrote, filled in as they commit, and a
    function that stops recording."""
    committed: list[set[str]] = []
    current: set[str] = set()

    def trace(statement: str) -> None:
        words = statement.split()
        if not words:
            return
        verb = words[0].upper()
        if verb == "COMMIT":
            committed.append(set(current))
            current.clear()
        elif verb in ("INSERT", "UPDATE", "DELETE"):
            current.add(table_of(words))

    conn.set_trace_callback(trace)
    return committed, lambda: conn.set_trace_callback(None)


def table_of(words: list[str]) -> str:
    upper = [w.upper() for w in words]
    after = "UPDATE" if upper[0] == "UPDATE" else ("INTO" if "INTO" in upper else "FROM")
    return words[upper.index(after) + 1].strip('"')


def bare_transactions(tmp_path: Path) -> list[set[str]]:
    """One more turn of the same script on bare `create_agent` with a `SqliteSaver`."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver

    from tests.fakes import ScriptedChatModel
    from tests.threads.test_retention import answers

    @tool
    def ls(path: str) -> str:
        """List a folder."""
        return "a.md"

    conn = sqlite3.connect(tmp_path / "bare.db", check_same_thread=False)
    agent = create_agent(
        ScriptedChatModel(script=answers), tools=[ls], checkpointer=SqliteSaver(conn)
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    for i in range(3):
        agent.invoke({"messages": [("user", f"question {i}")]}, config, durability="sync")
    committed, stop = transactions(conn)
    agent.invoke({"messages": [("user", "question 3")]}, config, durability="sync")
    stop()
    conn.close()
    return committed


def test_a_turn_commits_what_bare_langgraph_does_plus_the_journal(tmp_path: Path) -> None:
    bare = bare_transactions(tmp_path)
    assert bare and all(tables <= LANGGRAPH for tables in bare)
    with session(tmp_path, approvals=False) as s:
        thread = turns(s, 12)  # past the checkpoints a thread keeps
        per_turn = []
        for i in range(12, 40):
            committed, stop = transactions(s.home.conn)
            turns(s, 1, thread, start=i)
            stop()
            per_turn.append(committed)
            assert s.home.lease.holder(thread) is None  # let go, with nothing committed
    pruning = 0
    for committed in per_turn:
        assert not any("agentctl_leases" in tables for tables in committed)
        # the thread's time of last use rides on the turn's first checkpoint
        assert committed[0] == {"checkpoints", "agentctl_threads"}
        assert sum("agentctl_threads" in tables for tables in committed) == 1
        assert [t == JOURNAL for t in committed].count(True) == 1  # the `ls` call's result
        extra = len(committed) - len(bare) - 1
        # the prune's own transaction, only when the kept checkpoints' delta chains leave
        # some to remove (a new snapshot cut the chain); the journal entries no checkpoint
        # left can need go in it too
        assert extra in (0, 1), committed
        if extra:
            assert committed[-1] <= LANGGRAPH | JOURNAL
            pruning += 1
    assert 0 < pruning <= len(per_turn) // 4


def test_a_new_thread_is_registered_in_one_commit(tmp_path: Path) -> None:
    with session(tmp_path, approvals=False) as s:
        committed, stop = transactions(s.home.conn)
        thread = turns(s, 1)
        stop()
        own = [t for t in committed if not t <= LANGGRAPH and t != JOURNAL]
        assert own == [{"agentctl_threads", "agentctl_thread_settings"}]
        assert s.home.lease.holder(thread) is None
        info = s.home.thread(thread)
        assert info is not None and info.first_message == "question 0"


def test_the_time_of_last_use_is_committed_with_the_turns_first_checkpoint(
    tmp_path: Path,
) -> None:
    with session(tmp_path, approvals=False) as s:
        thread = turns(s, 1)
        long_ago = "2000-01-01T00:00:00+00:00"
        s.home.db.write("UPDATE agentctl_threads SET updated_at = ?", [(long_ago,)])
        committed, stop = transactions(s.home.conn)
        turns(s, 1, thread, start=1)
        stop()
        other = open_home(tmp_path / "db")  # as another process sees it
        try:
            after = other.thread(thread)
        finally:
            other.close()
    assert after is not None and after.updated_at > long_ago
    assert committed[0] == {"checkpoints", "agentctl_threads"}


def test_a_failed_turn_still_lets_go_of_the_thread(tmp_path: Path) -> None:
    from runner.run import Session
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import spec_file

    def broken(messages: Any) -> Any:
        raise RuntimeError("the provider is down")

    with Session(
        spec_file(tmp_path), model=ScriptedChatModel(script=broken), db=tmp_path / "db"
    ) as s:
        result = s.run("hello")
        assert result.error is not None and "provider is down" in result.error.message
        assert s.home.lease.holder(result.thread_id) is None
        assert s.home.thread(result.thread_id) is not None


# --------------------------------------------------------------------------- batched writes


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A thread database (SQLite, Postgres) as its home, and a function that lists the keys of
    `agentctl_settings` as another process sees them."""
    where = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgres"
        else str(tmp_path / "threads.db")
    )
    home, other = open_home(where), open_home(where)

    def seen_elsewhere() -> list[str]:
        return [row[0] for row in other.db.fetch("SELECT key FROM agentctl_settings ORDER BY key")]

    yield home.db, seen_elsewhere
    home.close()
    other.close()


SET = "INSERT INTO agentctl_settings (key, value) VALUES (?, 'x')"


def test_writes_in_a_batch_are_committed_with_its_transaction_or_at_its_end(
    database: Any,
) -> None:
    db, seen_elsewhere = database
    with db.batched():
        db.write(SET, [("a",)])
        db.write(SET, [("b",)])
        assert seen_elsewhere() == []  # held
        with db.transaction("t") as execute:
            execute(SET, ("c",))
        assert seen_elsewhere() == ["a", "b", "c"]  # one commit
        db.write(SET, [("d",)])
        assert seen_elsewhere() == ["a", "b", "c"]
    assert seen_elsewhere() == ["a", "b", "c", "d"]  # at the end


def test_a_failed_transaction_leaves_the_held_writes_to_the_end_of_the_batch(
    database: Any,
) -> None:
    db, seen_elsewhere = database
    with db.batched():
        db.write(SET, [("a",)])
        with pytest.raises(RuntimeError), db.transaction("t") as execute:
            execute(SET, ("b",))
            raise RuntimeError("the prune failed")
        assert seen_elsewhere() == []
    assert seen_elsewhere() == ["a"]


def test_only_the_batching_thread_holds_its_writes(database: Any) -> None:
    db, seen_elsewhere = database
    with db.batched():
        other = threading.Thread(target=db.write, args=(SET, [("heartbeat",)]))
        other.start()
        other.join()
        assert seen_elsewhere() == ["heartbeat"]
        with db.batched():  # nested: the outer block commits
            db.write(SET, [("inner",)])
        assert seen_elsewhere() == ["heartbeat"]
    assert seen_elsewhere() == ["heartbeat", "inner"]
