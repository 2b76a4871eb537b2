"""`agentctl serve` against the official client, `langgraph-sdk`, on both engines: the in-memory
one (`--dev`) and Aegra on a real Postgres with a Redis run queue (`--db --redis`). One server
process per engine for the module, on 127.0.0.1 and an ephemeral port, stopped with SIGINT."""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve import servers
from tests.services import fresh_database

pytest.importorskip("langgraph_api")
sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

SCRIBE = """\
name: scribe
description: Writes a note, after approval
model: replay:scribe.cassette.yaml
prompt: You write notes.
backend: {kind: filesystem, root_dir: "./ws/{thread_id}"}
interrupt_on: {write_file: true}
"""
SCRIBE_REPLIES = """\
- content: Writing the note.
  tool_calls:
    - {name: write_file, args: {file_path: /note.md, content: draft}}
- content: Done.
"""
ASKER = """\
name: asker
description: Asks which colour, for a topic
model: replay:asker.cassette.yaml
prompt: "You paint {{ vars.topic }} {{ vars.coats }} times."
ask_user: true
inputs:
  topic: {type: string, description: What to paint, required: true}
  coats: {type: integer, default: 2, minimum: 1}
"""
ASKER_REPLIES = """\
- content: Asking.
  tool_calls:
    - {name: ask_user, args: {question: Which colour?, choices: [red, blue]}}
- content: Painted.
"""
GREETER = """\
name: greeter
description: Says hello
model: replay:greeter.cassette.yaml
prompt: You greet.
"""


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("served")
    (folder / "scribe.yaml").write_text(SCRIBE, encoding="utf-8")
    (folder / "scribe.cassette.yaml").write_text(SCRIBE_REPLIES, encoding="utf-8")
    (folder / "greeter.yaml").write_text(GREETER, encoding="utf-8")
    (folder / "asker.yaml").write_text(ASKER, encoding="utf-8")
    (folder / "asker.cassette.yaml").write_text(ASKER_REPLIES, encoding="utf-8")
    (folder / "greeter.cassette.yaml").write_text("- content: Hello there.\n", encoding="utf-8")
    (folder / "formal.cassette.yaml").write_text("- content: Good day.\n", encoding="utf-8")
    return folder


@contextlib.contextmanager
def aegra_args(request: pytest.FixtureRequest) -> Iterator[tuple[list[str], dict[str, str]]]:
    """`--db URL --redis URL` of a database of its own and Redis keys of its own."""
    if sys.version_info < (3, 12):
        pytest.skip("Aegra needs Python 3.12 or newer")
    pytest.importorskip("aegra_api")
    postgres = request.getfixturevalue("postgres_server")
    redis = request.getfixturevalue("redis_server")
    prefix = f"agentctl-test:{uuid.uuid4().hex[:8]}:"
    env = {"WORKER_QUEUE_KEY": f"{prefix}jobs", "REDIS_CHANNEL_PREFIX": f"{prefix}run:"}
    with fresh_database(postgres) as database:
        yield ["--db", database, "--redis", redis], env


@pytest.fixture(scope="module", params=["memory", "aegra"])
def server(request: pytest.FixtureRequest, agents: Path) -> Iterator[str]:
    log = agents / f"serve-{request.param}.log"
    if request.param == "memory":
        with servers.serving([agents], cwd=agents, args=["--dev"], log=log) as served:
            yield served.url
        return
    with (
        aegra_args(request) as (args, env),
        servers.serving([agents], cwd=agents, args=args, env=env, log=log) as served,
    ):
        yield served.url


@pytest.fixture
def client(server: str) -> Any:
    return sdk.get_sync_client(url=server)


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _last_text(state: dict[str, Any]) -> str:
    content = state["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def _to_approval(client: Any) -> str:
    """A new thread, streamed to the write_file approval; its id."""
    thread = client.threads.create()["thread_id"]
    interrupts = [
        part.data["__interrupt__"]
        for part in client.runs.stream(thread, "scribe", input=_ask("note"), stream_mode="updates")
        if part.event == "updates" and "__interrupt__" in (part.data or {})
    ]
    assert len(interrupts) == 1
    request = interrupts[0][0]["value"]["action_requests"][0]
    assert (request["name"], request["args"]["file_path"]) == ("write_file", "/note.md")
    return thread


def _resume(client: Any, thread: str, decision: dict[str, Any]) -> dict[str, Any]:
    return client.runs.wait(thread, "scribe", command={"resume": {"decisions": [decision]}})


def test_assistants_are_the_agents_by_name(client: Any) -> None:
    found = {a["graph_id"]: a for a in client.assistants.search()}
    assert set(found) == {"scribe", "greeter", "asker"}
    assert found["scribe"]["name"] == "scribe"
    assert found["scribe"]["description"] == "Writes a note, after approval"


def test_a_stream_stops_at_the_approval_and_the_thread_shows_it(client: Any) -> None:
    thread = _to_approval(client)
    state = client.threads.get_state(thread)
    assert state["next"] == ["HumanInTheLoopMiddleware.after_model"]
    assert state["interrupts"][0]["value"]["action_requests"][0]["name"] == "write_file"
    interrupted = {t["thread_id"] for t in client.threads.search(status="interrupted")}
    assert thread in interrupted
    assert client.threads.get(thread)["status"] == "interrupted"


def test_resume_with_approve_writes_the_file(client: Any, agents: Path) -> None:
    thread = _to_approval(client)
    assert _last_text(_resume(client, thread, {"type": "approve"})) == "Done."
    assert (agents / "ws" / thread / "note.md").read_text(encoding="utf-8") == "draft"
    assert client.threads.get(thread)["status"] == "idle"


def test_resume_with_edit_writes_the_edited_call(client: Any, agents: Path) -> None:
    thread = _to_approval(client)
    edited = {"name": "write_file", "args": {"file_path": "/note.md", "content": "edited"}}
    _resume(client, thread, {"type": "edit", "edited_action": edited})
    assert (agents / "ws" / thread / "note.md").read_text(encoding="utf-8") == "edited"


def test_resume_with_reject_writes_nothing(client: Any, agents: Path) -> None:
    thread = _to_approval(client)
    state = _resume(client, thread, {"type": "reject", "message": "not now"})
    tool_messages = [m for m in state["messages"] if m["type"] == "tool"]
    assert "not now" in tool_messages[-1]["content"]
    assert not (agents / "ws" / thread / "note.md").exists()


def test_a_background_run_is_joined(client: Any) -> None:
    thread = client.threads.create()["thread_id"]
    run = client.runs.create(thread, "greeter", input=_ask("hi"))
    assert _last_text(client.runs.join(thread, run["run_id"])) == "Hello there."
    assert client.runs.get(thread, run["run_id"])["status"] == "success"


def test_the_store(client: Any) -> None:
    client.store.put_item(["notes", "team"], "k1", {"text": "kept"})
    assert client.store.get_item(["notes", "team"], "k1")["value"] == {"text": "kept"}
    found = client.store.search_items(["notes"])["items"]
    assert [item["key"] for item in found] == ["k1"]


def test_an_assistant_config_chooses_the_model(client: Any, agents: Path) -> None:
    formal = client.assistants.create(
        "greeter",
        config={"configurable": {"model": f"replay:{agents / 'formal.cassette.yaml'}"}},
        name="formal greeter",
    )
    thread = client.threads.create()["thread_id"]
    assert _last_text(client.runs.wait(thread, formal["assistant_id"], input=_ask("hi"))) == (
        "Good day."
    )
    other = client.threads.create()["thread_id"]
    assert _last_text(client.runs.wait(other, "greeter", input=_ask("hi"))) == "Hello there."


def test_an_edited_agent_file_takes_effect_for_new_runs(client: Any, agents: Path) -> None:
    path = agents / "greeter.yaml"
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original.replace("greeter.cassette", "formal.cassette"), encoding="utf-8")
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        thread = client.threads.create()["thread_id"]
        assert _last_text(client.runs.wait(thread, "greeter", input=_ask("hi"))) == "Good day."
    finally:
        path.write_text(original, encoding="utf-8")
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2 * 10**9))


def test_crons_are_made_listed_and_deleted(client: Any) -> None:
    thread = client.threads.create()["thread_id"]
    # The reply is a cron under one engine, the cron's first run under the other (the API's
    # own ambiguity): the cron is found by its thread.
    client.crons.create_for_thread(thread, "greeter", schedule="0 0 * * *", input=_ask("hi"))
    crons = client.crons.search(thread_id=thread)
    assert [c["schedule"] for c in crons] == ["0 0 * * *"]
    client.crons.delete(crons[0]["cron_id"])
    assert client.crons.search(thread_id=thread) == []


def test_typed_inputs_are_the_assistants_config_schema(client: Any) -> None:
    asker = next(a for a in client.assistants.search() if a["graph_id"] == "asker")
    schema = client.assistants.get_schemas(asker["assistant_id"])["config_schema"]
    variables = schema["properties"]["vars"]
    assert variables["required"] == ["topic"]
    assert variables["properties"]["coats"] == {"type": "integer", "default": 2, "minimum": 1}


def test_ask_user_is_an_interrupt_resumed_with_the_answer(client: Any) -> None:
    thread = client.threads.create()["thread_id"]
    config = {"configurable": {"vars": {"topic": "the shed"}}}
    client.runs.wait(thread, "asker", input=_ask("paint"), config=config)
    [interrupt] = client.threads.get_state(thread)["interrupts"]
    assert interrupt["value"]["type"] == "ask_user"
    assert (interrupt["value"]["question"], interrupt["value"]["choices"]) == (
        "Which colour?",
        ["red", "blue"],
    )
    state = client.runs.wait(thread, "asker", command={"resume": "blue"}, config=config)
    assert _last_text(state) == "Painted."
    assert [m["content"] for m in state["messages"] if m["type"] == "tool"] == ["blue"]


def test_a_run_without_a_required_input_is_refused(client: Any) -> None:
    # (tests/serve/test_serve_messages.py: the messages of wrong inputs and answers)
    thread = client.threads.create()["thread_id"]
    with pytest.raises(sdk.errors.UnprocessableEntityError):
        client.runs.create(thread, "asker", input=_ask("paint"))
    assert client.runs.list(thread) == []
