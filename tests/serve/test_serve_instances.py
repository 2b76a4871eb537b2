"""Two `agentctl serve --db --redis` processes on one Postgres and one Redis: a run made on one
is joined on the other, and when the process running a run is SIGKILLed the other finishes it
from its last checkpoint, without doing any step twice.

The agent takes numbered steps, one tool call each; its tool appends `step pid` to a log file,
so the log says which step ran, how often, and in which process. Its model replies are slow
(a cassette `delay`) so the kill lands in the middle of the run, in a model call.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve import servers

pytest.importorskip("aegra_api")
sdk = pytest.importorskip("langgraph_sdk")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.version_info < (3, 12), reason="Aegra needs Python 3.12 or newer"),
]

STEPS = 8

STEPPER = """\
name: stepper
description: Takes numbered steps
model: replay:stepper.cassette.yaml
prompt: You take steps, one at a time.
tools:
  - import: ./steps.py:step
"""
STEPS_PY = '''\
import os
from pathlib import Path

LOG = Path(__file__).with_name("steps.log")


def step(n: int) -> str:
    """Take step number n."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"{n} {os.getpid()}\\n")
    return f"step {n} taken"
'''
GREETER = """\
name: greeter
description: Says hello
model: replay:greeter.cassette.yaml
prompt: You greet.
"""


def _stepper_replies() -> str:
    replies = [
        f"- content: Step {n}.\n  delay: 1\n  tool_calls:\n    - {{name: step, args: {{n: {n}}}}}\n"
        for n in range(1, STEPS + 1)
    ]
    return "".join(replies) + "- content: All steps taken.\n  delay: 1\n"


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("agents")
    (folder / "stepper.yaml").write_text(STEPPER, encoding="utf-8")
    (folder / "stepper.cassette.yaml").write_text(_stepper_replies(), encoding="utf-8")
    (folder / "steps.py").write_text(STEPS_PY, encoding="utf-8")
    (folder / "greeter.yaml").write_text(GREETER, encoding="utf-8")
    (folder / "greeter.cassette.yaml").write_text("- content: Hello there.\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def two_servers(
    agents: Path, postgres_server: str, redis_server: str
) -> Iterator[tuple[servers.Server, servers.Server]]:
    with servers.two_instances(agents, postgres_server, redis_server) as both:
        yield both


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _last_text(state: dict[str, Any]) -> str:
    content = state["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def _tool_results(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values.get("messages", []) if m["type"] == "tool"]


def _log(agents: Path) -> list[tuple[int, int]]:
    path = agents / "steps.log"
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(int(n), int(pid)) for n, pid in (line.split() for line in lines)]


def test_a_run_made_on_one_server_is_joined_on_the_other(
    two_servers: tuple[servers.Server, servers.Server],
) -> None:
    first, second = (sdk.get_sync_client(url=s.url) for s in two_servers)
    thread = first.threads.create()["thread_id"]
    run = first.runs.create(thread, "greeter", input=_ask("hi"))
    assert _last_text(second.runs.join(thread, run["run_id"])) == "Hello there."
    assert second.runs.get(thread, run["run_id"])["status"] == "success"
    assert first.threads.get(thread)["status"] == "idle"

    # A stream joined on the other server sees the run's events as they come.
    thread = second.threads.create()["thread_id"]
    run = second.runs.create(thread, "greeter", input=_ask("hi"), stream_mode="values")
    events = [part.event for part in first.runs.join_stream(thread, run["run_id"])]
    assert "values" in events
    assert _last_text(first.threads.get_state(thread)["values"]) == "Hello there."


def test_a_killed_servers_run_is_finished_by_the_other_without_repeating_a_step(
    two_servers: tuple[servers.Server, servers.Server], agents: Path
) -> None:
    client = sdk.get_sync_client(url=two_servers[0].url)
    thread = client.threads.create()["thread_id"]
    run = client.runs.create(thread, "stepper", input=_ask("take your steps"))

    # The kill lands in a model call (replies take a second), after step 2's result is in a
    # checkpoint: a tool call in flight at a crash may run again (the one thing allowed to),
    # a finished one must not.
    deadline = time.monotonic() + 120  # a wait limit for a loaded machine, not a measurement
    while "step 2 taken" not in _tool_results(client.threads.get_state(thread)["values"]):
        assert time.monotonic() < deadline, "the run did not take step 2"
        time.sleep(0.05)
    holder_pid = _log(agents)[-1][1]
    by_pid = {s.proc.pid: s for s in two_servers}
    assert holder_pid in by_pid, f"steps ran in {holder_pid}, not a server"
    holder = by_pid[holder_pid]
    survivor = next(s for s in two_servers if s is not holder)
    servers.kill(holder, group=False)
    assert not servers.group_alive(holder.proc.pid), "the killed server left a process behind"
    steps_before = len(_log(agents))
    assert steps_before < STEPS, "the run ended before the kill: make the replies slower"

    other = sdk.get_sync_client(url=survivor.url)
    state = other.runs.join(thread, run["run_id"])
    assert _last_text(state) == "All steps taken.", survivor.output()
    assert other.runs.get(thread, run["run_id"])["status"] == "success"

    log = _log(agents)
    assert [n for n, _ in log] == list(range(1, STEPS + 1)), f"steps as run: {log}"
    assert {pid for _, pid in log[steps_before:]} == {survivor.proc.pid}
    assert _tool_results(state) == [f"step {n} taken" for n in range(1, STEPS + 1)]
    ai_texts = [m["content"] for m in state["messages"] if m["type"] == "ai"]
    assert ai_texts == [f"Step {n}." for n in range(1, STEPS + 1)] + ["All steps taken."]
