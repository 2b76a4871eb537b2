"""The example workflows in workflows/ are valid, and their cassettes hold a reply for every call
the steps make (each agent key with as many replies as its steps call it)."""

from __future__ import annotations

import os

import pytest
import yaml

from runner.load import load_spec, load_workflow
from runner.spec.workflow import WorkflowAgent, WorkflowSpec
from tests.conftest import ROOT

WORKFLOWS = ROOT / "workflows"
EXAMPLES = ["release-notes", "triage", "research"]

# How often each agent key answers in the recorded run (the cassette's reply count).
CALLS = {
    "release-notes": {"writer": 2, "reviewer": 2},  # one loop back: the first review rejects
    "triage": {"classifier": 3, "fixer": 2, "answerer": 1},  # 3 tickets: 2 bugs, 1 question
    "research": {"researcher": 1, "internals": 1, "risks": 1, "writer": 1},
}


def _spec(name: str) -> WorkflowSpec:
    return load_workflow(WORKFLOWS / f"{name}.yaml", require_inputs=False)


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_example_reads_as_a_workflow(name: str) -> None:
    spec = _spec(name)
    assert spec.name == name
    assert spec.workflow.output in spec.state
    for key, agent in spec.agent_specs().items():
        assert agent.name == key
        assert agent.description, f"{key}: an agent says what it does (inspect shows it)"
        assert agent.model is not None and agent.model.id == "openai:gpt-4.1-mini"
    assert all(not isinstance(a, WorkflowAgent) or a.model is None for a in spec.agents.values())


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_cassette_has_the_replies_of_every_agent_key(name: str) -> None:
    cassette = yaml.safe_load((WORKFLOWS / f"{name}.cassette.yaml").read_text())
    replies = {key: len(value) for key, value in cassette["agents"].items()}
    assert replies == CALLS[name]
    assert set(replies) == set(_spec(name).agent_specs())


def test_the_release_notes_writer_is_an_agent_file_of_its_own() -> None:
    spec = load_spec(WORKFLOWS / "agents" / "writer.yaml", env=dict(os.environ))
    assert spec.name == "writer"
    assert spec.response_format is None  # its answer is the draft's text (state.draft: string)
