"""A workflow run through `Session` on a thread database: step events, nested events tagged with
their step, approvals answered like an agent's, the output as the final answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.events import (
    Final,
    Interrupt,
    StepEnd,
    StepStart,
    TextDelta,
    ToolCall,
    ToolResult,
)
from runner.run import Decision, Session

WORKFLOW = """
version: 1
name: notes
inputs:
  version: {type: string, required: true}
state:
  draft: {type: string}
  review: {type: object}
model: openai:gpt-4.1
agents:
  writer:
    prompt: You write release notes.
  reviewer:
    prompt: You review.
    response_format:
      type: object
      title: Review
      properties: {approved: {type: boolean}, notes: {type: string}}
tools:
  - import: tests.workflow.wf_tools:publish
workflow:
  steps:
    - id: draft
      agent: writer
      input: "Notes for {{ vars.version }}. {{ state.review.notes }}"
      output: draft
    - id: review
      agent: reviewer
      input: "{{ state.draft }}"
      output: review
    - id: again
      loop: {to: draft, while: "not state.review.approved", max: 2}
    - id: approve
      approval: {question: "Publish?", field: draft}
    - id: publish
      tool: publish
      args: {body: "{{ state.draft }}"}
  output: draft
"""

REPLIES = {
    "writer": [
        {"content": "", "tool_calls": [{"name": "write_todos", "args": {"todos": []}}]},
        {"content": "Draft one."},
        {"content": "Draft two."},
    ],
    "reviewer": [
        {"tool_calls": [{"name": "Review", "args": {"approved": False, "notes": "Shorter."}}]},
        {"tool_calls": [{"name": "Review", "args": {"approved": True, "notes": ""}}]},
    ],
}


def files(tmp_path: Path) -> tuple[Path, str]:
    spec = tmp_path / "notes.yaml"
    spec.write_text(WORKFLOW)
    tape = tmp_path / "notes.cassette.yaml"
    tape.write_text(yaml.safe_dump({"version": 1, "agents": REPLIES}))
    return spec, f"replay:{tape}"


def test_a_workflow_runs_on_a_thread_with_step_events_and_an_approval(
    tmp_path: Path, log: Path
) -> None:
    from tests.workflow.wf_tools import calls

    spec, model = files(tmp_path)
    with Session(spec, model=model, vars={"version": "2.0"}, db=tmp_path / "t.db") as session:
        first = session.run()
        assert isinstance(first.interrupt, Interrupt)
        [action] = first.interrupt.actions
        assert (action.name, action.args) == ("approve", {"draft": "Draft two."})
        starts = [e.step for e in first.events if isinstance(e, StepStart)]
        assert starts == ["draft", "review", "again", "draft", "review", "again", "approve"]
        ends = [(e.step, e.status) for e in first.events if isinstance(e, StepEnd)]
        assert ends[-1] == ("approve", "waiting")
        assert ends[0] == ("draft", "done")
        texts = [e for e in first.events if isinstance(e, TextDelta)]
        assert {(e.agent, e.step) for e in texts} == {("writer", "draft")}
        todo = next(e for e in first.events if isinstance(e, ToolCall))
        assert (todo.agent, todo.step, todo.name) == ("writer", "draft", "write_todos")
        assert calls(log) == []

        second = session.run(thread_id=first.thread_id, decisions=[Decision("approve")])
        assert isinstance(second.final, Final)
        assert second.final.content == "Draft two."
        assert [e.step for e in second.events if isinstance(e, StepStart)] == [
            "approve",
            "publish",
        ]
        assert calls(log) == [{"tool": "publish", "body": "Draft two."}]
        line = next(e for e in second.events if isinstance(e, StepEnd) and e.step == "publish")
        data: dict[str, Any] = line.to_dict()
        assert data["type"] == "step_end" and data["output"] == "published 10 characters"


BUDGET = """
version: 1
name: budget
model: openai:gpt-4.1
limits: {tokens: 100}
state:
  a: {type: string}
  b: {type: string}
agents:
  one: {prompt: One.}
  two: {prompt: Two.}
workflow:
  steps:
    - {id: first, agent: one, input: go, output: a}
    - {id: second, agent: two, input: go, output: b}
"""


def test_the_workflows_token_budget_counts_every_steps_agents(tmp_path: Path) -> None:
    spec = tmp_path / "budget.yaml"
    spec.write_text(BUDGET)
    tape = tmp_path / "budget.cassette.yaml"
    usage = {"input_tokens": 90, "output_tokens": 20}  # the first step's call crosses the line
    replies = {"one": [{"content": "A", "usage": usage}], "two": [{"content": "B", "usage": usage}]}
    tape.write_text(yaml.safe_dump({"version": 1, "agents": replies}))
    with Session(spec, model=f"replay:{tape}", db=tmp_path / "t.db") as session:
        result = session.run()
    assert result.error is not None
    assert "budget of 100 tokens reached (110 used)" in result.error.message
    assert [e.step for e in result.events if isinstance(e, StepEnd)] == ["first", "second"]
    assert [e.status for e in result.events if isinstance(e, StepEnd)] == ["done", "failed"]


CALLS = BUDGET.replace("limits: {tokens: 100}", "limits: {LIMITS}")
TODO = {"content": "", "tool_calls": [{"name": "write_todos", "args": {"todos": []}}]}


def _run_calls(tmp_path: Path, limits: str, replies: dict[str, Any]) -> Any:
    tmp_path.mkdir(exist_ok=True)
    spec = tmp_path / "calls.yaml"
    spec.write_text(CALLS.replace("{LIMITS}", limits))
    tape = tmp_path / "calls.cassette.yaml"
    tape.write_text(yaml.safe_dump({"version": 1, "agents": replies}))
    with Session(spec, model=f"replay:{tape}", db=tmp_path / "t.db") as session:
        return session.run()


def test_the_workflows_model_call_limit_counts_every_steps_agents(tmp_path: Path) -> None:
    # each agent makes 2 calls: within a limit of 3 for each agent's run, not for the workflow
    replies = {"one": [TODO, {"content": "A"}], "two": [TODO, {"content": "B"}]}
    result = _run_calls(tmp_path, "{model_calls: 3}", replies)
    assert result.error is not None
    assert "limit of 3 model calls reached (3 made)" in result.error.message
    assert "calls.yaml:5:" in result.error.message  # located at the workflow's limit
    ends = [(e.step, e.status) for e in result.events if isinstance(e, StepEnd)]
    assert ends == [("first", "done"), ("second", "failed")]
    assert _run_calls(tmp_path / "more", "{model_calls: 4}", replies).final is not None


def test_the_workflows_tool_call_limit_counts_every_steps_agents(tmp_path: Path) -> None:
    replies = {"one": [TODO, {"content": "A"}], "two": [TODO, {"content": "B"}]}
    result = _run_calls(tmp_path, "{tool_calls: 1}", replies)
    assert result.final is not None and result.final.content == "B"  # ran to its end
    results = [e for e in result.events if isinstance(e, ToolResult)]
    assert [(e.step, e.status) for e in results] == [("first", "success"), ("second", "error")]
    assert "limit of 1 tool calls reached; this call was not made" in results[1].content
    by_tool = _run_calls(tmp_path / "by_tool", "{tool_calls: {write_todos: 2}}", replies)
    statuses = [e.status for e in by_tool.events if isinstance(e, ToolResult)]
    assert statuses == ["success", "success"]


def test_a_fork_at_a_step_goes_on_after_it_with_an_edited_state_field(
    tmp_path: Path, log: Path
) -> None:
    from tests.conftest import run_cli
    from tests.workflow.wf_tools import calls

    spec, model = files(tmp_path)
    with Session(spec, model=model, vars={"version": "2.0"}, db=tmp_path / "agentctl.db") as s:
        first = s.run()
        s.run(thread_id=first.thread_id, decisions=[Decision("approve")])
    assert calls(log) == [{"tool": "publish", "body": "Draft two."}]
    env = {"WF_LOG": str(log), "PYTHONPATH": str(Path(__file__).parents[2])}
    forked = run_cli(
        "threads",
        "fork",
        first.thread_id,
        "--at",
        "approve",
        "--set",
        "draft=Edited notes.",
        cwd=tmp_path,
        env=env,
    )
    assert forked.returncode == 0, forked.stderr
    new = forked.stdout.strip()
    ran = run_cli(
        "run",
        str(spec),
        "--thread",
        new,
        "--model",
        model,
        "--output",
        "jsonl",
        cwd=tmp_path,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    assert '"step": "publish"' in ran.stdout and '"step": "draft"' not in ran.stdout
    assert calls(log)[-1] == {"tool": "publish", "body": "Edited notes."}
    missing = run_cli("threads", "fork", first.thread_id, "--at", "nope", cwd=tmp_path, env=env)
    assert missing.returncode != 0


def test_inspect_shows_the_steps_as_text_and_as_a_mermaid_flowchart(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    spec, _ = files(tmp_path)
    text = run_cli("inspect", str(spec), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "3. again    loop back to draft while not state.review.approved (at most 2 times)" in (
        text.stdout
    )
    assert "5. publish  tool publish" in text.stdout
    drawn = run_cli("inspect", str(spec), "--mermaid", cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    lines = drawn.stdout.splitlines()
    assert lines[0] == "flowchart TD"
    assert '  again -->|"not state.review.approved (max 2)"| draft' in lines
    assert '  approve -->|"approve"| publish' in lines
    assert "  publish --> finish" in lines


def test_a_batch_runs_the_workflow_once_per_line_with_its_vars(tmp_path: Path, log: Path) -> None:
    import json

    from tests.conftest import run_cli
    from tests.workflow.wf_tools import calls

    spec, model = files(tmp_path)
    lines = tmp_path / "in.jsonl"
    lines.write_text(
        '{"vars": {"version": "1"}, "id": "a"}\n{"vars": {"version": "2"}, "id": "b"}\n'
    )
    env = {"WF_LOG": str(log), "PYTHONPATH": str(Path(__file__).parents[2])}
    done = run_cli(
        "run",
        str(spec),
        "--batch",
        str(lines),
        "--model",
        model,
        "--auto-approve",
        "--var",
        "version=0",
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["id"], r["answer"], r["error"]) for r in results] == [
        ("a", "Draft two.", None),
        ("b", "Draft two.", None),
    ]
    assert len(calls(log)) == 2


def test_agentctl_test_checks_which_steps_ran_in_which_order_and_the_state(
    tmp_path: Path, log: Path
) -> None:
    from tests.conftest import run_cli

    spec, model = files(tmp_path)
    cases = {
        "version": 1,
        "agent": spec.name,
        "cases": [
            {
                "name": "approved",
                "vars": {"version": "2"},
                "model": model,
                "turns": [{"decisions": ["approve"]}],
                "expect": {
                    "steps": {
                        "ran": ["draft", "review", "draft", "review", "approve", "publish"],
                        "not_ran": [],
                        "state": {"draft": "Draft two."},
                    },
                    "final": {"equals": "Draft two."},
                },
            },
            {
                "name": "wrong",
                "vars": {"version": "2"},
                "model": model,
                "expect": {"steps": {"ran": ["publish"], "state": {"draft": "Other"}}},
            },
        ],
    }
    test_file = tmp_path / "notes.test.yaml"
    test_file.write_text(yaml.safe_dump(cases))
    env = {"WF_LOG": str(log), "PYTHONPATH": str(Path(__file__).parents[2])}
    done = run_cli("test", str(test_file), cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert "approved" in out and "wrong" in out
    assert "expect.steps.ran" in out and "expect.steps.state.draft" in out
    assert "1 passed" in out and "1 failed" in out


def test_a_workflow_session_takes_options_or_keywords_as_an_agents_does(tmp_path: Path) -> None:
    """`options=` and the keywords are one or the other, and a `keep_checkpoints` below 1 is
    refused, for a workflow as for an agent (before anything is built or opened)."""
    from runner.errors import RunError
    from runner.run import RunOptions

    spec = tmp_path / "wf.yaml"
    spec.write_text(
        "name: wf\ntools: [{import: tests.workflow.wf_tools:publish}]\n"
        "workflow: {steps: [{id: send, tool: publish, args: {body: hi}}]}\n"
    )
    with pytest.raises(TypeError, match="not both"):
        Session(spec, options=RunOptions(db=tmp_path / "db"), wait=1.0)
    with pytest.raises(RunError, match="keep at least 1"):
        Session(spec, db=tmp_path / "db", keep_checkpoints=0)
    assert not (tmp_path / "db").exists()
