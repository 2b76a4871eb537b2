"""The thread database's guards, in one process: the lease, the answer log, the tool journal.

Crashes and races between real `agentctl run` processes are in tests/cli/test_crashes.py.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from runner.run import Home
from runner.threads import guards as threads_db
from runner.threads import open_home
from runner.threads.guards import TableThreadLease, ThreadBusy
from tests.conftest import ROOT
from tests.fakes import ScriptedChatModel, ai

CRASH = ROOT / "tests" / "data" / "crash"


@pytest.fixture(params=["sqlite", "postgres"])
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """The thread database in SQLite and in Postgres (a fresh database of the test's own)."""
    if request.param == "postgres":
        opened = open_home(request.getfixturevalue("postgres_url"))
    else:
        opened = open_home(tmp_path / "threads.db")
    yield opened
    opened.close()


def _lease_row(home: Home, row: tuple[Any, ...]) -> None:
    """A lease row as another process writes it."""
    home.db.write(
        "INSERT INTO agentctl_leases (thread_id, token, pid, host, started, since, heartbeat) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [row],
    )


# --------------------------------------------------------------------------- the lease


def test_a_second_runner_is_told_who_holds_the_thread(home: Home) -> None:
    lease = home.lease.acquire("t1")
    with pytest.raises(ThreadBusy) as busy:
        home.lease.acquire("t1")
    message = str(busy.value)
    assert f"thread t1 is being run by another process (pid {os.getpid()} on " in message
    assert ", since 20" in message and "--wait" in message
    assert home.lease.acquire("t2") is not None  # other threads are free
    lease.release()
    home.lease.acquire("t1").release()


def test_a_holder_that_died_loses_its_lease_at_once(home: Home) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that ran on this host and is gone
    since = "2026-01-01T00:00:00+00:00"
    _lease_row(home, ("t1", "x", child.pid, threads_db.HOST, None, since, time.time()))
    assert home.lease.holder("t1") is None
    home.lease.acquire("t1").release()


def test_a_holder_on_another_host_keeps_its_lease_while_its_heartbeat_is_fresh(
    home: Home,
) -> None:
    row = ("t1", "x", 1, "elsewhere", None, "2026-01-01T00:00:00+00:00")
    _lease_row(home, (*row, time.time()))
    with pytest.raises(ThreadBusy, match=r"pid 1 on elsewhere, since 2026-01-01"):
        home.lease.acquire("t1")
    stale = time.time() - 10 * 60
    home.db.write("UPDATE agentctl_leases SET heartbeat = ? WHERE thread_id = 't1'", [(stale,)])
    home.lease.acquire("t1").release()


def test_wait_takes_the_lease_when_the_holder_lets_go(home: Home) -> None:
    held = home.lease.acquire("t1")
    lease = home.lease
    assert isinstance(lease, TableThreadLease)
    tried = threading.Event()
    original = lease._try

    def counting(thread_id: str, token: str) -> Any:
        found = original(thread_id, token)
        tried.set()  # the waiter has found the thread busy at least once
        return found

    lease._try = counting  # type: ignore[method-assign]
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(lease.acquire("t1", wait=float("inf"))))
    waiter.start()
    assert tried.wait(60)
    assert not got  # still waiting: the lease is held
    held.release()
    waiter.join(60)
    assert got and got[0].thread_id == "t1"
    got[0].release()


def test_wait_with_a_limit_gives_up_naming_the_holder(home: Home) -> None:
    home.lease.acquire("t1")
    with pytest.raises(ThreadBusy, match=r"\(waited [0-9.]+ s\)"):
        home.lease.acquire("t1", wait=0.2)


# --------------------------------------------------------------------------- answers


def test_an_approval_is_answered_once(home: Home) -> None:
    answer = {"i1": ("approve", {"decisions": [{"type": "approve"}]})}
    assert home.answers.claim("t1", answer) is None
    earlier = home.answers.claim("t1", {"i1": ("reject", {"decisions": [{"type": "reject"}]})})
    assert earlier is not None
    assert earlier.describe().startswith(f"already answered (approve, by pid {os.getpid()} at 20")
    assert home.answers.recorded("t1", ["i1", "i2"])["i1"].resume == answer["i1"][1]
    assert home.answers.claim("t2", answer) is None  # per thread


def test_an_answer_that_could_not_run_is_taken_back(home: Home) -> None:
    assert home.answers.claim("t1", {"i1": ("approve", {})}) is None
    home.answers.withdraw("t1", ["i1"])  # the thread was busy: the approval still waits
    assert home.answers.claim("t1", {"i1": ("reject", {})}) is None
    assert home.answers.recorded("t1", ["i1"])["i1"].summary == "reject"


def test_deleting_a_thread_forgets_its_answers_journal_and_lease(home: Home) -> None:
    home.register("t1", agent="a", spec=None, first_message="hi")
    home.answers.claim("t1", {"i1": ("approve", {})})
    home.journal.record("t1", "", "call_1", "result")
    assert home.journal.lookup("t1", "", "call_1") == "result"
    home.delete("t1")
    assert home.answers.last("t1") is None
    assert home.journal.lookup("t1", "", "call_1") is None


# --------------------------------------------------------------------------- the journal


def _agent(tmp_path: Path) -> Path:
    folder = tmp_path / "crash"
    shutil.copytree(CRASH, folder)
    return folder / "agent.yaml"


def _dropping(cls: type) -> type:
    """`cls`, losing the tools' results while `dropping` is set: the state a SIGKILL leaves when
    it lands after a tool returned and before LangGraph saved its result. (The steps before were
    saved: their writes are what a checkpoint's messages are rebuilt from.)"""

    def tool_results(writes: Any) -> bool:
        return any(
            getattr(m, "type", None) == "tool"
            for _channel, value in writes
            for m in (value if isinstance(value, list) else [value])
        )

    class Dropping(cls):  # type: ignore[misc, valid-type]
        dropping = False

        def put_writes(self, config: Any, writes: Any, *args: Any, **kwargs: Any) -> None:
            if not (self.dropping and tool_results(writes)):
                super().put_writes(config, writes, *args, **kwargs)

        async def aput_writes(self, config: Any, writes: Any, *args: Any, **kwargs: Any) -> None:
            if not (self.dropping and tool_results(writes)):
                await super().aput_writes(config, writes, *args, **kwargs)

    Dropping.__name__ = cls.__name__
    return Dropping


def _saver(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """A sync checkpointer of `kind` that drops writes on demand."""
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(tmp_path / "saver.db", check_same_thread=False)
        return _dropping(SqliteSaver)(conn)
    if kind == "postgres":
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        url = request.getfixturevalue("postgres_url")
        conn = psycopg.connect(url, autocommit=True, row_factory=dict_row)
        request.addfinalizer(conn.close)
        saver = _dropping(PostgresSaver)(conn)
        saver.setup()
        return saver
    from langgraph.checkpoint.memory import InMemorySaver

    return _dropping(InMemorySaver)()


async def _async_saver(kind: str, tmp_path: Path, url: str | None) -> Any:
    """An async checkpointer of `kind`, made inside the event loop that runs the graph."""
    if kind == "async-sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        return _dropping(AsyncSqliteSaver)(aiosqlite.connect(str(tmp_path / "async.db")))
    # the serve engine's way: a pool of autocommit connections
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(
        url,
        kwargs={"autocommit": True, "row_factory": dict_row},
        min_size=1,
        max_size=2,
        open=False,
    )
    await pool.open()
    saver = _dropping(AsyncPostgresSaver)(pool)
    await saver.setup()
    return saver


@pytest.mark.parametrize(
    "saver_kind", ["sqlite", "async-sqlite", "postgres", "async-postgres", "memory"]
)
def test_a_finished_call_is_not_run_again_when_langgraph_reruns_its_step(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    saver_kind: str,
) -> None:
    """`b` finishes, then `c` crashes in flight before the step's writes are saved; resuming
    runs the step again. With a SQLite or Postgres checkpointer (a `build_agent` user's, or the
    serve engine's `AsyncPostgresSaver`), `b` is answered from the journal (under `invoke`, and
    under `ainvoke` with an async saver); with a checkpointer that has no journal it runs
    twice."""
    import asyncio

    import runner

    log = tmp_path / "effects.log"
    monkeypatch.setenv("EFFECT_LOG", str(log))
    monkeypatch.setenv("EFFECT_CRASH", "c")
    model = ScriptedChatModel(
        script=[ai("both", ("record", {"name": "b"}), ("record", {"name": "c"})), ai("done")]
    )
    # one at a time, in order: `b` has returned before `c` starts
    config: Any = {"configurable": {"thread_id": "t1"}, "max_concurrency": 1}
    message = {"messages": [{"role": "user", "content": "go"}]}

    def crash_and_resume(saver: Any) -> Any:
        agent = runner.build_agent(_agent(tmp_path), model=model, checkpointer=saver)
        saver.dropping = True
        with pytest.raises(BaseException, match="crash in flight in c"):
            agent.invoke(message, config)
        saver.dropping = False
        monkeypatch.delenv("EFFECT_CRASH")
        return agent.invoke(None, config)

    async def acrash_and_resume(url: str | None) -> Any:
        saver = await _async_saver(saver_kind, tmp_path, url)
        try:
            agent = runner.build_agent(_agent(tmp_path), model=model, checkpointer=saver)
            saver.dropping = True
            with pytest.raises(BaseException, match="crash in flight in c"):
                await agent.ainvoke(message, config)
            saver.dropping = False
            monkeypatch.delenv("EFFECT_CRASH")
            return await agent.ainvoke(None, config)
        finally:
            if saver_kind == "async-postgres":
                await saver.conn.close()

    if saver_kind.startswith("async-"):
        url = request.getfixturevalue("postgres_url") if saver_kind == "async-postgres" else None
        result = asyncio.run(acrash_and_resume(url))
    else:
        result = crash_and_resume(_saver(saver_kind, tmp_path, request))
    assert result["messages"][-1].content == "done"
    counts = Counter(log.read_text().split())
    assert counts["c"] == 2  # in flight at the crash: it may run again, and did
    assert counts["b"] == (2 if saver_kind == "memory" else 1)
    results = [m.content for m in result["messages"] if m.type == "tool"]
    assert results == ["recorded b", "recorded c"]


def test_a_prune_between_a_crash_and_the_resume_keeps_the_finished_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`b` finishes, `c` crashes in flight, then the thread is pruned to one checkpoint (by
    another process: `agentctl threads keep-checkpoints 1`) before it resumes. The prune
    removes old checkpoints and forgets old journal entries, with no allowance for clocks:
    `b`'s entry stays (it was recorded after the checkpoint the step runs again from), and
    `b` is not run again."""
    import runner
    from runner.threads import retention
    from runner.threads.sqlite import SqliteDatabase, SqliteRetention

    monkeypatch.setattr(retention, "JOURNAL_SKEW", 0)
    log = tmp_path / "effects.log"
    monkeypatch.setenv("EFFECT_LOG", str(log))
    warm_up = 30

    def script(messages: list[Any]) -> Any:
        humans = sum(1 for m in messages if m.type == "human")
        if humans <= warm_up:
            return ai(f"reply {humans}")
        if messages[-1].type == "human":
            return ai("both", ("record", {"name": "b"}), ("record", {"name": "c"}))
        return ai("done")

    saver = _saver("sqlite", tmp_path, None)  # type: ignore[arg-type]
    agent = runner.build_agent(
        _agent(tmp_path), model=ScriptedChatModel(script=script), checkpointer=saver
    )
    prunes = SqliteRetention(SqliteDatabase(saver.conn, saver.lock))
    config: Any = {"configurable": {"thread_id": "t1"}, "max_concurrency": 1}
    for i in range(warm_up):  # keeping every checkpoint, snapshots made every 50 steps
        agent.invoke({"messages": [{"role": "user", "content": f"hi {i}"}]}, config)
        prunes.prune("t1", None)
    monkeypatch.setenv("EFFECT_CRASH", "c")
    saver.dropping = True
    with pytest.raises(BaseException, match="crash in flight in c"):
        agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    saver.dropping = False
    monkeypatch.delenv("EFFECT_CRASH")
    pruned = prunes.prune("t1", 1)
    assert pruned.checkpoints > 50  # the checkpoints before the last snapshot went
    result = agent.invoke(None, config)
    assert result["messages"][-1].content == "done"
    counts = Counter(log.read_text().split())
    assert counts["b"] == 1 and counts["c"] == 2


def test_a_subagents_calls_are_journaled_under_the_task_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    import runner

    monkeypatch.setenv("EFFECT_LOG", str(tmp_path / "effects.log"))
    conn = sqlite3.connect(tmp_path / "saver.db", check_same_thread=False)

    def script(messages: list[Any]) -> Any:
        task = next(m.content for m in messages if m.type == "human")
        answered = any(m.type == "ai" for m in messages)
        if task == "go":  # the main agent
            call = ("task", {"description": "x", "subagent_type": "helper"})
            return ai("done") if answered else ai("delegate", call)
        return ai("sub done") if answered else ai("sub", ("record", {"name": "x"}))

    model = ScriptedChatModel(script=script)
    agent = runner.build_agent(_agent(tmp_path), model=model, checkpointer=SqliteSaver(conn))
    agent.invoke(
        {"messages": [{"role": "user", "content": "go"}]}, {"configurable": {"thread_id": "t1"}}
    )
    rows = conn.execute("SELECT scope, call_id FROM agentctl_tool_journal").fetchall()
    task = next(call for scope, call in rows if scope == "")
    assert any(scope == task and call != task for scope, call in rows)  # the subagent's call


# --------------------------------------------------------------------------- Postgres


def test_processes_opening_a_new_postgres_database_at_once_do_not_collide(
    postgres_url: str,
) -> None:
    """Creating the tables (LangGraph's migrations and agentctl's) is serialised by an advisory
    lock: four openers of one empty database at once all succeed, as separate processes would
    (each has its own connection)."""
    barrier = threading.Barrier(4)
    failures: list[BaseException] = []

    def open_one() -> None:
        barrier.wait()
        try:
            open_home(postgres_url).close()
        except BaseException as exc:
            failures.append(exc)

    openers = [threading.Thread(target=open_one) for _ in range(4)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(120)
    assert failures == []


def test_the_async_postgres_journal_keeps_the_first_result(postgres_url: str) -> None:
    """`AsyncPostgresToolJournal` on an `AsyncPostgresSaver` over one `AsyncConnection`: the
    table is made on first use, a result is committed when `arecord` returns (another
    connection sees it), and a second record of one call keeps the first."""
    import asyncio

    import psycopg
    from langchain_core.messages import ToolMessage
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row

    from runner.middleware.journal import journal_for
    from runner.threads.postgres import AsyncPostgresToolJournal

    async def roundtrip() -> tuple[Any, Any]:
        conn = await psycopg.AsyncConnection.connect(
            postgres_url, autocommit=True, row_factory=dict_row
        )
        try:
            journal = journal_for(AsyncPostgresSaver(conn))
            assert isinstance(journal, AsyncPostgresToolJournal)
            assert await journal.alookup("t1", "", "call_1") is None
            first = ToolMessage("first", tool_call_id="call_1", name="record")
            await journal.arecord("t1", "", "call_1", first)
            await journal.arecord("t1", "", "call_1", ToolMessage("second", tool_call_id="call_1"))
            return await journal.alookup("t1", "", "call_1"), first
        finally:
            await conn.close()

    found, first = asyncio.run(roundtrip())
    assert found == first
    with psycopg.connect(postgres_url) as other:
        rows = other.execute("SELECT thread_id, call_id FROM agentctl_tool_journal").fetchall()
    assert rows == [("t1", "call_1")]
