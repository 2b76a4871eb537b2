"""`agentctl run` on a workflow SIGKILLed at random moments, resumed with `--thread ID` after
each kill until it ends: no finished step runs again, a side effect runs again only when a kill
caught it in flight, and the run ends with every result (no state lost).

The kill moments are random on each run of the suite (the seed is in every assertion message),
so the suite tries more of them over time."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT
from tests.workflow.wf_tools import calls

ITEMS = "abcdefghijkl"
WORKFLOW = f"""
name: chaos
model: openai:gpt-4.1
state:
  items: {{type: list, default: {list(ITEMS)}}}
  draft: {{type: string}}
  sent: {{type: string}}
  noted: {{type: list}}
agents:
  writer: {{prompt: You write.}}
tools:
  - import: tests.workflow.wf_tools:publish
  - import: tests.workflow.wf_tools:slow
workflow:
  steps:
    - {{id: draft, agent: writer, input: "Write", output: draft}}
    - {{id: send, tool: publish, args: {{body: "{{{{ state.draft }}}}"}}, output: sent}}
    - id: each
      map:
        over: state.items
        concurrency: 2
        steps:
          - {{id: note, tool: slow, args: {{text: "{{{{ item }}}}"}}, output: note}}
      output: noted
    - {{id: last, tool: publish, args: {{body: "{{{{ state.noted | length }}}} noted"}}}}
  output: noted
"""
ORDER = ["draft", "send", "each", "last"]
KILLS = 6
PATIENCE = 120.0


def _attempt(
    command: list[str], env: dict[str, str], cwd: Path, kill_after: float | None
) -> tuple[str, str, int]:
    """One process of the run: killed `kill_after` seconds after its run starts (its `start`
    line; None: left to end); what it printed (stdout, stderr) and its exit status."""
    child = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        first = ""
        if kill_after is not None:
            assert child.stdout is not None
            first = child.stdout.readline()  # the run has started (or the process ended)
            time.sleep(kill_after)
            child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=PATIENCE)
        return first + out, err, child.returncode
    finally:
        if child.poll() is None:
            child.kill()


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_killed_at_random_moments_a_workflow_loses_nothing_and_redoes_no_finished_step(
    tmp_path: Path,
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    why = f"(seed {seed})"
    spec = tmp_path / "chaos.yaml"
    spec.write_text(WORKFLOW)
    tape = tmp_path / "chaos.cassette.yaml"
    reply = {"content": "d1", "delay": 0.3}
    tape.write_text(yaml.safe_dump({"version": 1, "agents": {"writer": [reply]}}))
    log = tmp_path / "calls.log"
    log.touch()
    env = {**os.environ, "AGENTCTL_HOME": str(tmp_path), "WF_LOG": str(log)}
    env["PYTHONPATH"] = str(ROOT)
    base = [sys.executable, "-m", "runner", "run", str(spec), "--model", f"replay:{tape}"]
    base += ["--output", "jsonl"]

    thread: str | None = None
    started: list[set[str]] = []  # the top-level steps each process started
    kills = 0
    final: dict[str, Any] | None = None
    for attempt in range(KILLS + 1):
        kill_after = rng.uniform(0.0, 0.8) if attempt < KILLS else None
        command = base if thread is None else [*base, "--thread", thread]
        out, err, status = _attempt(command, env, tmp_path, kill_after)
        assert status in (0, -signal.SIGKILL), f"exit {status}: {err} {why}"
        events = _events(out)
        if thread is None:
            thread = next((e["thread_id"] for e in events if e["type"] == "start"), None)
            assert thread is not None, f"no start line: {out} {err} {why}"
        started.append({e["step"] for e in events if e["type"] == "step_start" and "step" in e})
        ends = [e for e in events if e["type"] in ("final", "error", "interrupt")]
        if ends and ends[-1]["type"] == "final":
            final = ends[-1]
            break
        assert not ends, f"a killed process ended its run with {ends} {why}"
        kills += 1
    assert final is not None, f"the run did not end after {KILLS} kills {why}"
    assert kills >= 1 or len(started) == 1, why
    print(f"kills {kills}, steps started by each process {started} {why}")
    assert final["structured_response"] == [{"note": f"noted {x}"} for x in ITEMS], why

    # No finished step ran again: once a later step started, the steps before it had been
    # saved, and no later process started them.
    for index, steps in enumerate(started):
        for position, step in enumerate(ORDER[1:], start=1):
            if step in steps:
                for earlier in ORDER[:position]:
                    for later in started[index + 1 :]:
                        assert earlier not in later, f"{earlier} ran again {started} {why}"

    # A side effect ran again only when a kill caught it in flight: at most once per kill, and
    # at most two items at once (the map's concurrency).
    logged = calls(log)
    notes = Counter(c["text"] for c in logged if c["tool"] == "slow")
    assert set(notes) == set(ITEMS), why
    assert sum(notes.values()) - len(ITEMS) <= 2 * kills, f"{notes} after {kills} kills {why}"
    bodies = [c["body"] for c in logged if c["tool"] == "publish"]
    assert bodies.count("d1") in range(1, kills + 2), f"{bodies} {why}"
    assert bodies[-1] == f"{len(ITEMS)} noted", f"{bodies} {why}"
