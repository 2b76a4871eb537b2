"""Checkpoint retention: a thread keeps its latest checkpoints, its approvals and its fork points,
and everything a resume, an answer or `threads show` reads."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from runner.events import Final, Interrupt
from runner.run import Decision, Session
from runner.threads import open_home
from runner.threads.retention import CheckpointRow, kept_checkpoints, made_at, parse_keep
from tests.conftest import run_cli
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import spec_file


def answers(messages: list[BaseMessage]) -> dict[str, Any]:
    """`write X` asks to write a file (an approval with `interrupt_on`); anything else gets a
    numbered answer after one `ls`."""
    last = messages[-1]
    turn = sum(1 for m in messages if m.type == "human")
    if last.type == "tool":
        return {"content": f"answer {turn}"}
    text = str(last.content)
    if text.startswith("write "):
        args = {"file_path": f"/{text[6:]}.md", "content": "x"}
        return {"content": "", "tool_calls": [{"name": "write_file", "args": args}]}
    return {"content": "", "tool_calls": [{"name": "ls", "args": {"path": "/"}}]}


def session(tmp_path: Path, *, approvals: bool = True, **kwargs: Any) -> Session:
    spec = spec_file(tmp_path, interrupt_on={"write_file": True} if approvals else {})
    kwargs.setdefault("db", tmp_path / "db")
    return Session(spec, model=ScriptedChatModel(script=answers), **kwargs)


def rows(db: Path, table: str, thread: str) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            f"SELECT checkpoint_ns, checkpoint_id FROM {table} WHERE thread_id = ? "
            "ORDER BY checkpoint_id",
            (thread,),
        ).fetchall()
    finally:
        conn.close()


def with_chains(db: Path, thread: str, kept: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """`kept` and, for each delta channel of each of its checkpoints (its metadata counts the
    channel's updates since a snapshot), its ancestors back to the one holding that channel's
    value (its snapshot), and the same for those: every checkpoint left reads whole."""
    conn = sqlite3.connect(db)
    try:
        found = conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
            "json_extract(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot') "
            "FROM checkpoints WHERE thread_id = ?",
            (thread,),
        ).fetchall()
    finally:
        conn.close()
    parent = {(ns, cid): (ns, pid) for ns, cid, pid, _ in found if pid}
    counted = {(ns, cid): set(json.loads(c)) if c else set() for ns, cid, _, c in found}
    out = set(kept)
    while True:
        more = set()
        for start in out:
            for channel in counted.get(start, ()):
                key = start
                while channel in counted.get(key, ()) and key in parent:
                    key = parent[key]
                    more.add(key)
        if more <= out:
            return out
        out |= more


def assert_every_kept_checkpoint_reads(s: Session, thread: str, first: str = "question 0") -> None:
    """Each main-graph checkpoint left reads its whole conversation: nothing its messages are
    rebuilt from was pruned (a broken chain reads as an empty or cut history, silently)."""
    for ns, cid in rows(s.home.path, "checkpoints", thread):  # type: ignore[arg-type]
        if ns:
            continue
        config: Any = {"configurable": {"thread_id": thread, "checkpoint_id": cid}}
        state = s.graph.get_state(config)
        humans = [m.text for m in state.values.get("messages", ()) if m.type == "human"]
        if state.metadata.get("step") == -1:  # the first input, not applied yet
            continue
        assert humans[:1] == [first], (cid, state.metadata, humans)


def latest(db: Path, thread: str, count: int) -> set[tuple[str, str]]:
    return set(rows(db, "checkpoints", thread)[-count:])


def turns(
    s: Session,
    count: int,
    thread: str | None = None,
    start: int = 0,
    *,
    ask: str = "question {}",
    answer: Callable[[int], str] = lambda i: f"answer {i + 1}",
) -> str:
    """`count` turns on `thread` (a new one when None), the i-th asking `ask` with i filled in
    and expecting `answer(i)`; the thread's id."""
    for i in range(start, start + count):
        result = s.run(ask.format(i), thread_id=thread)
        assert result.error is None and result.content == answer(i), result.events[-1]
        thread = result.thread_id
    assert thread is not None
    return thread


def test_a_long_thread_keeps_its_latest_checkpoints_and_its_whole_conversation(
    tmp_path: Path,
) -> None:
    with session(tmp_path, keep_checkpoints=3) as s:
        thread = turns(s, 16)
        kept = rows(tmp_path / "db", "checkpoints", thread)
        # the latest 3, and what their messages are rebuilt from back to a snapshot
        expected = with_chains(tmp_path / "db", thread, latest(tmp_path / "db", thread, 3))
        transcript = s.home.transcript(thread)
        # the next turn starts from the latest checkpoint, in this process and in another
        turns(s, 1, thread, start=16)
    assert set(kept) == expected and len(kept) < 16 * 5
    writes = rows(tmp_path / "db", "writes", thread)
    assert set(writes) <= set(rows(tmp_path / "db", "checkpoints", thread))
    assert transcript is not None
    assert [m.text for m in transcript.messages if m.type == "human"] == [
        f"question {i}" for i in range(16)
    ]
    assert len(transcript.messages) == 16 * 4
    with session(tmp_path) as fresh:
        turns(fresh, 1, thread, start=17)


def test_checkpoints_where_the_thread_waited_for_approval_stay(tmp_path: Path) -> None:
    with session(tmp_path, keep_checkpoints=2) as s:
        paused = s.run("write a")
        thread = paused.thread_id
        assert isinstance(paused.events[-1], Interrupt)
        waiting = [cid for ns, cid in rows(tmp_path / "db", "writes", thread)]
        # the pending approval survives the pruning after the turn that asked, and is answered
        done = s.run(thread_id=thread, decisions=[Decision("approve")])
        assert isinstance(done.events[-1], Final)
        turns(s, 6, thread, start=1)
        conn = sqlite3.connect(tmp_path / "db")
        interrupts = conn.execute(
            "SELECT DISTINCT checkpoint_id FROM writes WHERE thread_id = ? "
            "AND channel = '__interrupt__'",
            (thread,),
        ).fetchall()
        conn.close()
        left = {cid for _, cid in rows(tmp_path / "db", "checkpoints", thread)}
        assert len(interrupts) == 1 and interrupts[0][0] in left and interrupts[0][0] in waiting
        # the latest two and the approval, with what their messages are rebuilt from
        asked = {("", interrupts[0][0])}
        expected = with_chains(tmp_path / "db", thread, latest(tmp_path / "db", thread, 2) | asked)
        assert {("", cid) for cid in left} == expected
        assert_every_kept_checkpoint_reads(s, thread, "write a")


def test_a_pending_approval_is_answered_from_a_fresh_process_after_pruning(
    tmp_path: Path,
) -> None:
    with session(tmp_path, keep_checkpoints=1) as s:
        thread = turns(s, 3)
        paused = s.run("write b", thread_id=thread)
        assert isinstance(paused.events[-1], Interrupt)
        shown = s.home.transcript(thread)
    assert shown is not None and [a.name for a in shown.pending] == ["write_file"]
    with session(tmp_path, keep_checkpoints=1) as again:
        assert [a.name for _, actions in again.pending(thread) for a in actions] == ["write_file"]
        done = again.run(thread_id=thread, decisions=[Decision("approve")])
        assert isinstance(done.events[-1], Final)
        assert again.values(thread)["files"]["/b.md"]


def test_the_checkpoint_a_fork_was_made_from_stays(tmp_path: Path) -> None:
    with session(tmp_path, keep_checkpoints="all") as s:
        thread = turns(s, 2)
        config: Any = {"configurable": {"thread_id": thread}}
        origin = list(s.graph.get_state_history(config))[3].config
        # a fork through the Python API: new values on an older checkpoint
        forked = s.graph.update_state(origin, {"todos": []})
    with session(tmp_path, keep_checkpoints=2) as s:
        s.run("question 9", thread_id=thread)
        s.run("question 10", thread_id=thread)
        left = {cid for _, cid in rows(tmp_path / "db", "checkpoints", thread)}
    # the latest two, the fork and the checkpoint it was made from, and that one's first child
    # on the old branch (it is a branch point now)
    assert origin["configurable"]["checkpoint_id"] in left
    assert forked["configurable"]["checkpoint_id"] in left
    # with what their messages are rebuilt from
    assert len(left) >= 5
    with session(tmp_path, keep_checkpoints=2) as s:
        assert_every_kept_checkpoint_reads(s, thread)


def test_keep_all_keeps_every_checkpoint(tmp_path: Path) -> None:
    with session(tmp_path, approvals=False, keep_checkpoints="all") as s:
        thread = turns(s, 4)
    # a turn: input, loop start, model, tools, model; no extra step for dangling calls
    assert len(rows(tmp_path / "db", "checkpoints", thread)) == 4 * 5


def test_the_database_setting_applies_and_a_run_overrides_it(tmp_path: Path) -> None:
    home = open_home(tmp_path / "db")
    home.retention.store_keep(2)
    home.close()
    db = tmp_path / "db"
    # long enough for a snapshot of the messages: older checkpoints are no chain's any more
    with session(tmp_path) as s:
        thread = turns(s, 14)
        assert set(rows(db, "checkpoints", thread)) == with_chains(
            db, thread, latest(db, thread, 2)
        )
        assert len(rows(db, "checkpoints", thread)) < 14 * 5
    with session(tmp_path, keep_checkpoints=7) as s:
        turns(s, 2, thread, start=14)
        assert set(rows(db, "checkpoints", thread)) == with_chains(
            db, thread, latest(db, thread, 7)
        )
        assert_every_kept_checkpoint_reads(s, thread)


def chain(*counted: str) -> list[CheckpointRow]:
    """Main-graph checkpoints 00, 01, ... each the child of the one before, the i-th counting
    the channels named in `counted[i]` ("m" messages, "f" files; "" holds both)."""
    names = {"m": "messages", "f": "files"}
    return [
        CheckpointRow(
            "", f"{i:02}", f"{i - 1:02}" if i else None, "loop", None,
            frozenset(names[c] for c in channels),
        )
        for i, channels in enumerate(counted)
    ]  # fmt: skip


def test_each_channel_is_walked_back_to_its_own_snapshot_and_on_to_one_holding_both() -> None:
    # 00 holds both; messages snapshot at 03 and 07, files at 05: the latest (09) reads its
    # messages from 07 and its files from 05; 05 its messages from 03; 03 its files from 00
    rows = chain("", "mf", "mf", "f", "mf", "m", "mf", "f", "mf", "mf")
    kept = kept_checkpoints(rows, set(), keep=1)
    assert kept == {(r.namespace, r.checkpoint_id) for r in rows}
    # a checkpoint holding both (06 here) ends every walk
    rows = chain("", "mf", "mf", "f", "mf", "m", "", "f", "mf", "mf")
    kept = kept_checkpoints(rows, set(), keep=1)
    assert kept == {("", f"{i:02}") for i in range(6, 10)}


def test_a_checkpoint_holding_every_channel_is_asked_for_every_align_every_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from runner.threads.retention import snapshots_due

    monkeypatch.setattr("runner.threads.retention.ALIGN_EVERY", 4)
    assert snapshots_due(chain("", "mf", "f", "m", "mf", "mf")) == "05"
    assert snapshots_due(chain("", "mf", "f", "", "mf", "mf")) is None  # 03 holds both
    assert snapshots_due(chain("mf", "mf", "f", "m")) is None  # not 4 back yet
    # one channel alone: its own snapshots end its walk
    assert snapshots_due(chain("", "m", "m", "m", "m", "m", "m")) is None
    assert snapshots_due([]) is None


def test_subagent_checkpoints_go_with_the_main_checkpoint_they_ran_under() -> None:
    main = [CheckpointRow("", f"0{i}", f"0{i - 1}" if i else None, "loop", None) for i in range(6)]
    sub = [
        CheckpointRow("tools:a", "02a", None, "loop", "02"),
        CheckpointRow("tools:b", "05a", None, "loop", "05"),
        CheckpointRow("tools:c", "09a", None, "loop", "09"),  # its main checkpoint is not saved yet
    ]
    kept = kept_checkpoints(main + sub, set(), 2)
    assert kept == {("", "04"), ("", "05"), ("tools:b", "05a"), ("tools:c", "09a")}
    waited = kept_checkpoints(main + sub, {("", "02")}, 2)
    assert ("", "02") in waited and ("tools:a", "02a") in waited


def test_a_branch_point_stays() -> None:
    rows_ = [
        CheckpointRow("", "01", None, "input", None),
        CheckpointRow("", "02", "01", "loop", None),
        CheckpointRow("", "03", "02", "loop", None),
        CheckpointRow("", "04", "02", "loop", None),  # run again from 02
        CheckpointRow("", "05", "04", "loop", None),
    ]
    assert kept_checkpoints(rows_, set(), 1) == {("", "02"), ("", "03"), ("", "04"), ("", "05")}
    assert len(kept_checkpoints(rows_, set(), None)) == 5


def test_agentctl_graphs_keep_messages_as_deltas(tmp_path: Path) -> None:
    # Retention keeps the chain back to a snapshot because of this (the tests above check it).
    from langgraph.channels.delta import DeltaChannel

    from runner.agent.state import SNAPSHOT_EVERY

    with session(tmp_path) as s:
        channel = dict(s.graph.channels)["messages"]
    assert isinstance(channel, DeltaChannel) and channel.snapshot_frequency == SNAPSHOT_EVERY


def test_a_snapshot_ends_the_chain_and_older_checkpoints_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("runner.agent.state.SNAPSHOT_EVERY", 6)
    monkeypatch.setattr("runner.threads.retention.ALIGN_EVERY", 6)
    db = tmp_path / "db"
    with session(tmp_path, approvals=False, keep_checkpoints=2) as s:
        thread = turns(s, 6)
        left = rows(db, "checkpoints", thread)
        assert set(left) == with_chains(db, thread, latest(db, thread, 2))
        # back to the last checkpoint holding both messages and files: one is made at the
        # start of the turn after one ends ALIGN_EVERY or more checkpoints past the last
        assert len(left) <= 6 + 7
        assert_every_kept_checkpoint_reads(s, thread)
        writes = rows(db, "writes", thread)
        assert set(writes) <= set(left)
    with session(tmp_path, approvals=False, keep_checkpoints=2) as fresh:
        turns(fresh, 1, thread, start=6)
        history = fresh.values(thread)["messages"]
    assert [m.text for m in history if m.type == "human"] == [f"question {i}" for i in range(7)]


def test_deleting_a_thread_gives_the_space_back(tmp_path: Path) -> None:
    with session(tmp_path, keep_checkpoints="all") as s:
        big = s.run("x" * 1_000_000).thread_id
        for _ in range(5):  # messages are stored once each (as deltas)
            assert s.run("x" * 1_000_000, thread_id=big).error is None
        small = turns(s, 1)
        before, _ = s.home.retention.sizes()
        assert s.home.retention.incremental()
        s.home.delete(big)
        after, free = s.home.retention.sizes()
    assert after < before / 4 and free * 4 < after
    assert rows(tmp_path / "db", "checkpoints", small)


def test_a_deleted_threads_words_are_gone_from_the_file(tmp_path: Path) -> None:
    """Pruning leaves the pages it frees as they are (`secure_delete=FAST`), but deleting a
    thread overwrites every page it frees, pages that stay in the file included."""
    secret = "k" + uuid.uuid4().hex * 2
    with session(tmp_path, approvals=False, keep_checkpoints=2) as s:
        # written between another thread's turns, so its pages are not at the file's end;
        # the words last, in an overflow page (a b-tree page's cells are rewritten anyway)
        first = turns(s, 1)
        doomed = s.run("y" * 200_000 + f" {secret}").thread_id
        turns(s, 3, doomed, start=1)
        turns(s, 4, first, start=1)
        s.home.delete(doomed)
        assert s.home.conn.execute("PRAGMA secure_delete").fetchone()[0] == 2  # FAST again
    data = (tmp_path / "db").read_bytes()
    assert not (tmp_path / "db-wal").exists()  # checkpointed into the file at close
    assert secret.encode() not in data
    assert rows(tmp_path / "db", "checkpoints", first)


def test_a_turn_keeps_the_free_pages_the_next_turn_reuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large checkpoints (a snapshot of a long conversation at every update): each turn's prune
    frees more than 4 MB and a quarter of the file, pages the next turn writes again; no turn
    gives them back to the file system."""
    from runner.threads.retention import RECLAIM_MIN_BYTES

    monkeypatch.setattr("runner.agent.state.SNAPSHOT_EVERY", 1)
    # the long first message is kept in a file
    monkeypatch.setattr("runner.backends.files_channel.FILES_SNAPSHOT_EVERY", 1)
    monkeypatch.setattr("runner.threads.retention.ALIGN_EVERY", 1)
    with session(tmp_path, approvals=False) as s:
        thread = s.run("x" * 1_500_000).thread_id
        turns(s, 2, thread, start=1)
        statements: list[str] = []
        s.home.conn.set_trace_callback(statements.append)
        sizes = []
        for i in range(3, 7):
            turns(s, 1, thread, start=i)
            sizes.append(s.home.retention.sizes())
        s.home.conn.set_trace_callback(None)
    assert not [sql for sql in statements if "incremental_vacuum" in sql]
    for size, free in sizes:
        assert free >= RECLAIM_MIN_BYTES and free * 4 >= size  # what used to be given back
    assert max(size for size, _ in sizes) <= sizes[0][0] * 1.5  # reused: the file stays put


def journal(s: Session, thread: str) -> list[str]:
    rows = s.home.db.fetch(  # type: ignore[attr-defined]
        "SELECT call_id FROM agentctl_tool_journal WHERE thread_id = ? ORDER BY recorded_at",
        (thread,),
    )
    return [row[0] for row in rows]


@pytest.mark.parametrize(("keep", "database"), [(3, "sqlite"), ("all", "sqlite"), (3, "postgres")])
def test_a_prune_forgets_the_tool_calls_no_checkpoint_left_can_need(
    tmp_path: Path, request: pytest.FixtureRequest, keep: int | str, database: str
) -> None:
    """Each turn journals one `ls` call. Entries recorded before the oldest checkpoint left
    (by more than the clocks' allowance) go with the checkpoints; the recent ones stay; keeping
    every checkpoint keeps every entry."""
    db = request.getfixturevalue("postgres_url") if database == "postgres" else tmp_path / "db"
    with session(tmp_path, approvals=False, keep_checkpoints=keep, db=db) as s:
        thread = turns(s, 4)
        early = journal(s, thread)
        s.home.db.write(  # type: ignore[attr-defined]
            "UPDATE agentctl_tool_journal SET recorded_at = ? WHERE thread_id = ?",
            [("2000-01-01T00:00:00+00:00", thread)],
        )
        turns(s, 12, thread, start=4)
        if database == "sqlite":
            assert_every_kept_checkpoint_reads(s, thread)
        left = journal(s, thread)
    assert len(early) == 4
    if keep == "all":
        assert len(left) == 16 and set(early) <= set(left)
    else:
        assert not set(early) & set(left)
        assert len(left) == 12  # recorded within the allowance of the checkpoints left


def test_the_time_of_a_checkpoint_is_read_from_its_id() -> None:
    import time

    from langgraph.checkpoint.base.id import uuid6

    assert abs((made_at(str(uuid6())) or 0) - time.time()) < 5
    assert made_at(str(uuid.uuid4())) is None
    assert made_at("not-a-checkpoint-id") is None
    assert made_at("1ef" + "x" * 29) is None


@pytest.mark.parametrize("text", ["0", "-3", "some", ""])
def test_bad_keep_values_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"at least 1|expected"):
        parse_keep(text)


def test_the_cli_shows_sets_and_checks_the_setting(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    with session(tmp_path, keep_checkpoints="all") as s:
        thread = turns(s, 14)  # past a snapshot of the messages
    saved = len(rows(tmp_path / "db", "checkpoints", thread))
    kept = with_chains(tmp_path / "db", thread, latest(tmp_path / "db", thread, 1))
    shown = run_cli("threads", "keep-checkpoints", "--db", db, cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout == "10 (the default)\n"
    changed = run_cli("threads", "keep-checkpoints", "1", "--db", db, cwd=tmp_path)
    assert changed.returncode == 0, changed.stderr
    assert f"keep 1 checkpoints; removed {saved - len(kept)} old checkpoints" in changed.stdout
    assert set(rows(tmp_path / "db", "checkpoints", thread)) == kept and len(kept) < saved
    assert run_cli("threads", "keep-checkpoints", "--db", db, cwd=tmp_path).stdout == "1\n"
    bad = run_cli("threads", "keep-checkpoints", "none", "--db", db, cwd=tmp_path)
    assert bad.returncode == 2 and "expected a number of checkpoints" in bad.stderr
    shown_thread = run_cli("threads", "show", thread, "--db", db, cwd=tmp_path)
    assert shown_thread.returncode == 0 and "question 13" in shown_thread.stdout
    flag = run_cli("run", "x.yaml", "hi", "--keep-checkpoints", "0", cwd=tmp_path)
    assert flag.returncode == 2 and "--keep-checkpoints" in flag.stderr


def test_a_turn_reads_the_thread_once_and_a_next_turn_reuses_what_it_ended_with(
    tmp_path: Path,
) -> None:
    with session(tmp_path, approvals=False) as s:
        thread = turns(s, 1)
    with session(tmp_path, approvals=False) as s:
        saver = s.home.checkpointer
        reads: list[Any] = []
        original = saver.get_tuple

        def counted(config: Any) -> Any:
            reads.append(config)
            return original(config)

        saver.get_tuple = counted
        turns(s, 1, thread, start=1)
        # one read by the Session (input, calls already shown, outcome), one by LangGraph's loop
        assert len(reads) == 2
        turns(s, 1, thread, start=2)
        # the next turn in this session starts from what the last one ended with
        assert len(reads) == 3
        # unless the thread moved meanwhile
        config: Any = {"configurable": {"thread_id": thread}}
        s.graph.update_state(config, {"messages": [HumanMessage("a note in between")]})
        assert s.run("question 3", thread_id=thread).content == "answer 5"
        assert len(reads) > 5
        history = s.values(thread)["messages"]
    assert [m.text for m in history if m.type == "human"][-2:] == [
        "a note in between",
        "question 3",
    ]


def subagent_writes(messages: list[BaseMessage]) -> dict[str, Any]:
    """The main agent hands the work to the general-purpose subagent, which writes a file."""
    last = messages[-1]
    first = next(m for m in messages if m.type == "human")
    if str(first.content).startswith("sub:"):
        if last.type == "tool":
            return {"content": "sub done"}
        args = {"file_path": "/s.md", "content": "x"}
        return {"content": "", "tool_calls": [{"name": "write_file", "args": args}]}
    if last.type == "tool":
        return {"content": "main done"}
    args = {"description": "sub: write it", "subagent_type": "general-purpose"}
    return {"content": "", "tool_calls": [{"name": "task", "args": args}]}


def test_a_subagents_pending_approval_survives_pruning(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, general_purpose_agent=True, interrupt_on={"write_file": True})
    model = ScriptedChatModel(script=subagent_writes)
    with Session(spec, model=model, db=tmp_path / "db", keep_checkpoints=1) as s:
        paused = s.run("go")
        assert isinstance(paused.events[-1], Interrupt)
        assert paused.events[-1].actions[0].agent == "general-purpose"
    found = rows(tmp_path / "db", "checkpoints", paused.thread_id)
    newest = {ns: (ns, cid) for ns, cid in found}  # rows come oldest first
    assert len(newest) == 2 and "" in newest  # the main step and the subagent's
    assert set(found) == with_chains(tmp_path / "db", paused.thread_id, set(newest.values()))
    with Session(spec, model=model, db=tmp_path / "db", keep_checkpoints=1) as s:
        done = s.run(thread_id=paused.thread_id, decisions=[Decision("approve")])
        turns_after = s.run("go again", thread_id=paused.thread_id)
    assert done.content == "main done" and isinstance(turns_after.events[-1], Interrupt)


def test_a_database_from_before_is_switched_to_incremental_vacuum_once(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE agentctl_threads (thread_id TEXT PRIMARY KEY)")
    conn.commit()
    conn.close()
    home = open_home(db)
    try:
        assert not home.retention.incremental()  # an existing file keeps its mode on opening
    finally:
        home.close()
    changed = run_cli("threads", "keep-checkpoints", "5", "--db", str(db), cwd=tmp_path)
    assert changed.returncode == 0, changed.stderr
    assert "rewriting the database once" in changed.stderr
    home = open_home(db)
    try:
        assert home.retention.incremental() and home.retention.stored_keep() == (True, 5)
    finally:
        home.close()


CHECKPOINT_TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]


def _long_postgres_thread(folder: Path, url: str, turns: int, *, vacuum: bool) -> tuple[int, int]:
    """(bytes of the checkpoint tables, vacuums run) after a thread of `turns` turns of long
    messages on `url`, with the server's autovacuum off for those tables; `vacuum=False` takes
    agentctl's own vacuum away too."""
    import psycopg

    home = open_home(url)
    home.checkpointer  # noqa: B018 (creates LangGraph's tables)
    home.close()
    with psycopg.connect(url, autocommit=True) as conn:
        for table in CHECKPOINT_TABLES:
            conn.execute(
                f"ALTER TABLE {table} SET (autovacuum_enabled = false, "
                "toast.autovacuum_enabled = false)"
            )

    def text() -> str:  # long, and not compressible by TOAST
        return " ".join(uuid.uuid4().hex for _ in range(40))

    model = ScriptedChatModel(script=lambda _messages: {"content": text()})
    folder.mkdir()
    with Session(spec_file(folder), model=model, db=url) as run:
        if not vacuum:
            run.home.retention.url = None  # type: ignore[attr-defined]
        thread = None
        for i in range(turns):
            thread = run.run(f"{i} {text()}", thread_id=thread).thread_id
        vacuumed = run.home.retention.vacuumed  # type: ignore[attr-defined]
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(to_regclass(t)))::bigint FROM unnest(%s::text[]) t",
            (CHECKPOINT_TABLES,),
        ).fetchone()
    assert row is not None
    return int(row[0]), len(vacuumed)


def test_pruned_postgres_rows_give_their_space_back_without_autovacuum(
    tmp_path: Path, postgres_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the server's autovacuum off, a long thread's checkpoint tables stay near their live
    size: after pruning, agentctl vacuums them once enough rows are dead (not every turn);
    without that they keep every pruned checkpoint's space. A snapshot of the messages at every
    update (each checkpoint holds the whole list, as before deltas) makes the pruned rows
    large, so the tables without vacuum grow with the square of the thread's length."""
    from tests.services import fresh_database

    monkeypatch.setattr("runner.agent.state.SNAPSHOT_EVERY", 1)

    turns = 80
    with fresh_database(postgres_server) as url:
        bounded, vacuums = _long_postgres_thread(tmp_path / "a", url, turns, vacuum=True)
    with fresh_database(postgres_server) as url:
        unbounded, none = _long_postgres_thread(tmp_path / "b", url, turns, vacuum=False)
    assert none == 0
    assert 1 <= vacuums <= turns // 4
    # the prune's dead rows are flushed to the server's statistics before they are read, so
    # the vacuums do not depend on timing (seen: 4 every time, the tables 0.46 of the
    # unvacuumed ones; before the flush, 1 or 2 vacuums and 0.75-0.89)
    assert bounded * 5 < unbounded * 3, (bounded, unbounded)
