"""`runner.check.workflow`: each class of workflow error, located on its line, with "did you mean"."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.check.workflow import load_checked_workflow, workflow_problems
from runner.errors import SpecError
from runner.load import load_workflow
from tests.spec.files import write_files

HEAD = """
# the workflow of the checks
name: wf
vars: {topic: databases}
state:
  draft: {type: string}
  count: {type: integer}
  review: {type: object}
  tickets: {type: list}
  labels: {type: list}
model: openai:gpt-4.1
agents:
  writer: {prompt: You write.}
  judge:
    prompt: You judge.
    response_format: {type: object, properties: {ok: {type: boolean}, notes: {type: string}}}
tools:
  - http: {name: publish, description: Publish, url: "http://127.0.0.1:8080/notes"}
workflow:
  steps:
"""
"""Lines 1-19; the first step starts on line 20."""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def check(tmp_path: Path, steps: str) -> list[str]:
    path = write_files(tmp_path, {"wf.yaml": HEAD.lstrip("\n") + _indent(steps)})
    return [str(p) for p in workflow_problems(load_workflow(path))]


def _indent(steps: str) -> str:
    import textwrap

    return textwrap.indent(textwrap.dedent(steps).strip("\n") + "\n", "    ")


def test_a_good_workflow_has_no_problems(tmp_path: Path) -> None:
    assert (
        check(
            tmp_path,
            """
            - {id: draft, agent: writer, input: "About {{ vars.topic }}: {{ state.draft }}", output: draft}
            - {id: review, agent: judge, input: "{{ state.draft }}", output: review}
            - id: again
              loop: {to: draft, while: "not state.review.ok", max: 3}
            - id: pick
              route:
                - {when: "state.count > 2", to: publish}
                - {to: each}
            - id: each
              map:
                over: state.tickets
                steps:
                  - {id: label, agent: judge, input: "{{ item }} {{ index }}", output: label}
                  - {id: note, agent: writer, input: "{{ result.label.notes }}", output: note}
              output: labels
            - {id: publish, tool: publish, args: {body: "{{ state.draft }}"}}
            """,
        )
        == []
    )


def test_unknown_step_ids_in_jumps(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - {id: draft, agent: writer, input: x, next: pubish}
        - id: pick
          route: [{when: "true", to: drfat}]
        - id: choose
          choose: {agent: writer, input: x, options: {publsh: a, end: b}}
        - id: again
          loop: {to: draftt, while: "true", max: 2}
        - id: ok
          approval: {on_reject: drat}
        - {id: publish, tool: publish}
        """,
    )
    assert (
        "wf.yaml:20:50: workflow.steps[0].next: no step 'pubish' in the workflow's steps; did you "
        "mean 'publish'? (a jump names a step id of the same list, or `end`; the steps: draft, "
        "pick, choose, again, ok, publish)"
    ) in found
    assert any(
        f.startswith("wf.yaml:22:34: workflow.steps[1].route[0].to: no step 'drfat'") for f in found
    )
    assert any(
        f.startswith("wf.yaml:24:51: workflow.steps[2].choose.options.publsh: no step")
        for f in found
    )
    assert any(
        f.startswith("wf.yaml:26:18: workflow.steps[3].loop.to: no step 'draftt'") for f in found
    )
    assert any(
        f.startswith("wf.yaml:28:29: workflow.steps[4].approval.on_reject: no step 'drat'")
        for f in found
    )
    assert len(found) == 5 and all("did you mean" in f for f in found)


def test_a_map_step_jumps_only_inside_the_map(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - id: each
          map:
            over: state.tickets
            steps:
              - {id: one, agent: writer, input: x, next: after}
        - {id: after, tool: publish}
        """,
    )
    assert found == [
        "wf.yaml:24:54: workflow.steps[0].map.steps[0].next: 'after' is a step outside map step "
        "'each'; a step of a map jumps only to the map's own steps or `end` (which ends the item)"
    ]


def test_unknown_agent_and_tool_names(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - {id: one, agent: writr, input: x}
        - {id: two, tool: publsh}
        - id: three
          choose: {agent: jduge, input: x, options: {one: a, end: b}}
        """,
    )
    assert found == [
        "wf.yaml:20:24: workflow.steps[0].agent: no agent named 'writr' in `agents:`; did you "
        "mean 'writer'?",
        "wf.yaml:21:23: workflow.steps[1].tool: no tool named 'publsh' in `tools:`; did you mean "
        "'publish'?",
        "wf.yaml:23:23: workflow.steps[2].choose.agent: no agent named 'jduge' in `agents:`; did "
        "you mean 'judge'?",
    ]


def test_a_step_that_never_runs(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - {id: one, agent: writer, input: x, next: end}
        - {id: two, agent: writer, input: x}
        - {id: three, agent: writer, input: x}
        """,
    )
    # the first step of the dead part is reported; those after it come with it
    assert found == [
        "wf.yaml:21:12: workflow.steps[1].id: step 'two' can never run: no step that runs goes on "
        "to it or jumps to it (remove it, or jump to it with `next:`, a `route` or a `loop`)"
    ]
    assert check(
        tmp_path,
        """
        - id: pick
          route: [{when: "state.count > 1", to: three}, {to: end}]
        - {id: two, agent: writer, input: x}
        - {id: three, agent: writer, input: x}
        """,
    ) == [
        "wf.yaml:22:12: workflow.steps[1].id: step 'two' can never run: no step that runs goes on "
        "to it or jumps to it (remove it, or jump to it with `next:`, a `route` or a `loop`)"
    ]


def test_a_loop_goes_back(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - id: again
          loop: {to: later, while: "true", max: 2}
        - {id: later, agent: writer, input: x}
        - id: self
          loop: {to: self, while: "true", max: 2}
        """,
    )
    assert found == [
        "wf.yaml:21:18: workflow.steps[0].loop.to: a loop goes back to an earlier step; 'later' "
        "is after it (use `next:` or a `route` to jump forward)",
        "wf.yaml:24:18: workflow.steps[2].loop.to: a loop goes back to an earlier step; 'self' "
        "is the loop itself (use `next:` or a `route` to jump forward)",
    ]


def test_templates_name_declared_fields_and_variables(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - {id: one, agent: writer, input: "{{ state.drfat }} {{ vars.topik }} {{ item }}"}
        - id: pick
          route: [{when: "state['cuont'] > 1", to: one}, {when: "state.count >", to: end}]
        - {id: send, tool: publish, args: {body: {text: "{{ state.get('reveiw') }}"}}}
        """,
    )
    assert found == [
        "wf.yaml:20:39: workflow.steps[0].input: `item` is only set in the steps of a `map`",
        "wf.yaml:20:39: workflow.steps[0].input: no state field 'drfat' in `state:`; did you mean "
        "'draft'?",
        "wf.yaml:20:39: workflow.steps[0].input: no variable 'topik' in `vars:` or `inputs:`; did "
        "you mean 'topic'?",
        "wf.yaml:22:22: workflow.steps[1].route[0].when: no state field 'cuont' in `state:`; did "
        "you mean 'count'?",
        "wf.yaml:22:61: workflow.steps[1].route[1].when: not a valid Jinja expression: "
        "unexpected ')'",
        "wf.yaml:23:53: workflow.steps[2].args.body.text: no state field 'reveiw' in `state:`; "
        "did you mean 'review'?",
    ]


def test_map_results_are_the_map_steps_outputs(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - id: each
          map:
            over: state.tikets
            steps:
              - {id: one, agent: writer, input: "{{ item }}", output: text}
              - {id: two, agent: writer, input: "{{ result.txet }}"}
        """,
    )
    assert found == [
        "wf.yaml:22:15: workflow.steps[0].map.over: no state field 'tikets' in `state:`; did you "
        "mean 'tickets'?",
        "wf.yaml:25:45: workflow.steps[0].map.steps[1].input: no result 'txet' in the `output:` of "
        "map step 'each'; did you mean 'text'?",
    ]


def test_outputs_fit_their_state_fields(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - {id: one, agent: writer, input: x, output: count}
        - {id: two, agent: judge, input: x, output: draft}
        - {id: three, agent: judge, input: x, output: {count: notes, draft: oks}}
        - {id: four, agent: writer, input: x, output: {draft: notes}}
        - {id: five, agent: writer, input: x, output: drafts}
        - id: each
          map: {over: state.tickets, steps: [{id: inner, agent: writer, input: x, output: t}]}
          output: draft
        """,
    )
    assert found == [
        "wf.yaml:20:50: workflow.steps[0].output: agent 'writer' answers text (it has no "
        "`response_format`); state field 'count' is `type: integer`",
        "wf.yaml:21:49: workflow.steps[1].output: agent 'judge' answers an object (its "
        "`response_format`); state field 'draft' is `type: string` (make it `type: object`, or "
        "take one field of the answer with `output: {draft: FIELD}`)",
        "wf.yaml:22:59: workflow.steps[2].output.count: answer field 'notes' of agent 'judge' is "
        "`type: string`; state field 'count' is `type: integer`",
        "wf.yaml:22:73: workflow.steps[2].output.draft: no answer field 'oks' in the "
        "`response_format` of agent 'judge'; did you mean 'ok'?",
        "wf.yaml:23:59: workflow.steps[3].output.draft: agent 'writer' answers text (it has no "
        "`response_format`); `{state_field: answer_field}` takes fields of a structured answer",
        "wf.yaml:24:51: workflow.steps[4].output: no state field 'drafts' in `state:`; did you "
        "mean 'draft'?",
        "wf.yaml:27:15: workflow.steps[5].output: a map's output is the list of its items' "
        "results; state field 'draft' is `type: string` (make it `type: list`)",
    ]


def test_parallel_branches(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - id: fan
          parallel:
            - {id: a, agent: writer, input: x, output: draft, next: end}
            - {id: b, agent: writer, input: x, output: draft}
        """,
    )
    assert found == [
        "wf.yaml:22:65: workflow.steps[0].parallel[0].next: a parallel branch cannot jump: the "
        "branches join when all finish; set `next:` on the parallel step 'fan' instead",
        "wf.yaml:23:52: workflow.steps[0].parallel[1].output: state field 'draft' is also written "
        "by the parallel branch 'a'; parallel branches write different fields",
    ]


def test_duplicate_step_ids_over_the_whole_file(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        """
        - {id: one, agent: writer, input: x}
        - id: each
          map: {over: state.tickets, steps: [{id: one, agent: writer, input: x}]}
        """,
    )
    assert found == [
        "wf.yaml:22:47: workflow.steps[1].map.steps[0].id: step id 'one' is already used "
        "(workflow.steps[0], line 20); step ids are unique in the file"
    ]


def test_load_checked_workflow_raises_every_problem(tmp_path: Path) -> None:
    path = write_files(
        tmp_path, {"wf.yaml": HEAD.lstrip("\n") + _indent("- {id: one, agent: nobody, input: x}")}
    )
    with pytest.raises(SpecError) as info:
        load_checked_workflow(path)
    assert [p.line for p in info.value.problems] == [20]
