"""Agents across hosts: a parent agent on one `agentctl serve` delegates with `task` to a child
agent on another (`remote:`), driven from the parent's `langgraph-sdk` client, on loopback with
replayed models.

The pair (in memory): the child's events come nested under the `task` call, its approval waits
in the parent's thread naming the child, the parent's answer resumes the child, a call that
finished is not run again, `inspect --probe` asks the child's server, the child's tokens stop
the parent at its budget, the parent's trace goes on in the child's spans, and a later call of
the same thread continues the same remote thread.
The kill (Postgres): the child server is killed while it runs and restarted; the parent's run
waits for it, follows the same remote run to its end and starts no second one.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.otlp import Receiver, received_spans, receiver  # noqa: F401 (a fixture)
from tests.serve import servers

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

KEY = "child-key-0123456789abcdef"

CHILD = """\
name: child
description: Answers questions
model: replay:child.cassette.yaml
prompt: You answer.
tools:
  - import: ./tools.py:publish
interrupt_on:
  publish: true
"""
CHILD_TOOLS = '''\
def publish(text: str) -> str:
    """Publish text."""
    return f"published {text}"
'''
CHILD_REPLIES = """\
- content: Publishing.
  tool_calls:
    - {name: publish, args: {text: hello}}
- content: The answer is 42, published.
- content: Still 42.
"""
PARENT = """\
name: parent
description: Delegates
model: replay:parent.cassette.yaml
prompt: You delegate.
general_purpose_agent: false
subagents:
  - name: child
    description: Answers questions
    remote:
      url: ${CHILD_URL}
      assistant: child
      api_key: ${CHILD_KEY}
      timeout: 300
"""
PARENT_REPLIES = """\
- content: Asking the child.
  tool_calls:
    - {name: task, args: {description: What is the answer?, subagent_type: child}}
- content: The child says 42.
- content: Asking again.
  tool_calls:
    - {name: task, args: {description: Still?, subagent_type: child}}
- content: Still 42, it says.
"""


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def pair(
    tmp_path: Path,
    receiver: Receiver,  # noqa: F811
) -> Iterator[tuple[servers.Server, servers.Server]]:
    """(child, parent): the child behind an API key, the parent holding it; the child sends
    its traces to `receiver`."""
    child_dir = _write(
        tmp_path / "child",
        {
            "child.yaml": CHILD,
            "tools.py": CHILD_TOOLS,
            "child.cassette.yaml": CHILD_REPLIES,
            "keys.yaml": f"keys:\n  - {{user: parent, key: {KEY}}}\n",
        },
    )
    parent_dir = _write(
        tmp_path / "parent",
        {"parent.yaml": PARENT, "parent.cassette.yaml": PARENT_REPLIES},
    )
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces"
    child = servers.launch(
        [child_dir / "child.yaml"],
        cwd=child_dir,
        args=["--api-keys", "keys.yaml", "--otel"],
        env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint},
        log=tmp_path / "child.log",
    )
    parent = servers.launch(
        [parent_dir / "parent.yaml"],
        cwd=parent_dir,
        env={"CHILD_URL": child.url, "CHILD_KEY": KEY},
        log=tmp_path / "parent.log",
    )
    try:
        yield servers.wait_ready(child), servers.wait_ready(parent)
    finally:
        for server in (parent, child):
            if server.proc.poll() is None:
                servers.stop(server)


def _stream(client: Any, thread: str, **kwargs: Any) -> list[tuple[str, Any]]:
    return [
        (part.event, part.data)
        for part in client.runs.stream(
            thread, "parent", stream_mode=["updates"], stream_subgraphs=True, **kwargs
        )
    ]


def _nested_texts(parts: list[tuple[str, Any]]) -> list[str]:
    """The texts of the model replies streamed under a `task` call (`updates|tools:...`)."""
    return [
        message["content"]
        for event, data in parts
        if event.startswith("updates|tools:")
        for update in data.values()
        if isinstance(update, dict)
        for message in update.get("messages") or ()
        if message.get("type") == "ai"
    ]


def _tool_results(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"] if m["type"] == "tool" and m["name"] == "task"]


def test_a_parent_delegates_to_a_child_on_another_server_approval_included(
    pair: tuple[servers.Server, servers.Server],
    receiver: Receiver,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    child, parent = pair
    client = sdk.get_sync_client(url=parent.url)
    children = sdk.get_sync_client(url=child.url, api_key=KEY)
    thread = client.threads.create()["thread_id"]

    parts = _stream(client, thread, input=_ask("go"))
    assert _nested_texts(parts) == ["Publishing."], parts  # the child's reply, under `task`
    waiting = client.threads.get_state(thread)["interrupts"]
    assert len(waiting) == 1, waiting
    request = waiting[0]["value"]
    assert request["action_requests"][0]["name"] == "publish"
    assert request["remote"]["agent"] == "child"
    assert request["remote"]["url"] == child.url

    parts = _stream(
        client,
        thread,
        command={"resume": {waiting[0]["id"]: {"decisions": [{"type": "approve"}]}}},
    )
    assert "The answer is 42, published." in _nested_texts(parts)
    values = client.threads.get_state(thread)["values"]
    assert _tool_results(values) == ["The answer is 42, published."]
    assert values["messages"][-1]["content"] == "The child says 42."

    (remote,) = children.threads.search(limit=10)
    runs = children.runs.list(remote["thread_id"])
    assert len(runs) == 2, runs  # the first run, stopped for approval, and the resume
    first_call = values["messages"][1]["tool_calls"][0]

    # The finished call, entered again (as after a crash of the parent): its answer, no run.
    from runner.middleware.remote_subagents import RemoteAgent
    from runner.spec.remote import RemoteAgentServer

    again = RemoteAgent("child", RemoteAgentServer(url=child.url, assistant="child", api_key=KEY))
    runtime = SimpleNamespace(
        config={"configurable": {"thread_id": thread}},
        tool_call_id=first_call["id"],
        state={"messages": []},
    )
    answer = again.call("What is the answer?", runtime, "child")  # type: ignore[arg-type]
    assert answer == "The answer is 42, published."
    assert len(children.runs.list(remote["thread_id"])) == 2

    # `inspect --probe` asks the child's server for the assistant, with the parent's key.
    from runner.cli import main

    monkeypatch.setenv("CHILD_URL", child.url)
    monkeypatch.setenv("CHILD_KEY", KEY)
    assert main(["inspect", str(tmp_path / "parent" / "parent.yaml"), "--probe"]) == 0
    assert "      answers: graph 'child', assistant " in capsys.readouterr().out
    monkeypatch.setenv("CHILD_KEY", "not-the-key-0123456789")
    assert main(["inspect", str(tmp_path / "parent" / "parent.yaml"), "--probe"]) == 1
    assert capsys.readouterr().err.endswith(
        f"subagents.child.remote: {child.url} (assistant 'child') refused the credentials "
        "(401): check `remote.api_key` and `remote.headers`\n"
    )

    # The child's tokens count against the parent's budget: the parent's own reply stays
    # under it, the child's first reply crosses it, and the parent's run stops there.
    from runner.run import Session

    monkeypatch.setenv("CHILD_KEY", KEY)
    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path / "home"))
    budgeted = tmp_path / "parent" / "budgeted.yaml"
    budgeted.write_text(PARENT + "limits: {tokens: 1500}\n", encoding="utf-8")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from runner.run import telemetry

    exporter = InMemorySpanExporter()
    tracing = telemetry.enable(exporter=exporter, batch=False)
    try:
        with Session(budgeted) as session:
            events = session.run("go").events
    finally:
        tracing.shutdown()
    (task_span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool task"]
    usage = [e for e in events if e.type == "usage"]
    assert [e.agent for e in usage] == ["parent", "child"], events
    assert usage[0].total_tokens < 1500 <= usage[0].total_tokens + usage[1].total_tokens
    assert events[-1].type == "error" and "budget of 1,500 tokens reached" in events[-1].message

    # A later call of the same parent thread continues the same remote thread.
    _stream(client, thread, input=_ask("still?"))
    values = client.threads.get_state(thread)["values"]
    assert _tool_results(values)[-1] == "Still 42."
    assert remote["thread_id"] in [t["thread_id"] for t in children.threads.search(limit=10)]
    history = children.threads.get_state(remote["thread_id"])["values"]["messages"]
    assert [m["content"] for m in history if m["type"] == "human"] == [
        "What is the answer?",
        "Still?",
    ]

    # The traced call's remote run is a span of the caller's trace, under its `task` span
    # (the child's spans reach the receiver when it stops).
    servers.stop(child)
    trace_id = task_span.context.trace_id.to_bytes(16, "big")
    remote = [s for s in received_spans(receiver).values() if s.trace_id == trace_id]
    under_task = [
        s for s in remote if s.parent_span_id == task_span.context.span_id.to_bytes(8, "big")
    ]
    assert [s.name for s in under_task] == ["invoke_agent child"], remote
    assert "chat replay" in [s.name for s in remote if s.parent_span_id == under_task[0].span_id]


KILL_CHILD = """\
name: child
description: Has effects
model: replay:child.cassette.yaml
prompt: You have effects, one at a time.
tools:
  - import: ./effects.py:effect
"""
KILL_EFFECTS = '''\
import os
import time
from pathlib import Path

HERE = Path(__file__).parent


def effect(n: int) -> str:
    """Have effect number n."""
    with (HERE / "effects.log").open("a", encoding="utf-8") as log:
        log.write(f"{n} {os.getpid()}\\n")
    if n == 2:  # the first time: stay in flight until the test kills the server
        try:
            (HERE / "block").unlink()
        except FileNotFoundError:
            pass
        else:
            (HERE / "blocked").write_text(str(os.getpid()), encoding="utf-8")
            while True:
                time.sleep(1)
    return f"effect {n} done"
'''
KILL_CHILD_REPLIES = """\
- content: Effect 1.
  tool_calls:
    - {name: effect, args: {n: 1}}
- content: Effect 2.
  tool_calls:
    - {name: effect, args: {n: 2}}
- content: Both effects had.
"""
KILL_PARENT_REPLIES = """\
- content: Asking the child.
  tool_calls:
    - {name: task, args: {description: Have your effects., subagent_type: child}}
- content: The child had its effects.
"""


@pytest.mark.skipif(
    __import__("sys").version_info < (3, 12), reason="Aegra needs Python 3.12 or newer"
)
def test_the_child_server_killed_mid_run_and_restarted(
    tmp_path: Path, postgres_server: str, redis_server: str
) -> None:
    pytest.importorskip("aegra_api")
    import uuid

    from tests.services import fresh_database

    child_dir = _write(
        tmp_path / "child",
        {
            "child.yaml": KILL_CHILD,
            "effects.py": KILL_EFFECTS,
            "child.cassette.yaml": KILL_CHILD_REPLIES,
            "block": "",
        },
    )
    parent_dir = _write(
        tmp_path / "parent",
        {
            "parent.yaml": PARENT.replace("      api_key: ${CHILD_KEY}\n", ""),
            "parent.cassette.yaml": KILL_PARENT_REPLIES,
        },
    )
    prefix = f"agentctl-test:{uuid.uuid4().hex[:8]}:"
    lease = {
        "LEASE_DURATION_SECONDS": "3",
        "HEARTBEAT_INTERVAL_SECONDS": "1",
        "REAPER_INTERVAL_SECONDS": "1",
        "WORKER_QUEUE_KEY": f"{prefix}jobs",
        "REDIS_CHANNEL_PREFIX": f"{prefix}run:",
    }
    port = servers.free_port()
    with fresh_database(postgres_server) as database:

        def start_child(log: str) -> servers.Server:
            return servers.launch_command(
                lambda _: [
                    servers.AGENTCTL,
                    "serve",
                    str(child_dir / "child.yaml"),
                    "--port",
                    str(port),
                    "--db",
                    database,
                    "--redis",
                    redis_server,
                ],
                cwd=child_dir,
                env=lease,
                log=tmp_path / log,
            )

        child = start_child("child-1.log")
        child.url = f"http://127.0.0.1:{port}"
        parent = servers.launch(
            [parent_dir / "parent.yaml"],
            cwd=parent_dir,
            env={"CHILD_URL": child.url},
            log=tmp_path / "parent.log",
        )
        restarted: servers.Server | None = None
        try:
            servers.wait_ready(child)
            servers.wait_ready(parent)
            client = sdk.get_sync_client(url=parent.url)
            thread = client.threads.create()["thread_id"]
            run = client.runs.create(thread, "parent", input=_ask("go"))

            deadline = time.monotonic() + 120  # a wait limit for a loaded machine
            while not (child_dir / "blocked").exists():
                assert time.monotonic() < deadline, child.output() + parent.output()
                time.sleep(0.05)
            servers.kill(child)
            restarted = start_child("child-2.log")
            restarted.url = child.url
            servers.wait_ready(restarted)

            state = client.runs.join(thread, run["run_id"])
            assert state["messages"][-1]["content"] == "The child had its effects.", (
                parent.output() + restarted.output()
            )
            assert _tool_results(state) == ["Both effects had."]

            children = sdk.get_sync_client(url=restarted.url)
            (remote,) = children.threads.search(limit=10)
            runs = children.runs.list(remote["thread_id"])
            assert [r["status"] for r in runs] == ["success"], runs  # one run, taken over
            log = (child_dir / "effects.log").read_text(encoding="utf-8").split("\n")
            done = [line.split()[0] for line in log if line]
            assert done.count("1") == 1, log  # finished before the kill: not again
            assert done.count("2") == 2, log  # in flight at the kill: once more
        finally:
            for server in (parent, restarted):
                if server is not None and server.proc.poll() is None:
                    servers.stop(server, signal.SIGTERM)
