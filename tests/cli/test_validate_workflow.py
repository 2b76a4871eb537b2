"""`agentctl validate` of workflow files: found in folders, checked (the workflow's own checks and
its agents'), cassettes checked against the agents that play them. One subprocess per test."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.spec.files import write_files as write

WORKFLOW = """
name: notes
state:
  draft: {type: string}
model: replay:notes.cassette.yaml
agents:
  writer: {prompt: You write.}
  reviewer: {ref: reviewer.yaml}
workflow:
  steps:
    - {id: draft, agent: writer, input: "Write.", output: draft}
    - {id: review, agent: reviewer, input: "{{ state.draft }}"}
"""

REVIEWER = """
name: critic
description: Reviews.
model: replay:notes.cassette.yaml
prompt: You review.
"""

CASSETTE = """
version: 1
agents:
  writer:
    - content: Draft.
      tool_calls: [{name: write_file, args: {file_path: /a.md, content: x}}]
    - content: Done.
  reviewer:
    - content: Fine.
"""


def test_a_folder_with_a_workflow_its_agent_and_cassette(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"notes.yaml": WORKFLOW, "reviewer.yaml": REVIEWER, "notes.cassette.yaml": CASSETTE},
    )
    result = run_cli("validate", ".", cwd=tmp_path)
    assert result.stderr == ""
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "ok: notes.cassette.yaml",
        "ok: notes.yaml",
        "ok: reviewer.yaml",
    ]


def test_workflow_problems_are_located_and_exit_2(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "notes.yaml": WORKFLOW.replace("agent: reviewer,", "agent: reveiwer,"),
            "reviewer.yaml": REVIEWER,
            "notes.cassette.yaml": CASSETTE.replace("name: write_file", "name: wirte_file").replace(
                "  reviewer:", "  reveiwer:"
            ),
        },
    )
    result = run_cli("validate", "notes.yaml", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert (
        "notes.yaml:11:27: workflow.steps[1].agent: no agent named 'reveiwer' in `agents:`; did "
        "you mean 'reviewer'?"
    ) in lines
    assert any(
        line.startswith("notes.cassette.yaml:5:27:") and "'wirte_file'" in line for line in lines
    ), lines
    assert any(
        line.startswith("notes.cassette.yaml:7:3: agents.reveiwer: no agent named 'reveiwer'")
        and "did you mean 'reviewer'?" in line
        for line in lines
    ), lines
    assert "Traceback" not in result.stderr
