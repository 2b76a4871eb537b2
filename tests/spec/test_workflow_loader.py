"""`load_workflow` / `load_any`: located problems, ${VAR}, includes, and the agents of the steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.load import load_any, load_spec, load_workflow
from runner.spec import AgentSpec
from runner.spec.workflow import AgentStep, ToolStep, WorkflowAgentRef, WorkflowSpec
from tests.spec.files import write_files as write

WRITER = """
name: writer
description: Writes release notes.
model: openai:gpt-4.1-mini
prompt: You write about {{ vars.version }}.
inputs:
  version: {type: string, required: true}
"""

WORKFLOW = """
name: notes
inputs:
  version: {type: string, required: true}
state:
  draft: {type: string}
model: anthropic:claude-sonnet-4-5
agents:
  writer: {ref: agents/writer.yaml}
  reviewer:
    prompt: You review notes for {{ vars.version }}.
tools:
  - http: {name: publish, description: Publish, url: "http://127.0.0.1:8080/notes"}
workflow:
  steps:
    - id: draft
      agent: writer
      input: "Write {{ vars.version }}. {{ state.draft }}"
      output: draft
    - id: polish
      agent: {prompt: "You polish.", model: openai:gpt-4.1}
      input: "{{ state.draft }}"
      output: draft
    - id: publish
      tool: publish
      args: {body: "{{ state.draft }}"}
"""


def problems(path: Path, **kwargs: object) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_workflow(path, **kwargs)  # type: ignore[arg-type]
    return [str(p) for p in info.value.problems]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_workflow_loads_with_its_agents(tmp_path: Path) -> None:
    path = write(tmp_path, {"wf.yaml": WORKFLOW, "agents/writer.yaml": WRITER})
    spec = load_workflow(path, vars={"version": "1.2"})
    assert isinstance(spec, WorkflowSpec)
    agents = spec.agent_specs()
    assert sorted(agents) == ["polish", "reviewer", "writer"]
    assert agents["writer"].prompt == "You write about 1.2."
    assert agents["writer"].source == str((tmp_path / "agents/writer.yaml").resolve())
    reviewer = agents["reviewer"]
    assert reviewer.name == "reviewer"
    assert reviewer.prompt == "You review notes for 1.2."
    assert reviewer.model is not None and reviewer.model.id == "anthropic:claude-sonnet-4-5"
    assert "version" in reviewer.inputs
    polish = agents["polish"]
    assert polish.model is not None and polish.model.id == "openai:gpt-4.1"
    # templates and the ref stay raw / resolved as an agent file's are
    draft = spec.workflow.steps[0]
    assert isinstance(draft, AgentStep)
    assert draft.input == "Write {{ vars.version }}. {{ state.draft }}"
    writer_entry = spec.agents["writer"]
    assert isinstance(writer_entry, WorkflowAgentRef)
    assert Path(writer_entry.ref).is_absolute()
    publish = spec.workflow.steps[2]
    assert isinstance(publish, ToolStep) and publish.args == {"body": "{{ state.draft }}"}


def test_load_any_tells_workflows_from_agents(tmp_path: Path) -> None:
    write(tmp_path, {"wf.yaml": WORKFLOW, "agents/writer.yaml": WRITER})
    assert isinstance(load_any(tmp_path / "wf.yaml", vars={"version": "1"}), WorkflowSpec)
    assert isinstance(load_any(tmp_path / "agents/writer.yaml", vars={"version": "1"}), AgentSpec)


def test_load_spec_of_a_workflow_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, {"wf.yaml": WORKFLOW, "agents/writer.yaml": WRITER})
    with pytest.raises(SpecError) as info:
        load_spec(path, require_inputs=False)
    assert [str(p) for p in info.value.problems] == [
        "wf.yaml:13:1: workflow: a workflow file (it has `workflow:`), not an agent file; "
        "load it with `load_workflow`"
    ]


def test_schema_problems_are_located_with_did_you_mean(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "wf.yaml": """
            name: wf
            workflow:
              steps:
                - id: one
                  agent: {prompt: hi, model: openai:gpt-4.1}
                  inptu: "x"
            """
        },
    )
    found = problems(path)
    assert len(found) == 1
    assert found[0].startswith("wf.yaml:6:7: workflow.steps[0].inptu: unknown key")
    assert "did you mean 'input'" in found[0]


def test_inline_agent_problems_are_located_in_the_workflow(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "wf.yaml": """
            name: wf
            agents:
              helper:
                model: openai:gpt-4.1
                prompt: "Hello {{ vars.nope }}"
                subagents:
                  - {nmae: x}
            workflow:
              steps:
                - {id: one, agent: helper, input: hi}
            """
        },
    )
    found = problems(path)
    assert found[0].startswith("wf.yaml:7:10: agents.helper.subagents[0].nmae: unknown key")
    (tmp_path / "wf.yaml").write_text(
        (tmp_path / "wf.yaml").read_text().replace("- {nmae: x}", "- {name: x, description: y}")
    )
    found = problems(path)
    assert len(found) == 1 and found[0].startswith("wf.yaml:5:13: agents.helper.prompt:"), found
    assert "nope" in found[0]


def test_ref_agent_problems_are_located_in_their_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "wf.yaml": """
            name: wf
            agents:
              a: {ref: a.yaml}
              b: {ref: missing.yaml}
            workflow:
              steps:
                - {id: one, agent: a, input: hi}
            """,
            "a.yaml": """
            name: a
            model: openai:gpt-4.1
            promt: hi
            """,
        },
    )
    found = problems(path)
    assert any(f.startswith("a.yaml:3:1: promt: unknown key") for f in found), found
    assert "wf.yaml:4:12: agents.b.ref: file not found: missing.yaml" in found


def test_env_includes_and_unused_vars(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "wf.yaml": """
            name: wf
            include: [_base.yaml]
            model: ${PROVIDER}:gpt-4.1
            workflow:
              steps:
                - {id: one, agent: helper, input: hi}
            """,
            "_base.yaml": """
            agents:
              helper: {prompt: "Help with {{ vars.topic }}"}
            vars:
              topic: databases
            """,
        },
    )
    spec = load_workflow(path, env={"PROVIDER": "openai"})
    helper = spec.agent_specs()["helper"]
    assert helper.prompt == "Help with databases"
    assert helper.model is not None and helper.model.id == "openai:gpt-4.1"
    with pytest.raises(SpecError) as info:
        load_workflow(path, env={"PROVIDER": "openai"}, vars={"topik": "x"})
    assert "did you mean 'topic'" in str(info.value)


def test_required_inputs(tmp_path: Path) -> None:
    path = write(tmp_path, {"wf.yaml": WORKFLOW, "agents/writer.yaml": WRITER})
    assert "wf.yaml:3:12: inputs.version: required input 'version' has no value" in "\n".join(
        problems(path)
    )
    assert load_workflow(path, require_inputs=False).name == "notes"


def test_a_loop_without_a_bound_and_a_misspelt_kind_of_step(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "wf.yaml": """
            name: wf
            workflow:
              steps:
                - {id: a, agent: {model: openai:gpt-4.1, prompt: x}, input: x}
                - id: again
                  loop: {to: a, while: "true"}
                - id: b
                  rout: [{to: a}]
            """
        },
    )
    assert problems(path) == [
        "wf.yaml:6:13: workflow.steps[1].loop.max: missing required key: a loop needs a bound, "
        "the most times it goes back (e.g. `max: 3`)",
        "wf.yaml:7:7: workflow.steps[2]: a step needs `id:` and one of `agent:`, `tool:`, "
        "`approval:`, `ask:`, `route:`, `choose:`, `loop:`, `parallel:` or `map:`; `rout:` is no "
        "kind of step: did you mean 'route'?",
    ]
