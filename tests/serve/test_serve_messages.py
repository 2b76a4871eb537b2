"""A user's mistake sent through the API reaches the client as agentctl's located message, on
both engines (in memory, and Aegra on Postgres with a Redis run queue): a request that is wrong
(inputs that would fail the run, an answer that does not fit what the thread waits on) is
refused with 422 before a run is made; a run that fails on a mistake (a budget reached, the
agent file broken since the start) carries the message in its error and in its stream's error
event. The server's log gets one line for each, never a traceback, and no engine warning about a
setting the user did not make; "serving at" is printed once the port accepts connections."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serve import servers
from tests.serve.test_serve_contract import aegra_args
from tests.wire import refused_url

pytest.importorskip("langgraph_api")
sdk = pytest.importorskip("langgraph_sdk")
errors = pytest.importorskip("langgraph_sdk.errors")

pytestmark = pytest.mark.slow

PAINTER = """\
name: painter
description: Paints a topic
model: replay:painter.cassette.yaml
prompt: "You paint {{ vars.topic }} {{ vars.coats }} times."
inputs:
  topic: {type: string, description: What to paint, required: true}
  coats: {type: integer, default: 2, minimum: 1}
"""
ASKER = """\
name: asker
description: Asks which colour
model: replay:asker.cassette.yaml
prompt: You paint.
ask_user: true
"""
ASKER_REPLIES = """\
- content: Asking.
  tool_calls:
    - {name: ask_user, args: {question: Which colour?, choices: [red, blue]}}
- content: Painted.
"""
SCRIBE = """\
name: scribe
description: Writes a note, after approval
model: replay:scribe.cassette.yaml
prompt: You write notes.
backend: {kind: filesystem, root_dir: "./ws/{thread_id}"}
interrupt_on: {write_file: {allowed_decisions: [approve, reject]}}
"""
SCRIBE_REPLIES = """\
- content: Writing the note.
  tool_calls:
    - {name: write_file, args: {file_path: /note.md, content: draft}}
- content: Done.
"""
COUNTER = """\
name: counter
description: Counts, on a budget
model: replay:counter.cassette.yaml
prompt: You count.
limits: {tokens: 10}
"""
COUNTER_REPLIES = """\
- content: Planning.
  tool_calls:
    - {name: write_todos, args: {todos: [{content: count, status: pending}]}}
- content: Done.
"""
GREETER = """\
name: greeter
description: Says hello
model: replay:greeter.cassette.yaml
prompt: You greet.
"""


OFFLINE_URL = refused_url() + "/v1"
OFFLINE = """\
name: offline
description: Its model's server is down
model: {{id: "openai:test-model", params: {{base_url: "{url}", api_key: k, max_retries: 0}}}}
prompt: You answer.
"""


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mistakes")
    files = {
        "painter.yaml": PAINTER,
        "painter.cassette.yaml": "- content: Painted.\n",
        "asker.yaml": ASKER,
        "asker.cassette.yaml": ASKER_REPLIES,
        "scribe.yaml": SCRIBE,
        "scribe.cassette.yaml": SCRIBE_REPLIES,
        "counter.yaml": COUNTER,
        "counter.cassette.yaml": COUNTER_REPLIES,
        "greeter.yaml": GREETER,
        "greeter.cassette.yaml": "- content: Hello.\n",
        "offline.yaml": OFFLINE.format(url=OFFLINE_URL),
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _connects(url: str) -> bool:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return True
    except OSError:
        return False


def _announced(server: servers.Server) -> servers.Server:
    """Wait for "serving at": the port must accept a connection at once."""
    deadline = time.monotonic() + servers.START_LIMIT
    while "serving at" not in server.output():
        if server.proc.poll() is not None or time.monotonic() > deadline:
            servers.kill(server)
            raise AssertionError(f"agentctl serve did not start:\n{server.output()}")
        time.sleep(0.01)
    assert _connects(server.url), server.output()
    return servers.wait_ready(server)


@pytest.fixture(scope="module", params=["memory", "aegra"])
def server(request: pytest.FixtureRequest, agents: Path) -> Iterator[servers.Server]:
    log = agents / f"serve-{request.param}.log"
    with aegra_args(request) if request.param == "aegra" else _no_args() as (args, env):
        served = _announced(servers.launch([agents], cwd=agents, args=args, env=env, log=log))
        try:
            yield served
        finally:
            if served.proc.poll() is None:
                servers.stop(served)


class _no_args:
    def __enter__(self) -> tuple[list[str], dict[str, str]]:
        return [], {}

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.fixture
def client(server: servers.Server) -> Any:
    return sdk.get_sync_client(url=server.url)


class Log:
    """What the server logs from now on."""

    def __init__(self, server: servers.Server) -> None:
        self.server = server
        self.start = len(server.output())

    def since(self) -> str:
        return self.server.output()[self.start :]

    def lines_for(self, text: str, count: int = 1) -> None:
        """The log has exactly `count` lines with `text` (waited for), and no traceback."""
        deadline = time.monotonic() + 30
        while self._count(text) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        logged = self.since()
        assert self._count(text) == count, logged
        assert "Traceback" not in logged, logged
        assert "internal error" not in logged.lower(), logged

    def _count(self, text: str) -> int:
        return sum(text in line for line in self.since().splitlines())


@pytest.fixture
def log(server: servers.Server) -> Log:
    return Log(server)


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _vars(**values: Any) -> dict[str, Any]:
    return {"configurable": {"vars": values}}


INPUT_MISTAKES = {
    "missing": (
        _vars(),
        "painter.yaml:6:10: inputs.topic: required input 'topic' has no value; set "
        "configurable.vars.topic (text)",
    ),
    "wrong type": (
        _vars(topic="the shed", coats="many"),
        "configurable.vars: coats: expected an integer of at least 1, found text 'many' (the "
        "input is declared at painter.yaml:7:10)",
    ),
    "no model id": (
        {"configurable": {"vars": {"topic": "the shed"}, "model": "gpt-4.1"}},
        "configurable.model: expected 'provider:model', e.g. 'openai:gpt-4.1' or "
        "'replay:cassette.yaml', found text 'gpt-4.1'; did you mean 'openai:gpt-4.1'?",
    ),
    "no cassette": (
        {"configurable": {"vars": {"topic": "the shed"}, "model": "replay:nowhere.yaml"}},
        "configurable.model: replay cassette not found: nowhere.yaml (looked for "
        "{agents}/nowhere.yaml: a relative path is from the folder serve runs in)",
    ),
    "unknown": (
        _vars(topic="the shed", colour="red"),
        "configurable.vars: colour: painter.yaml has no template variable 'colour'; it uses: "
        "coats, topic",
    ),
}


@pytest.mark.parametrize("mistake", sorted(INPUT_MISTAKES))
def test_wrong_inputs_are_refused_with_422_and_the_located_message(
    client: Any, log: Log, mistake: str, agents: Path
) -> None:
    config, message = INPUT_MISTAKES[mistake]
    message = message.replace("{agents}", str(agents.resolve()))
    thread = client.threads.create()["thread_id"]
    with pytest.raises(errors.UnprocessableEntityError) as refused:
        client.runs.create(thread, "painter", input=_ask("paint"), config=config)
    assert refused.value.response.status_code == 422
    assert refused.value.body == {"detail": message}
    with pytest.raises(errors.UnprocessableEntityError) as streamed:
        list(client.runs.stream(thread, "painter", input=_ask("paint"), config=config))
    assert streamed.value.body == {"detail": message}
    assert client.runs.list(thread) == []  # no run was made
    log.lines_for(f"run refused: {message}", 2)  # one a request


def test_inputs_that_fit_run(client: Any) -> None:
    state = client.runs.wait(None, "painter", input=_ask("paint"), config=_vars(topic="a shed"))
    assert state["messages"][-1]["content"] == "Painted."


def test_a_run_without_a_thread_is_checked_too(client: Any, log: Log) -> None:
    with pytest.raises(httpx.HTTPStatusError) as refused:  # (the SDK's own type not here)
        client.runs.wait(None, "painter", input=_ask("paint"))
    assert refused.value.response.status_code == 422
    assert "required input 'topic' has no value" in refused.value.response.json()["detail"]
    log.lines_for("run refused: painter.yaml:6:10: inputs.topic: required input 'topic'")


NOT_MESSAGES = {
    "a number": (5, "input.messages: expected a message such as "),
    "a mapping without content": ([{"role": "user"}], "input.messages[0]: expected a message"),
    "a number among texts": (["hi", 3], "input.messages[1]: expected a message"),
}


@pytest.mark.parametrize("given", sorted(NOT_MESSAGES))
def test_input_that_is_not_messages_is_refused_and_leaves_the_thread_readable(
    client: Any, log: Log, given: str
) -> None:
    # The engines would start the run, fail it with LangChain's text, and keep the value in
    # the thread: its state could no longer be read (500 on every read)
    messages, start = NOT_MESSAGES[given]
    thread = client.threads.create()["thread_id"]
    with pytest.raises(errors.UnprocessableEntityError) as refused:
        client.runs.create(thread, "greeter", input={"messages": messages})
    detail = refused.value.body["detail"]
    assert detail.startswith(start), detail
    assert '{"role": "user", "content": "Hello"}' in detail
    assert client.runs.list(thread) == []
    state = client.runs.wait(thread, "greeter", input=_ask("hi"))
    assert state["messages"][-1]["content"] == "Hello."
    log.lines_for("run refused: input.messages")


def test_a_thread_id_that_names_no_thread_is_refused_without_a_traceback(
    server: servers.Server, log: Log
) -> None:
    answer = httpx.post(
        f"{server.url}/threads/not-a-uuid/runs/wait",
        json={"assistant_id": "greeter", "input": _ask("hi")},
    )
    if "--db" in list(map(str, server.proc.args)):  # Aegra takes any name for a thread ID
        assert answer.status_code == 200, answer.text
        return
    assert answer.status_code == 422, answer.text
    assert answer.json() == {
        "detail": "thread 'not-a-uuid': Invalid thread ID: must be a UUID",
    }
    log.lines_for("run refused: thread 'not-a-uuid'")


def test_an_assistants_inputs_count(client: Any) -> None:
    assistant = client.assistants.create("painter", config=_vars(topic="a shed"))
    thread = client.threads.create()["thread_id"]
    state = client.runs.wait(thread, assistant["assistant_id"], input=_ask("paint"))
    assert state["messages"][-1]["content"] == "Painted."


def _waiting(client: Any, agent: str) -> str:
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, agent, input=_ask("go"))
    assert client.threads.get_state(thread)["interrupts"]
    return thread


def _edit() -> dict[str, Any]:
    return {
        "type": "edit",
        "edited_action": {"name": "write_file", "args": {"file_path": "/x.md", "content": "y"}},
    }


ANSWER_MISTAKES = {
    "a decision not allowed": (
        "scribe",
        {"decisions": [_edit()]},
        "write_file: 'edit' is not allowed here; allowed: approve, reject",
    ),
    "too many decisions": (
        "scribe",
        {"decisions": [{"type": "approve"}, {"type": "approve"}]},
        "1 calls wait for approval (write_file); give 1 decisions, not 2, in the order the "
        "calls are listed",
    ),
    "no decisions": (
        "scribe",
        "yes",
        'write_file waits for approval; resume with {"decisions": [...]}, one decision per '
        "call (1)",
    ),
    "not a choice": (
        "asker",
        "green",
        "'green' is not one of the choices for 'Which colour?': 'red', 'blue'",
    ),
}


@pytest.mark.parametrize("mistake", sorted(ANSWER_MISTAKES))
def test_an_answer_that_does_not_fit_is_refused_with_422(
    client: Any, log: Log, mistake: str
) -> None:
    agent, resume, message = ANSWER_MISTAKES[mistake]
    thread = _waiting(client, agent)
    with pytest.raises(errors.UnprocessableEntityError) as refused:
        list(client.runs.stream(thread, agent, command={"resume": resume}))
    assert refused.value.body == {"detail": message}
    assert client.threads.get_state(thread)["interrupts"]  # still waiting
    log.lines_for(f"run refused: {message}")


@pytest.mark.parametrize("before", ["new", "answered"])
def test_an_answer_to_a_thread_that_waits_on_none_is_refused(
    client: Any, log: Log, before: str
) -> None:
    thread = client.threads.create()["thread_id"]
    if before == "answered":
        client.runs.wait(thread, "greeter", input=_ask("hi"))
    with pytest.raises(httpx.HTTPStatusError) as refused:  # (the SDK's own type not here)
        client.runs.wait(
            thread, "greeter", command={"resume": {"decisions": [{"type": "approve"}]}}
        )
    message = (
        f"thread {thread} waits on no answer: no approval or question is pending (status: "
        "idle); send a message as `input`, not an answer as `command.resume`"
    )
    assert refused.value.response.status_code == 422
    assert refused.value.response.json() == {"detail": message}
    log.lines_for(f"run refused: {message}")


def test_an_answer_that_fits_resumes(client: Any) -> None:
    thread = _waiting(client, "asker")
    state = client.runs.wait(thread, "asker", command={"resume": "Blue"})
    assert state["messages"][-1]["content"] == "Painted."


def _failed(client: Any, agent: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run of `agent` streamed and one joined: their error event and error."""
    thread = client.threads.create()["thread_id"]
    events = [
        part.data
        for part in client.runs.stream(thread, agent, input=_ask("go"))
        if part.event == "error"
    ]
    assert len(events) == 1, events
    run = client.runs.create(client.threads.create()["thread_id"], agent, input=_ask("go"))
    joined = client.runs.join(run["thread_id"], run["run_id"])
    return events[0], joined["__error__"]


def test_a_run_over_its_budget_says_so(client: Any, log: Log) -> None:
    message = (
        "counter.yaml:5:18: limits.tokens: budget of 10 tokens reached (820 used); the run "
        "stopped (raise `limits.tokens` and continue the thread to let it go on)"
    )
    event, error = _failed(client, "counter")
    assert event == {"error": "BudgetExceeded", "message": message}
    assert error["message"] == message
    log.lines_for(f"run failed: {message}", 2)  # one a run


def test_a_run_whose_model_server_is_down_names_the_server(client: Any, log: Log) -> None:
    # as `agentctl run` says it; the client got `An internal error occurred`, the log two
    # tracebacks
    event, error = _failed(client, "offline")
    start = f"cannot reach the openai server at {OFFLINE_URL} (model 'test-model'): "
    assert event["error"] == "RunError"
    assert event["message"].startswith(start), event
    assert event["message"].endswith("check that it is running and the model's `base_url`")
    assert error["message"] == event["message"]
    log.lines_for(f"run failed: {start}", 2)  # one a run


def test_a_run_of_a_file_broken_since_the_start_says_where(
    client: Any, log: Log, agents: Path
) -> None:
    greeter = agents / "greeter.yaml"
    greeter.write_text(GREETER.replace("prompt:", "promt:"), encoding="utf-8")
    try:
        event, error = _failed(client, "greeter")
    finally:
        greeter.write_text(GREETER, encoding="utf-8")
    message = "greeter.yaml:4:1: promt: unknown key; did you mean 'prompt'?"
    assert event == {"error": "SpecError", "message": message}
    assert error["message"] == message
    log.lines_for(f"run failed: {message}", 2)  # one a run


def test_no_warning_about_settings_the_user_did_not_make(server: servers.Server) -> None:
    httpx.post(f"{server.url}/threads", json={}).raise_for_status()  # Aegra's auth starts
    out = server.output()
    assert "allow-blocking" not in out, out
    assert "Slow graph load" not in out, out
    assert "No auth file configured" not in out, out  # Aegra's, in its own settings' terms


def test_the_banner_names_each_file_once(tmp_path: Path) -> None:
    # --dev serves a file with problems; each problem is printed under the file, without it
    (tmp_path / "fixme.yaml").write_text(GREETER.replace("prompt:", "promt:"), encoding="utf-8")
    (tmp_path / "greeter.cassette.yaml").write_text("- content: Hello.\n", encoding="utf-8")
    server = _announced(
        servers.launch(["fixme.yaml"], cwd=tmp_path, args=["--dev"], log=tmp_path / "serve.log")
    )
    out = servers.stop(server)
    assert "  greeter              fixme.yaml\n    4:1: promt: unknown key" in out, out
    assert out.count("fixme.yaml") == 1, out
