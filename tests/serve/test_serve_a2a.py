"""A2A out of `agentctl serve` (in-memory engine), driven by the official A2A SDK's client: the
card by agent name, a streamed round trip with the agent's question answered in the same task,
tasks/get and tasks/cancel, the API's keys and ownership; and an agentctl agent delegating to
the served one over A2A, its question answered by the parent's user."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.events import Interrupt, ToolResult
from runner.run import Decision, Session
from runner.serve.a2a import assistant_id
from tests.fakes import ScriptedChatModel, ai
from tests.serve import servers

pytest.importorskip("a2a")

ALICE = "alice-key-" + "a" * 24
BOB = "bob-key-" + "b" * 24

AGENT = """\
name: briefer
description: Writes short briefs
model: replay:briefer.cassette.yaml
prompt: Brief the user.
ask_user: true
"""
# every run asks first, then answers (the cassette plays per run)
CASSETTE = """\
version: 1
agents:
  briefer:
    - content: Asking.
      tool_calls: [{name: ask_user, args: {question: How long?}}]
    - content: Briefed.
"""
SCRIBE = """\
name: scribe
description: Writes notes
model: replay:scribe.cassette.yaml
prompt: Write notes.
interrupt_on: {write_file: true}
"""
SCRIBE_CASSETTE = """\
version: 1
agents:
  scribe:
    - tool_calls: [{name: write_file, args: {file_path: /notes.md, content: hi}}]
    - content: Written.
"""

LISTER = """\
name: lister
description: Lists things
model: replay:lister.cassette.yaml
prompt: List {{ vars.topic }}.
inputs:
  topic: {type: string, required: true}
"""
LISTER_CASSETTE = """\
version: 1
agents:
  lister:
    - content: Listed.
"""

SPENDER = """\
name: spender
description: Spends tokens
model: replay:spender.cassette.yaml
prompt: Work hard.
"""
SPENDER_CASSETTE = """\
version: 1
agents:
  spender:
    - content: Spent.
      usage: {input_tokens: 4000, output_tokens: 1000}
"""

ENGINES = servers.ENGINES


@pytest.fixture(scope="module", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def served(
    engine: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp(f"a2a-serve-{engine}")
    (folder / "briefer.yaml").write_text(AGENT, encoding="utf-8")
    (folder / "briefer.cassette.yaml").write_text(CASSETTE, encoding="utf-8")
    (folder / "scribe.yaml").write_text(SCRIBE, encoding="utf-8")
    (folder / "scribe.cassette.yaml").write_text(SCRIBE_CASSETTE, encoding="utf-8")
    (folder / "lister.yaml").write_text(LISTER, encoding="utf-8")
    (folder / "lister.cassette.yaml").write_text(LISTER_CASSETTE, encoding="utf-8")
    (folder / "spender.yaml").write_text(SPENDER, encoding="utf-8")
    (folder / "spender.cassette.yaml").write_text(SPENDER_CASSETTE, encoding="utf-8")
    (folder / "keys.yaml").write_text(
        f"keys:\n  - {{user: alice, key: {ALICE}}}\n  - {{user: bob, key: {BOB}}}\n",
        encoding="utf-8",
    )
    args = ["--api-keys", "keys.yaml"]
    with contextlib.ExitStack() as stack:
        if engine == "aegra":
            pytest.importorskip("aegra_api")
            from tests.services import fresh_database

            postgres = request.getfixturevalue("postgres_server")
            args += ["--db", stack.enter_context(fresh_database(postgres))]
        server = stack.enter_context(
            servers.serving(
                [folder / f"{name}.yaml" for name in ("briefer", "scribe", "lister", "spender")],
                cwd=folder,
                args=args,
                log=folder / "serve.log",
            )
        )
        yield server.url


def _status(url: str, data: bytes | None = None, **headers: str) -> int:
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


class Caller:
    """An A2A client of the official SDK for one user's key."""

    agent = "briefer"

    def __init__(self, base: str, key: str) -> None:
        self.base, self.key = base, key

    async def _client(self, http: Any) -> Any:
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        card = await A2ACardResolver(http, f"{self.base}/a2a/{self.agent}").get_agent_card()
        return card, ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)

    def call(self, work: Any) -> Any:
        import httpx

        async def run() -> Any:
            async with httpx.AsyncClient(headers={"x-api-key": self.key}, timeout=60) as http:
                card, client = await self._client(http)
                return await work(card, client)

        return asyncio.run(run())


def _send(text: str, **ids: str) -> Any:
    from a2a.helpers import new_text_message
    from a2a.types import Role, SendMessageRequest

    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER, **ids))


async def _events(client: Any, request: Any) -> list[Any]:
    return [event async for event in client.send_message(request)]


def _state(event: Any) -> str | None:
    from runner.tools.a2a import state_name

    if event.HasField("status_update"):
        return state_name(event.status_update.status.state)
    if event.HasField("task"):
        return state_name(event.task.status.state)
    return None


def test_the_card_names_the_agent_and_needs_a_key(served: str, engine: str) -> None:
    def card_of(card: Any, client: Any) -> Any:
        async def read() -> Any:
            return card

        return read()

    card = Caller(served, ALICE).call(card_of)
    assert (card.name, card.description) == ("briefer", "Writes short briefs")
    assert card.capabilities.streaming
    (interface,) = card.supported_interfaces
    # the in-memory engine's endpoint is by the agent's assistant id; /a2a/briefer leads there
    path = assistant_id("briefer") if engine == "inmem" else "briefer"
    assert interface.url == f"{served}/a2a/{path}"
    assert [s.description for s in card.skills] == ["Writes short briefs"]
    card_path = f"{served}/a2a/briefer/.well-known/agent-card.json"
    assert _status(card_path) == 401
    assert _status(card_path, **{"x-api-key": "wrong" * 8}) == 401
    send = b'{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{}}'
    assert _status(f"{served}/a2a/briefer", send, **{"content-type": "application/json"}) == 401


def test_a_streamed_round_trip_with_the_question_answered_in_the_same_task(served: str) -> None:
    from a2a.types import GetTaskRequest

    async def work(card: Any, client: Any) -> Any:
        first = await _events(client, _send("brief me"))
        waiting = first[-1].status_update
        second = await _events(
            client, _send("short", task_id=waiting.task_id, context_id=waiting.context_id)
        )
        done = second[-1].status_update
        task = await client.get_task(GetTaskRequest(id=done.task_id))
        return first, second, task

    first, second, task = Caller(served, ALICE).call(work)
    asked, answered = _outcome(first), _outcome(second)
    states = [_state(e) for e in first]
    assert states[0] == "submitted" and "working" in states  # streamed: progress, then...
    assert asked.state == "input-required" and "How long?" in asked.text
    assert (answered.state, answered.text) == ("completed", "Briefed.")
    assert answered.context_id == asked.context_id  # the answer continued the thread that asked
    assert _state_of(task) == "completed"


def _outcome(events: list[Any]) -> Any:
    from runner.tools.a2a import _Progress

    progress = _Progress()
    for event in events:
        progress.read(event)
    return progress.outcome()


def test_another_user_can_neither_read_nor_continue_nor_cancel_a_task(served: str) -> None:
    from a2a.types import CancelTaskRequest, GetTaskRequest

    async def ask(card: Any, client: Any) -> Any:
        return (await _events(client, _send("brief me")))[-1].status_update

    waiting = Caller(served, ALICE).call(ask)

    async def intrude(card: Any, client: Any) -> list[str]:
        refused = []
        for attempt in (
            client.get_task(GetTaskRequest(id=waiting.task_id)),
            client.cancel_task(CancelTaskRequest(id=waiting.task_id)),
            _events(client, _send("long", task_id=waiting.task_id, context_id=waiting.context_id)),
        ):
            try:
                await attempt
            except Exception as error:  # the SDK raises the server's JSON-RPC error
                refused.append(str(error))
        return refused

    refused = Caller(served, BOB).call(intrude)
    assert len(refused) == 3 and all("not found" in r.lower() for r in refused), refused

    async def cancel(card: Any, client: Any) -> Any:
        return await client.cancel_task(CancelTaskRequest(id=waiting.task_id))

    assert _state_of(Caller(served, ALICE).call(cancel)) == "canceled"


def _state_of(task: Any) -> str:
    from runner.tools.a2a import state_name

    return state_name(task.status.state)


def _delegating(
    served: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, extra: str = ""
) -> Session:
    """A session of an agent whose one subagent is the served agent `name`, over A2A with
    alice's key; its model delegates once, then says what it got. `extra`: more top-level
    lines of the agent file."""
    monkeypatch.setenv("SERVED_KEY", ALICE)
    (tmp_path / "boss.yaml").write_text(
        f"name: boss\nmodel: openai:gpt-4.1\nprompt: You delegate.\n{extra}"
        "general_purpose_agent: false\nsubagents:\n"
        f"  - name: {name}\n    a2a:\n      card: {served}/a2a/{name}\n"
        '      headers: {x-api-key: "${SERVED_KEY}"}\n',
        encoding="utf-8",
    )

    def reply(messages: list[Any]) -> dict[str, Any]:
        if messages[-1].type == "tool":
            return ai(f"got: {messages[-1].text}")
        return ai("", ("task", {"description": "some work", "subagent_type": name}))

    model = ScriptedChatModel(script=reply)
    return Session(tmp_path / "boss.yaml", model=model, db=tmp_path / "db")


def test_an_agentctl_agent_delegates_to_the_served_agent(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _delegating(served, "briefer", tmp_path, monkeypatch) as session:
        first = session.run("go")
        assert isinstance(first.interrupt, Interrupt)
        (action,) = first.interrupt.actions
        assert action.agent == "briefer"
        assert action.args["question"] == "The A2A agent 'briefer' needs input: How long?"
        done = session.run(thread_id=first.thread_id, decisions=[Decision.answer("short")])
    result = next(e for e in done.events if isinstance(e, ToolResult) and e.name == "task")
    assert result.content == "Briefed."
    assert done.final is not None and done.final.content == "got: Briefed."


def test_the_served_agents_tokens_count_against_the_delegating_runs_budget(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The served agent reports its replies' tokens in the task's updates (both engines); the
    delegating run adds them to its own and stops at its budget."""
    extra = "limits: {tokens: 1000}\n"
    with _delegating(served, "spender", tmp_path, monkeypatch, extra=extra) as session:
        events = session.run("go").events
    last = events[-1]
    assert last.type == "error", events
    assert "budget of 1,000 tokens reached" in last.message  # type: ignore[attr-defined]
    # the parent's own model call (the scripted model reports no tokens) and the child's reply
    assert "(5,000 used)" in last.message  # type: ignore[attr-defined]
    assert not any(isinstance(e, ToolResult) and e.name == "task" for e in events)


def test_the_tokens_are_reported_in_the_final_status_update(served: str) -> None:
    async def work(card: Any, client: Any) -> list[Any]:
        return await _events(client, _send("go"))

    caller = Caller(served, ALICE)
    caller.agent = "spender"
    from runner.tools.a2a import event_usage

    reported = [u for u in map(event_usage, caller.call(work)) if u]
    assert reported == [{"input_tokens": 4000, "output_tokens": 1000}]


def test_a_stream_split_anywhere_is_rewritten_event_by_event() -> None:
    from runner.serve.a2a import _V1Stream

    events = (
        b'event: message\ndata: {"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t"}}}\n\n'
        b'event: message\ndata: {"jsonrpc":"2.0","id":"1","result":{"kind":"status-update",'
        b'"taskId":"t","status":{"state":"TASK_STATE_WORKING"},"final":false}}\n\n'
        b'data: {"jsonrpc":"2.0","id":"1","result":{"kind":"artifact-update","taskId":"t"}}\n\n'
    )
    sent: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])

    async def play() -> None:
        stream = _V1Stream(send)
        await stream(
            {"type": "http.response.start", "headers": [(b"content-type", b"text/event-stream")]}
        )
        for start in range(0, len(events), 37):  # chunks that cut events and lines apart
            chunk = events[start : start + 37]
            await stream({"type": "http.response.body", "body": chunk, "more_body": True})
        await stream({"type": "http.response.body", "body": b"", "more_body": False})

    asyncio.run(play())
    assert b"".join(sent).decode() == (
        'event: message\ndata: {"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t"}}}\n\n'
        'event: message\ndata: {"jsonrpc":"2.0","id":"1","result":{"statusUpdate":'
        '{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}}\n\n'
        'data: {"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t"}}}\n\n'
    )


def test_an_approval_of_the_served_agent_is_the_delegating_runs_approval(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _delegating(served, "scribe", tmp_path, monkeypatch) as session:
        first = session.run("go")
        assert isinstance(first.interrupt, Interrupt)
        (action,) = first.interrupt.actions
        assert (action.name, action.args, action.agent) == (
            "write_file",
            {"file_path": "/notes.md", "content": "hi"},
            "scribe",
        )
        assert "asked by the A2A agent 'scribe'" in (action.description or "")
        done = session.run(thread_id=first.thread_id, decisions=[Decision("approve")])
    assert done.final is not None and done.final.content == "got: Written."


BOSS = """\
name: boss
description: Delegates notes
model: replay:boss.cassette.yaml
prompt: You delegate.
general_purpose_agent: false
subagents:
  - name: scribe
    a2a:
      card: ${CHILD}/a2a/scribe
      headers: {x-api-key: "${SERVED_KEY}"}
"""
BOSS_CASSETTE = """\
version: 1
agents:
  boss:
    - tool_calls: [{name: task, args: {description: a note, subagent_type: scribe}}]
    - content: Done.
"""


def test_two_servers_an_approval_in_the_child_answered_by_the_parents_clients(
    served: str, tmp_path: Path
) -> None:
    """A parent `agentctl serve` whose agent delegates over A2A to an agent of the child server
    (this module's), driven from a LangGraph SDK client and from an A2A client: the child's
    approval waits in the parent's run, and the parent's client decides it."""
    from langgraph_sdk import get_sync_client

    (tmp_path / "boss.yaml").write_text(BOSS, encoding="utf-8")
    (tmp_path / "boss.cassette.yaml").write_text(BOSS_CASSETTE, encoding="utf-8")
    env = {"CHILD": served, "SERVED_KEY": ALICE}
    with servers.serving(
        [tmp_path / "boss.yaml"], cwd=tmp_path, env=env, log=tmp_path / "serve.log"
    ) as parent:
        client = get_sync_client(url=parent.url)
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "boss", input={"messages": [{"role": "user", "content": "go"}]})
        (waiting,) = client.threads.get(thread)["interrupts"].values()
        (call,) = waiting[0]["value"]["action_requests"]
        assert call["name"] == "write_file" and "A2A agent 'scribe'" in call["description"]
        approve = {"decisions": [{"type": "approve"}]}
        done = client.runs.wait(thread, "boss", command={"resume": approve})
        assert isinstance(done, dict) and done["messages"][-1]["content"] == "Done."

        async def over_a2a(card: Any, a2a: Any) -> tuple[Any, Any]:
            from a2a.helpers import new_data_part, new_message
            from a2a.types import Role, SendMessageRequest

            asked = _outcome(await _events(a2a, _send("go")))
            answer = new_message(
                [new_data_part({"resume": approve})],
                task_id=asked.task_id,
                context_id=asked.context_id,
                role=Role.ROLE_USER,
            )
            return asked, _outcome(await _events(a2a, SendMessageRequest(message=answer)))

        caller = Caller(parent.url, "no key needed")
        caller.agent = "boss"
        asked, answered = caller.call(over_a2a)
    assert asked.state == "input-required" and asked.request is not None
    assert [c["name"] for c in asked.request["action_requests"]] == ["write_file"]
    assert (answered.state, answered.text) == ("completed", "Done.")


def test_typed_inputs_go_as_vars(served: str, engine: str) -> None:
    """A `{vars: ...}` data part with the first message (the card lists the inputs on Aegra):
    on Aegra the executor makes it the run's `configurable.vars`; on the in-memory engine the
    middleware makes it the run's context, which the engine makes its `configurable`."""
    from a2a.helpers import new_data_part, new_message, new_text_part
    from a2a.types import Role, SendMessageRequest

    def request(*parts: Any) -> Any:
        return SendMessageRequest(message=new_message(list(parts), role=Role.ROLE_USER))

    async def work(card: Any, client: Any) -> tuple[Any, Any, Any]:
        refused = await _failure(client, request(new_text_part("go")))
        given = request(new_text_part("go"), new_data_part({"vars": {"topic": "birds"}}))
        return card, _outcome(await _events(client, given)), refused

    caller = Caller(served, ALICE)
    caller.agent = "lister"
    card, listed, refused = caller.call(work)
    # a required input missing: the run is refused (the in-memory engine's A2A says only
    # "Internal server error", whatever the reason)
    assert "topic" in refused if engine == "aegra" else refused == "Internal server error"
    assert (listed.state, listed.text) == ("completed", "Listed.")
    if engine == "aegra":
        (skill,) = card.skills
        assert skill.description == (
            'Lists things\nInputs, as a data part {"vars": {...}} with the first message: '
            "topic (string, required)."
        )


def test_a_vars_data_part_becomes_the_runs_context() -> None:
    from runner.serve.a2a import vars_as_context

    request = {
        "method": "SendStreamingMessage",
        "params": {"message": {"parts": [{"text": "go"}, {"data": {"vars": {"topic": "x"}}}]}},
    }
    assert vars_as_context(request)
    assert request["params"] == {
        "message": {"parts": [{"text": "go"}]},
        "context": {"vars": {"topic": "x"}},
    }
    other = {"method": "GetTask", "params": {"message": {"parts": [{"data": {"vars": {}}}]}}}
    assert not vars_as_context(other) and other["params"]["message"]["parts"]


async def _failure(client: Any, request: Any) -> str:
    """What the agent says of a request it cannot run: the failed task's text, or the error."""
    try:
        outcome = _outcome(await _events(client, request))
    except Exception as error:
        return str(error)
    assert outcome.state == "failed", outcome
    return str(outcome.text)
