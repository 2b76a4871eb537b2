"""What a turn costs a Postgres thread database, against bare `create_agent` on LangGraph's
`PostgresSaver` in the same test: the statements it sends and the commits it makes (counts, not
timings; `bench/bench_pg_threads.py --short` times them).

LangGraph's saver sends each checkpoint as autocommit statements, each row its own commit;
agentctl's sends one of several rows as one transaction (the thread's time of last use riding
on the turn's first). Beyond LangGraph's statements a turn sends only: the lease taken (its advisory lock,
with the server check and a lease row of another host in the same statement) and let go (no
commit either), the latest checkpoint's id (has the thread moved since this session's last
turn? sent with the lease's statement, in one round trip), which is also the check that the
latest checkpoint this session wrote is still the thread's as written (`runner.threads.latest`:
then LangGraph's reads of it and of the messages' history are served from memory), the tool
journal's record (its lookup is not sent for a call the model made in this process while it held
the thread), and the prune's one read."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.services import fresh_database
from tests.threads.statements import Traced
from tests.threads.test_retention import answers, turns


def bare_turn(url: str, traced: Traced) -> tuple[Counter[str], int]:
    """One more turn of the same script on bare `create_agent` with a `PostgresSaver`, with
    agentctl's durability."""
    import psycopg
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.fakes import ScriptedChatModel

    @tool
    def ls(path: str) -> str:
        """List a folder."""
        return "a.md"

    with psycopg.connect(url, autocommit=True, prepare_threshold=0) as conn:
        saver = PostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()
        agent = create_agent(ScriptedChatModel(script=answers), tools=[ls], checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        for i in range(4):
            agent.invoke({"messages": [("user", f"question {i}")]}, config, durability="sync")
        with traced.counting():
            agent.invoke({"messages": [("user", "question 4")]}, config, durability="sync")
    return Counter(traced.kinds), traced.commits


def test_a_postgres_turn_sends_langgraphs_statements_and_six_more_in_fewer_commits(
    tmp_path: Path, postgres_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.run import Session
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import spec_file

    traced = Traced(monkeypatch.setattr)
    with fresh_database(postgres_server) as url:
        bare, bare_commits = bare_turn(url, traced)
    assert set(bare) == {"langgraph"}
    with fresh_database(postgres_server) as url:
        spec = spec_file(tmp_path)
        with Session(spec, model=ScriptedChatModel(script=answers), db=url) as s:
            thread = turns(s, 4)
            home: Any = s.home
            for i in range(4, 8):
                with traced.counting():
                    turns(s, 1, thread, start=i)
                mine = Counter(traced.kinds)
                # LangGraph's own, three fewer than bare's: its reads of the latest checkpoint
                # and of the messages' history (two) not sent, the checkpoint this session
                # wrote last served from memory after one check (`runner.threads.latest`)
                assert mine.pop("langgraph") <= bare["langgraph"] - 3
                assert mine == {
                    "lease taken": 1,
                    "latest checkpoint kept, checked": 1,  # with the lease, in its round trip
                    "time of last use": 1,  # in the first checkpoint's transaction
                    # the `ls` call recorded; not looked up: the model made it in this process
                    # while it held the thread (`PostgresToolJournal.made`)
                    "journal": 1,
                    "prune": 1,
                    "lease let go": 1,
                }, mine
                # each checkpoint one commit, the journal's record one: fewer than bare's
                assert traced.commits < bare_commits
                assert home.lease.holder(thread) is None  # let go
            assert not home.db.fetch("SELECT 1 FROM agentctl_leases")  # no row, ever


def test_the_time_of_last_use_is_committed_with_the_turns_first_checkpoint(
    tmp_path: Path, postgres_url: str
) -> None:
    from runner.run import Session
    from runner.threads import open_home
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import spec_file

    spec = spec_file(tmp_path)
    with Session(spec, model=ScriptedChatModel(script=answers), db=postgres_url) as s:
        thread = turns(s, 1)
        long_ago = "2000-01-01T00:00:00+00:00"
        s.home.db.write("UPDATE agentctl_threads SET updated_at = ?", [(long_ago,)])
        checkpointer = s.home.checkpointer
        seen: list[str] = []
        put = checkpointer.put

        def looking(*args: Any) -> Any:
            saved = put(*args)
            other = open_home(postgres_url)  # as another process sees it
            try:
                info = other.thread(thread)
                seen.append(info.updated_at if info else "")
            finally:
                other.close()
            return saved

        checkpointer.put = looking
        turns(s, 1, thread, start=1)
    assert seen and seen[0] > long_ago  # committed with the first checkpoint


def test_a_thread_another_session_went_on_with_is_read_again(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The latest checkpoint read with the lease (in its round trip) tells a session whether
    the thread moved since its last turn: if it did, the session reads the thread's state
    again; if not, it starts from what its last turn left."""
    from runner.run import Session
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import spec_file

    spec = spec_file(tmp_path)
    with (
        Session(spec, model=ScriptedChatModel(script=answers), db=postgres_url) as first,
        Session(spec, model=ScriptedChatModel(script=answers), db=postgres_url) as second,
    ):
        thread = turns(first, 2)
        reads: list[str] = []
        state = first.state
        monkeypatch.setattr(first, "state", lambda tid: reads.append(tid) or state(tid))
        turns(first, 1, thread, start=2)
        assert reads == []  # nothing moved: what its last turn left
        turns(second, 1, thread, start=3)
        turns(first, 1, thread, start=4)
        assert reads == [thread]  # the other session went on: read again
        asked = [m.content for m in state(thread).values["messages"] if m.type == "human"]
    assert asked == [f"question {i}" for i in range(5)]


def test_a_holder_in_another_process_is_named_and_its_death_frees_the_thread(
    postgres_url: str,
) -> None:
    """The lease is the server's session lock: another process holding it is named (pid, host,
    since when) from its connection's `application_name`, and killed (SIGKILL: no cleanup of
    its own), it lets go of the thread as soon as the server sees its connection close."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from runner.threads import open_home
    from runner.threads.guards import HOST, ThreadBusy
    from tests.conftest import ROOT

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from runner.threads import open_home\n"
            "home = open_home(sys.argv[1])\n"
            "home.lease.acquire('t1')\n"
            "print('held', flush=True)\n"
            "time.sleep(600)\n",
            postgres_url,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    home = open_home(postgres_url)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(ThreadBusy) as busy:
            home.lease.acquire("t1")
        assert f"(pid {holder.pid} on {HOST}, since 20" in str(busy.value)
        found = home.lease.holder("t1")
        assert found is not None and found.pid == holder.pid
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        deadline = time.monotonic() + 30
        while home.lease.holder("t1") is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        home.lease.acquire("t1").release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        home.close()
