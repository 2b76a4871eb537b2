"""An agentctl agent delegating to an A2A agent built with the official SDK, on loopback: the
answer as the `task` result, updates nested under the call, one context per thread and
subagent, a question of the remote agent answered by the parent's user, failures and timeouts
as results the model reads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ResolutionError
from runner.events import Interrupt, TextDelta, ToolCall, ToolResult
from runner.run import Decision, Session
from tests.a2a_agents import TOKEN, Seen, serving_translator
from tests.fakes import ScriptedChatModel, ai

pytest.importorskip("a2a")


@pytest.fixture(scope="module")
def translator() -> Iterator[tuple[str, Seen]]:
    with serving_translator() as running:
        yield running


def _spec(tmp_path: Path, card: str, *, description: str | None = None, **extra: str) -> Path:
    lines = "".join(f"      {key}: {value}\n" for key, value in extra.items())
    described = f"    description: {description}\n" if description else ""
    path = tmp_path / "boss.yaml"
    path.write_text(
        "name: boss\n"
        "model: openai:gpt-4.1\n"
        "prompt: You delegate.\n"
        "general_purpose_agent: false\n"
        "subagents:\n"
        "  - name: translator\n"
        f"{described}"
        "    a2a:\n"
        f"      card: {card}\n"
        '      headers: {Authorization: "Bearer ${A2A_TOKEN}"}\n'
        f"{lines}",
        encoding="utf-8",
    )
    return path


def _delegating(*texts: str) -> ScriptedChatModel:
    """A model that sends each text to the translator in turn, then says what it got."""

    def reply(messages: list[Any]) -> dict[str, Any]:
        last = messages[-1]
        if last.type == "tool":
            return ai(f"got: {last.text}")
        turn = sum(1 for m in messages if m.type == "human") - 1
        return ai("", ("task", {"description": texts[turn], "subagent_type": "translator"}))

    return ScriptedChatModel(script=reply)


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_TOKEN", TOKEN)


def test_answer_comes_back_as_the_task_result_with_updates_nested(
    translator: tuple[str, Seen], tmp_path: Path
) -> None:
    url, _ = translator
    model = _delegating("hello there")
    with Session(_spec(tmp_path, url), model=model, db=tmp_path / "db") as session:
        events = list(session.stream("go"))
        call = next(e for e in events if isinstance(e, ToolCall) and e.name == "task")
        # the finished call is journaled: a run resumed after a crash answers it from there,
        # it does not send the task to the remote agent again
        from runner.middleware.journal import journal_for

        journal = journal_for(session.home.checkpointer)
        assert journal is not None
        recorded = journal.lookup(events[0].thread_id, "", call.id)  # type: ignore[attr-defined]
        assert recorded is not None and "[1] HELLO THERE" in str(recorded)
    # the card's description is the one the task tool lists
    (task,) = [t for t in model.bound_tools if getattr(t, "name", None) == "task"]
    assert "- translator: Translates text" in task.description
    result = next(e for e in events if isinstance(e, ToolResult) and e.name == "task")
    assert result.content == "[1] HELLO THERE"
    nested = [(e.agent, e.parent_id, e.text) for e in events if isinstance(e, TextDelta)]
    assert ("translator", call.id, "translating\n") in nested
    assert ("translator", call.id, "[1] HELLO THERE\n") in nested
    assert events[-1].content == "got: [1] HELLO THERE"  # type: ignore[attr-defined]


def test_one_context_per_thread_reused_by_later_calls(
    translator: tuple[str, Seen], tmp_path: Path
) -> None:
    url, seen = translator
    spec = _spec(tmp_path, url + "/.well-known/agent-card.json", description="Translates")
    before = len(seen.messages)
    with Session(spec, model=_delegating("one", "two"), db=tmp_path / "db") as session:
        first = session.run("go")
        second = session.run("again", thread_id=first.thread_id)
        other = session.run("go")  # a new thread: a new context
        contexts = session.values(first.thread_id)["a2a_contexts"]
    assert first.final is not None and first.final.content == "got: [1] ONE"
    assert second.final is not None and second.final.content == "got: [2] TWO"
    assert other.final is not None and other.final.content == "got: [1] ONE"
    (one, _, _), (two, _, _), (new, _, _) = seen.messages[before:]
    assert one == two == contexts["translator"] != new


def test_a_question_of_the_remote_agent_is_the_parents_to_answer(
    translator: tuple[str, Seen], tmp_path: Path
) -> None:
    url, seen = translator
    with Session(_spec(tmp_path, url), model=_delegating("ask: hello"), db=tmp_path / "db") as s:
        first = s.run("go")
        assert isinstance(first.interrupt, Interrupt)
        (action,) = first.interrupt.actions
        assert action.name == "ask_user" and action.agent == "translator"
        assert action.args["question"] == (
            "The A2A agent 'translator' needs input: Which language?"
        )
        done = s.run(thread_id=first.thread_id, decisions=[Decision.answer("French")])
    assert done.final is not None and done.final.content == "got: translated into French"
    asked = [(task, text) for _, task, text in seen.messages if text in ("ask: hello", "French")]
    assert len(asked) == 2 and asked[0][0] == asked[1][0]  # the answer went to the same task


def test_failures_and_timeouts_are_results_the_model_reads(
    translator: tuple[str, Seen], tmp_path: Path
) -> None:
    url, seen = translator
    with Session(_spec(tmp_path, url), model=_delegating("fail"), db=tmp_path / "db") as s:
        assert s.run("go").final.content == "got: Error: the A2A task was failed: no dictionary"  # type: ignore[union-attr]
    slow = _spec(tmp_path, url, description="Translates", timeout="0.5")
    with Session(slow, model=_delegating("slow"), db=tmp_path / "db2") as s:
        final = s.run("go").final
    assert final is not None
    assert final.content == "got: Error: the A2A agent 'translator' did not finish in 0.5 s"
    slow_task = next(task for _, task, text in seen.messages if text == "slow")
    assert slow_task in seen.canceled


def test_a_wrong_token_is_an_error_result(
    translator: tuple[str, Seen], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = translator
    monkeypatch.setenv("A2A_TOKEN", "wrong")
    with Session(_spec(tmp_path, url), model=_delegating("hi"), db=tmp_path / "db") as s:
        final = s.run("go").final
    assert final is not None and final.content.startswith("got: Error: the A2A agent 'translator'")
    assert "401" in final.content


def test_without_a_description_an_unreachable_card_is_a_located_error(tmp_path: Path) -> None:
    from tests.a2a_agents import free_port

    spec = _spec(tmp_path, f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ResolutionError) as info:
        Session(spec, model=_delegating("hi"), db=tmp_path / "db")
    problem = info.value.problem
    assert problem is not None
    assert (problem.line, problem.path) == (8, "subagents[0].a2a.card")
    assert "could not fetch the agent card for its description" in problem.message
    assert "give the subagent a `description:`" in problem.message


def _inspect(*args: str) -> tuple[int, str]:
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from runner.cli import main

    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(out):
        try:
            code: Any = main(["inspect", *args])
        except SystemExit as exc:
            code = exc.code
    return int(code or 0), out.getvalue()


def test_inspect_shows_the_remote_and_probe_checks_it_answers(
    translator: tuple[str, Seen], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = translator
    spec = _spec(tmp_path, url, description="Translates", timeout="90s")
    code, out = _inspect(str(spec))
    assert code == 0
    shown = f"    A2A agent, card {url}/.well-known/agent-card.json  (Authorization: ***), "
    assert shown + "timeout 90 s" in out
    assert TOKEN not in out and "probe" not in out
    before = len(seen.messages)
    code, out = _inspect(str(spec), "--probe")
    assert code == 0, out
    assert f"    probe: ok, 'translator' answers at {url}/ (streaming)" in out
    assert len(seen.messages) == before  # nothing was run
    monkeypatch.setenv("A2A_TOKEN", "wrong")
    code, out = _inspect(str(spec), "--probe")
    assert code == 1 and "probe: FAILED: the agent at" in out and "401" in out
    from tests.a2a_agents import free_port

    code, out = _inspect(str(_spec(tmp_path, f"http://127.0.0.1:{free_port()}")), "--probe")
    assert code == 1 and "probe: FAILED: could not fetch the agent card: " in out


BOSS_CASSETTE = """\
version: 1
agents:
  boss:
    - tool_calls: [{name: task, args: {description: "ask: hello", subagent_type: translator}}]
    - content: Done.
"""


def test_a_served_agent_delegates_over_a2a_and_its_client_answers_the_question(
    translator: tuple[str, Seen], tmp_path: Path
) -> None:
    """The async path (a server runs graphs on its loop), from a LangGraph SDK client: the
    remote agent's question is an interrupt of the served run, resumed by the client."""
    from langgraph_sdk import get_sync_client

    from tests.serve import servers

    url, seen = translator
    spec = _spec(tmp_path, url, description="Translates")
    spec.write_text(
        spec.read_text().replace("openai:gpt-4.1", "replay:boss.cassette.yaml"), encoding="utf-8"
    )
    (tmp_path / "boss.cassette.yaml").write_text(BOSS_CASSETTE, encoding="utf-8")
    with servers.serving(
        [spec], cwd=tmp_path, env={"A2A_TOKEN": TOKEN}, log=tmp_path / "serve.log"
    ) as server:
        client = get_sync_client(url=server.url)
        thread = client.threads.create()["thread_id"]
        message = {"messages": [{"role": "user", "content": "go"}]}
        client.runs.wait(thread, "boss", input=message)
        (waiting,) = client.threads.get(thread)["interrupts"].values()
        assert waiting[0]["value"]["question"] == (
            "The A2A agent 'translator' needs input: Which language?"
        )
        done = client.runs.wait(thread, "boss", command={"resume": "German"})
        state = client.threads.get_state(thread)["values"]
    assert isinstance(done, dict) and done["messages"][-1]["content"] == "Done."
    results = [m["content"] for m in state["messages"] if m["type"] == "tool"]
    assert results == ["translated into German"]
    asked = [context for context, _, text in seen.messages if text == "ask: hello"][-1]
    assert state["a2a_contexts"] == {"translator": asked}


def test_the_trace_context_goes_to_the_remote_agent(
    translator: tuple[str, Seen], tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from runner.run import telemetry

    url, seen = translator
    exporter = InMemorySpanExporter()
    active = telemetry.enable(exporter=exporter, batch=False)
    try:
        with Session(_spec(tmp_path, url), model=_delegating("traced"), db=tmp_path / "db") as s:
            assert s.run("go").final is not None
    finally:
        active.shutdown()
    sent = seen.traceparents[-1]
    assert sent is not None
    _, trace_id, parent_id, _ = sent.split("-")
    spans = {format(span.context.span_id, "016x"): span for span in exporter.get_finished_spans()}
    parent = spans[parent_id]  # the remote call's parent is a span of this run
    assert parent.name == "invoke_agent translator"
    assert format(parent.context.trace_id, "032x") == trace_id


HOLD_CASSETTE = """\
version: 1
agents:
  boss:
    - tool_calls: [{name: task, args: {description: hold, subagent_type: translator}}]
    - content: Done.
"""

PATIENCE = 20.0
"""Seconds a step of the kill test may take before it fails (a hang, not a measurement)."""


def _wait_for(check: Any, what: str, child: Any = None) -> None:
    """Until `check()`; an error when `child` (a parent process) exits first or time is up."""
    import time

    deadline = time.monotonic() + PATIENCE
    while not check():
        if child is not None and child.poll() is not None:
            raise AssertionError(f"the parent exited before {what}: {child.communicate()}")
        if time.monotonic() > deadline:
            said = None
            if child is not None:
                child.kill()
                said = child.communicate()
            raise AssertionError(f"no {what} in {PATIENCE:g} s: {said}")
        time.sleep(0.05)


def _recorded_tasks(db: Path) -> list[Any]:
    import sqlite3

    if not db.exists():
        return []
    with contextlib.closing(sqlite3.connect(db)) as connection:
        try:
            return connection.execute(
                "SELECT call_id FROM agentctl_tool_journal WHERE scope LIKE 'a2a:%'"
            ).fetchall()
        except sqlite3.OperationalError:  # the table is not there yet
            return []


@pytest.mark.parametrize("finished", [False, True], ids=["still-working", "finished"])
def test_a_parent_killed_mid_call_follows_the_same_task_when_resumed(
    translator: tuple[str, Seen], tmp_path: Path, finished: bool
) -> None:
    """The parent process is killed while the remote task works; run again on the thread, it
    finds the task in the journal and asks for it (`tasks/get`): one still working is followed
    (`tasks/subscribe`), one that finished meanwhile gives its answer. One remote task either
    way, and its answer is the call's result."""
    import json
    import os
    import subprocess
    import sys

    url, seen = translator
    seen.release.clear()
    seen.finished.clear()
    spec = _spec(tmp_path, url, description="Translates")
    spec.write_text(
        spec.read_text().replace("openai:gpt-4.1", "replay:boss.cassette.yaml"), encoding="utf-8"
    )
    (tmp_path / "boss.cassette.yaml").write_text(HOLD_CASSETTE, encoding="utf-8")
    env = {**os.environ, "A2A_TOKEN": TOKEN, "AGENTCTL_HOME": str(tmp_path)}

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "runner", "run", str(spec), *args, "--output", "jsonl"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    before = len(seen.messages)
    first = start("go")
    try:
        assert first.stdout is not None
        thread = json.loads(first.stdout.readline())["thread_id"]
        # the task's id is in the thread's journal: the call is in flight past the point
        # where a resumed run can find its task (before it, it would send the task again)
        _wait_for(lambda: _recorded_tasks(tmp_path / "agentctl.db"), "recorded task", first)
    finally:
        first.kill()
        first.communicate()
    if finished:  # the remote task ends while no parent runs
        seen.release.set()
        _wait_for(lambda: seen.finished, "finished task")
    methods = len(seen.methods)
    second = start("--thread", thread)
    try:
        if not finished:
            _wait_for(lambda: "SubscribeToTask" in seen.methods[methods:], "subscription", second)
            seen.release.set()
        out, err = second.communicate(timeout=PATIENCE)
    finally:
        if second.poll() is None:
            second.kill()
            second.communicate()
    assert second.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    results = [e for e in events if e.get("type") == "tool_result" and e.get("name") == "task"]
    assert [r["content"] for r in results] == ["held and released"], events
    assert [text for _, _, text in seen.messages[before:]] == ["hold"]  # one remote task
    assert "GetTask" in seen.methods[methods:]
    assert "SendStreamingMessage" not in seen.methods[methods:]
    assert ("SubscribeToTask" in seen.methods[methods:]) is not finished


def test_a_task_is_followed_by_asking_for_it_when_the_agent_cannot_subscribe(
    translator: tuple[str, Seen],
) -> None:
    """The sender goes away once the task is known; `follow` reads the task, cannot subscribe
    (the in-memory engine of `agentctl serve` cannot), and asks for it until it ends."""
    import asyncio

    from runner.spec.a2a import A2AConnection
    from runner.tools.a2a import A2AAgent

    url, seen = translator
    seen.release.clear()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    agent = A2AAgent("translator", A2AConnection(card=url, headers=headers))

    async def work() -> Any:
        known = asyncio.Event()
        ids: list[str] = []

        async def on_task(task_id: str, context_id: str | None) -> None:
            ids.append(task_id)
            known.set()

        sending = asyncio.create_task(
            agent.exchange("hold", context_id=None, task_id=None, on_task=on_task)
        )
        await known.wait()
        sending.cancel()  # the caller goes away; the task goes on
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        asked = seen.methods.count("GetTask")
        following = asyncio.create_task(agent.follow(ids[0], context_id=None))
        while seen.methods.count("GetTask") < asked + 2:  # asked, refused, asked again
            await asyncio.sleep(0.02)
        seen.release.set()
        return await following

    seen.no_subscribe = True
    try:
        outcome = asyncio.run(work())
    finally:
        seen.no_subscribe = False
    assert (outcome.state, outcome.text) == ("completed", "held and released")
    assert "SubscribeToTask" in seen.methods
