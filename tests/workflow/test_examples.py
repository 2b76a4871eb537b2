"""The example workflows in workflows/ are valid, and their cassettes hold a reply for every call
the steps make (each agent key with as many replies as its steps call it)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.spec.workflow import (
    AgentStep,
    MapStep,
    ParallelStep,
    WorkflowAgent,
    WorkflowSpec,
)
from tests.conftest import ROOT

WORKFLOWS = ROOT / "workflows"
EXAMPLES = ["release-notes", "triage", "research"]

# How often each agent key answers in the recorded run (the cassette's reply count).
CALLS = {
    "release-notes": {"writer": 2, "reviewer": 2},  # one loop back: the first review rejects
    "triage": {"classifier": 3, "fixer": 2, "answerer": 1},  # 3 tickets: 2 bugs, 1 question
    "research": {"researcher": 1, "internals": 1, "risks": 1, "writer": 1},
}

_DEFAULTED = re.compile(r"\$\{(\w+):-([^}]*)\}")


def _spec(name: str) -> WorkflowSpec:
    """The example as the spec models read it (`${VAR:-default}` given its default)."""
    text = _DEFAULTED.sub(lambda m: m.group(2), (WORKFLOWS / f"{name}.yaml").read_text())
    return WorkflowSpec.model_validate(yaml.safe_load(text))


def _agent_keys(spec: WorkflowSpec) -> set[str]:
    """The keys replies are filed under: names in `agents:`, ids of steps with an inline agent."""
    keys = set(spec.agents)

    def walk(steps: list[Any]) -> None:
        for step in steps:
            if isinstance(step, AgentStep) and not isinstance(step.agent, str):
                keys.add(step.id)
            if isinstance(step, ParallelStep):
                walk(step.parallel)
            if isinstance(step, MapStep):
                walk(step.map.steps)

    walk(spec.workflow.steps)
    return keys


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_example_reads_as_a_workflow(name: str) -> None:
    spec = _spec(name)
    assert spec.name == name
    assert spec.workflow.output in spec.state
    for entry in spec.agents.values():
        if isinstance(entry, WorkflowAgent):
            assert entry.description, "an inline agent says what it does (inspect shows it)"


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_cassette_has_the_replies_of_every_agent_key(name: str) -> None:
    cassette = yaml.safe_load((WORKFLOWS / f"{name}.cassette.yaml").read_text())
    replies = {key: len(value) for key, value in cassette["agents"].items()}
    assert replies == CALLS[name]
    assert set(replies) == _agent_keys(_spec(name))


def test_the_release_notes_writer_is_an_agent_file_of_its_own(tmp_path: Path) -> None:
    from runner.load.loader import load_spec

    spec = load_spec(WORKFLOWS / "agents" / "writer.yaml", env=dict(os.environ))
    assert spec.name == "writer"
    assert spec.response_format is None  # its answer is the draft's text (state.draft: string)
