"""`agentctl run` on a workflow killed with SIGKILL while a map's item is in flight (the others
finished), then resumed with `--thread ID`: no finished step or item runs again, and the run
ends with every result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

from tests.conftest import ROOT
from tests.workflow.wf_tools import calls

WORKFLOW = """
name: killed
model: openai:gpt-4.1
state:
  items: {type: list, default: [a, b, c, d]}
  draft: {type: string}
  sent: {type: string}
  passed: {type: list}
agents:
  writer: {prompt: You write.}
tools:
  - import: tests.workflow.wf_tools:publish
  - import: tests.workflow.wf_tools:gate
workflow:
  steps:
    - {id: draft, agent: writer, input: "Write", output: draft}
    - {id: send, tool: publish, args: {body: "{{ state.draft }}"}, output: sent}
    - id: each
      map:
        over: state.items
        concurrency: 4
        steps:
          - {id: pass, tool: gate, args: {text: "{{ item }}"}, output: note}
      output: passed
    - {id: last, tool: publish, args: {body: "{{ state.passed | length }} passed"}}
  output: passed
"""

PATIENCE = 120.0


def test_a_killed_workflow_resumes_without_running_finished_steps_again(tmp_path: Path) -> None:
    spec = tmp_path / "killed.yaml"
    spec.write_text(WORKFLOW)
    tape = tmp_path / "killed.cassette.yaml"
    tape.write_text(yaml.safe_dump({"version": 1, "agents": {"writer": [{"content": "d1"}]}}))
    log = tmp_path / "calls.log"
    log.touch()
    env = {
        **os.environ,
        "AGENTCTL_HOME": str(tmp_path),
        "WF_LOG": str(log),
        "WF_GATE": f"c={tmp_path / 'open'}",
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-m", "runner", "run", str(spec), "--model", f"replay:{tape}"]
    child = subprocess.Popen(
        [*command, "--output", "jsonl"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        start = json.loads(child.stdout.readline())
        deadline = time.monotonic() + PATIENCE
        # every item at once: c waits at the gate while a, b and d finish (in any order)
        while not all({"tool": "gate", "text": x} in calls(log) for x in "abcd"):
            assert child.poll() is None, "the run ended before it reached the gate"
            assert time.monotonic() < deadline, "the run never reached the gate"
            time.sleep(0.02)
        time.sleep(2.0)  # a, b and d returned at once: their results are saved by now
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
    before = Counter(c.get("text") or c["tool"] for c in calls(log))
    (tmp_path / "open").touch()
    done = subprocess.run(
        [*command, "--thread", start["thread_id"], "--output", "jsonl"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["type"] == "final"
    assert final["structured_response"] == [{"note": f"passed {x}"} for x in "abcd"]
    after = Counter(c.get("text") or c["tool"] for c in calls(log))
    finished = [x for x in "abd" if before[x]]
    assert finished, "no item finished before the kill: the test proves nothing"
    for item in finished:
        assert after[item] == 1, f"item {item} ran again"
    assert after["c"] == 2  # in flight when killed: it runs again
    bodies = [c["body"] for c in calls(log) if c["tool"] == "publish"]
    assert bodies == ["d1", "4 passed"]  # `send` ran once, before the kill
    steps = [json.loads(line).get("step") for line in done.stdout.splitlines()]
    assert "draft" not in steps and "send" not in steps
