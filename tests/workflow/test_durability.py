"""A workflow run that fails mid-way (a step raises, as a crash would stop it) and is resumed on
its thread: no finished step runs again, no state is lost, a map's finished items are kept."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.workflow._specs import built, config
from tests.workflow.wf_tools import calls

STEPS = """
name: crashy
model: openai:gpt-4.1
state:
  draft: {type: string}
  first: {type: string}
  second: {type: string}
  items: {type: list}
  done: {type: list}
agents:
  writer: {prompt: You write.}
tools:
  - import: tests.workflow.wf_tools:publish
  - import: tests.workflow.wf_tools:crash_after
workflow:
  steps:
    - {id: draft, agent: writer, input: "Write", output: draft}
    - {id: first, tool: publish, args: {body: "{{ state.draft }}"}, output: first}
    - {id: risky, tool: crash_after, args: {text: "{{ state.first }}"}, output: second}
    - id: each
      map:
        over: state.items
        concurrency: 1
        steps:
          - {id: one, tool: crash_after, args: {text: "{{ item }}"}, output: r}
      output: done
"""


def test_resuming_after_a_failed_step_runs_only_that_step_again(tmp_path: Path, log: Path) -> None:
    crash = tmp_path / "crash"
    crash.touch()
    wf = built(tmp_path, STEPS, {"writer": [{"content": "the draft"}]})
    try:
        wf.graph.invoke({"vars": {}, "state": {"items": []}}, config())
    except RuntimeError as exc:
        assert "simulated crash" in str(exc)
    else:
        raise AssertionError("the risky step should have failed")
    assert [c["tool"] for c in calls(log)] == ["publish", "crash_after"]
    crash.unlink()
    # a new build (a new process would make one) on the same database resumes the thread
    again = built(tmp_path, STEPS, {"writer": [{"content": "the draft"}]})
    values = again.graph.invoke(None, config())
    assert [c["tool"] for c in calls(log)] == ["publish", "crash_after", "crash_after"]
    assert values["state"]["draft"] == "the draft"
    assert values["state"]["first"] == "published 9 characters"
    assert values["state"]["second"] == "ok"
    assert values["trail"] == ["draft", "first", "risky", "each"]


def test_a_maps_finished_items_are_not_run_again(tmp_path: Path, log: Path) -> None:
    crash = tmp_path / "crash"
    crash.write_text("c")
    items = ["a", "b", "c", "d"]
    wf = built(tmp_path, STEPS, {"writer": [{"content": "d"}]})
    try:
        wf.graph.invoke({"vars": {}, "state": {"items": items}}, config())
    except RuntimeError as exc:
        assert "simulated crash" in str(exc)
    else:
        raise AssertionError("item c should have failed")
    before = Counter(c["text"] for c in calls(log) if c["tool"] == "crash_after")
    assert before["c"] == 1
    crash.unlink()
    again = built(tmp_path, STEPS, {"writer": [{"content": "d"}]})
    values = again.graph.invoke(None, config())
    after = Counter(c["text"] for c in calls(log) if c["tool"] == "crash_after")
    assert values["state"]["done"] == [{"r": "ok"}] * 4
    finished = [t for t in items if t != "c" and before[t] == 1]
    assert finished, "no item finished before the crash: the test proves nothing"
    for text in finished:
        assert after[text] == 1, f"item {text} ran again"
    assert after["c"] == 2
    assert [c["tool"] for c in calls(log)].count("publish") == 1
