"""Authoring cassettes and test files: `answers` where a run starts, cassettes shared by several
agents, test files checked as test files, approvals' keys and hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.validate import validate_file
from tests.spec.files import write_files as write

LEAD = """\
name: lead
model: replay:lead.cassette.yaml
subagents:
  - name: triager
    description: Classifies one ticket
    prompt: You classify.
"""


def lines(problems: list[object]) -> list[str]:
    return [str(p) for p in problems]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_answers_goes_on_a_subagent_runs_first_reply(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "lead.yaml": LEAD,
            "lead.cassette.yaml": """\
            agents:
              lead:
                - answers: ticket 1
                  tool_calls: [{name: task, args: {description: ticket 1, subagent_type: triager}}]
                - content: Done.
              triager:
                - answers: {id: t1}
                  tool_calls: [{name: ls, args: {path: /}}]
                - answers: {description: ticket 1}
                  content: x
                - answers: {description: ticket 2}
                  content: y
            """,
        },
    )
    assert lines(validate_file(tmp_path / "lead.yaml")) == [
        "lead.cassette.yaml:3:7: agents.lead[0].answers: only a subagent's replies answer a "
        "`task` call; remove `answers`",
        "lead.cassette.yaml:9:7: agents.triager[1].answers: `answers` names the call a run "
        "answers, so it goes on the run's first reply (the first of the list, or one after a "
        "reply without tool calls)",
    ]


def test_answers_must_name_a_call(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"lead.yaml": LEAD, "lead.cassette.yaml": "agents:\n  triager:\n    - answers: {}\n"},
    )
    assert lines(validate_file(tmp_path / "lead.cassette.yaml")) == [
        "lead.cassette.yaml:3:16: agents.triager[0].answers: name the call by `description` or `id`"
    ]


def test_todo_ids_are_kept_from_cassette_to_state_and_events(tmp_path: Path) -> None:
    from runner.events import TodosUpdate
    from runner.run import Session

    planned = [
        {"content": "Outline", "status": "in_progress", "id": "outline"},
        {"content": "Draft", "status": "pending", "id": "draft"},
    ]
    write(
        tmp_path,
        {
            "planner.yaml": "name: planner\nmodel: replay:planner.cassette.yaml\n",
            "planner.cassette.yaml": """\
            - tool_calls:
                - name: write_todos
                  args:
                    todos:
                      - {content: Outline, status: in_progress, id: outline}
                      - {content: Draft, status: pending, id: draft}
            - content: Planned.
            """,
        },
    )
    assert validate_file(tmp_path / "planner.yaml") == []
    with Session(tmp_path / "planner.yaml", db=tmp_path / "db") as session:
        result = session.run("plan")
        assert [e.todos for e in result.events if isinstance(e, TodosUpdate)] == [planned]
        assert session.values(result.thread_id)["todos"] == planned
