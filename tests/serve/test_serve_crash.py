"""A server SIGKILLed right after a tool's side effect, before the call's result reaches Postgres:
the other server finishes the run without running the finished call again (the tool journal on
Aegra's checkpointer), as issue 17 promises for `agentctl run`: exactly once for a call that
returned, at least once for a call in flight.

Under Aegra's `sync` durability a step's checkpoint is saved before the next model call, and a
finished call of an unfinished step is saved as a pending write (which LangGraph does not run
again), so a kill during a model reply does not exercise the journal. The window it closes is
between a call returning and its result being saved, while the step is still running. The model
asks for effects 1 and 2 at once: effect 1 returns, and the agent's tool module (loaded in the
server process) holds the saving of its result; effect 2 has its side effect and stays in flight.
Each names the process in a rendezvous file, and the test kills that process. Without the
journal the survivor resumes from the checkpoint before the step and runs effect 1 again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve import servers
from tests.serve.test_serve_instances import _ask, _last_text, _tool_results

pytest.importorskip("aegra_api")
sdk = pytest.importorskip("langgraph_sdk")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.version_info < (3, 12), reason="Aegra needs Python 3.12 or newer"),
]

AGENT = """\
name: effector
description: Has effects
model: replay:effector.cassette.yaml
prompt: You have effects, one at a time.
tools:
  - import: ./effects.py:effect
"""
EFFECTS_PY = '''\
import asyncio
import os
import time
from pathlib import Path

from langchain_core.messages import ToolMessage
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

HERE = Path(__file__).parent
LOG = HERE / "effects.log"
ARMED = HERE / "armed"
HELD = HERE / "held"


BLOCK = HERE / "block"
BLOCKED = HERE / "blocked"


def effect(n: int) -> str:
    """Have effect number n."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"{n} {os.getpid()}\\n")
    if n == 2:  # once, when the test asks: stay in flight until killed
        try:
            BLOCK.unlink()
        except FileNotFoundError:
            pass
        else:
            BLOCKED.write_text(str(os.getpid()), encoding="utf-8")
            while True:
                time.sleep(1)
    return f"effect {n} done"


def _an_effect(value):
    values = value if isinstance(value, list) else [value]
    return any(isinstance(v, ToolMessage) and v.name == "effect" for v in values)


# Fault injection: once armed, the first saving of an `effect` result never happens; the test
# kills this process while it waits. The hook is installed once per process.
if not getattr(AsyncPostgresSaver.aput_writes, "held_by_test", False):
    _save = AsyncPostgresSaver.aput_writes

    async def aput_writes(self, config, writes, task_id, task_path=""):
        if any(_an_effect(value) for _, value in writes):
            try:
                ARMED.unlink()
            except FileNotFoundError:
                pass
            else:
                HELD.write_text(str(os.getpid()), encoding="utf-8")
                await asyncio.Event().wait()
        return await _save(self, config, writes, task_id, task_path)

    aput_writes.held_by_test = True
    AsyncPostgresSaver.aput_writes = aput_writes
'''


REPLIES = """\
- content: Effects 1 and 2.
  tool_calls:
    - {name: effect, args: {n: 1}}
    - {name: effect, args: {n: 2}}
- content: Effect 3.
  tool_calls:
    - {name: effect, args: {n: 3}}
- content: All effects had.
"""


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    (tmp_path / "effector.yaml").write_text(AGENT, encoding="utf-8")
    (tmp_path / "effector.cassette.yaml").write_text(REPLIES, encoding="utf-8")
    (tmp_path / "effects.py").write_text(EFFECTS_PY, encoding="utf-8")
    return tmp_path


@pytest.fixture
def two_servers(
    agents: Path, postgres_server: str, redis_server: str
) -> Iterator[tuple[servers.Server, servers.Server]]:
    with servers.two_instances(agents, postgres_server, redis_server) as both:
        yield both


def _log(agents: Path) -> list[tuple[int, int]]:
    path = agents / "effects.log"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [(int(n), int(pid)) for n, pid in (line.split() for line in lines)]


def _wait_for(path: Path, deadline: float) -> int:
    while not path.exists() or not path.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, f"no server wrote {path.name}"
        time.sleep(0.05)
    return int(path.read_text(encoding="utf-8"))


def test_a_call_that_returned_before_the_kill_does_not_run_again_on_the_survivor(
    two_servers: tuple[servers.Server, servers.Server], agents: Path
) -> None:
    (agents / "armed").touch()
    (agents / "block").touch()
    client = sdk.get_sync_client(url=two_servers[0].url)
    thread = client.threads.create()["thread_id"]
    run = client.runs.create(thread, "effector", input=_ask("have your effects"))

    deadline = time.monotonic() + 120  # a wait limit for a loaded machine, not a measurement
    holder_pid = _wait_for(agents / "held", deadline)
    assert _wait_for(agents / "blocked", deadline) == holder_pid
    by_pid = {s.proc.pid: s for s in two_servers}
    assert holder_pid in by_pid, f"the effects ran in {holder_pid}, not a server"
    holder = by_pid[holder_pid]
    survivor = next(s for s in two_servers if s is not holder)
    # Effect 1 returned, effect 2 had its side effect and is running; neither result is saved.
    assert sorted(_log(agents)) == [(1, holder_pid), (2, holder_pid)]
    assert _tool_results(client.threads.get_state(thread)["values"]) == []
    servers.kill(holder, group=False)
    assert not servers.group_alive(holder.proc.pid), "the killed server left a process behind"

    other = sdk.get_sync_client(url=survivor.url)
    state = other.runs.join(thread, run["run_id"])
    assert _last_text(state) == "All effects had.", survivor.output()
    assert other.runs.get(thread, run["run_id"])["status"] == "success"

    log = _log(agents)
    ran = {n: [pid for m, pid in log if m == n] for n in (1, 2, 3)}
    assert ran[1] == [holder_pid], f"effect 1 returned before the kill, yet ran again: {log}"
    assert ran[2] == [holder_pid, survivor.proc.pid], f"effect 2 was in flight: {log}"
    assert ran[3] == [survivor.proc.pid], log
    assert _tool_results(state) == [f"effect {n} done" for n in (1, 2, 3)]
