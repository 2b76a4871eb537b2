"""The compiled workflow graph, run directly on replayed agents and a SQLite checkpointer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.types import Command

from tests.workflow._specs import built, config

SEQUENCE = """
name: seq
model: openai:gpt-4.1
state:
  draft: {type: string}
  review: {type: object}
agents:
  writer: {prompt: You write.}
  reviewer:
    prompt: You review.
    response_format:
      type: object
      properties: {approved: {type: boolean}, notes: {type: string}}
workflow:
  steps:
    - id: draft
      agent: writer
      input: "Write notes for {{ vars.version }}. {{ state.review.notes }}"
      output: draft
    - id: review
      agent: reviewer
      input: "{{ state.draft }}"
      output: review
    - id: again
      loop: {to: draft, while: "not state.review.approved", max: 3}
  output: draft
"""


def review(approved: bool, notes: str) -> dict[str, Any]:
    call = {"name": "Review", "args": {"approved": approved, "notes": notes}}
    return {"content": "", "tool_calls": [call]}


def test_steps_run_in_order_and_a_loop_goes_back_until_its_condition_fails(tmp_path: Path) -> None:
    text = SEQUENCE.replace(
        "type: object\n      properties", "type: object\n      title: Review\n      properties"
    )
    wf = built(
        tmp_path,
        text,
        {
            "writer": [{"content": "draft one"}, {"content": "draft two"}],
            "reviewer": [review(False, "shorter"), review(True, "good")],
        },
    )
    values = wf.graph.invoke({"vars": {"version": "1.2"}, "state": {}}, config())
    print(values["state"], values["runs"], values["trail"])
    assert values["trail"] == ["draft", "review", "again", "draft", "review", "again"]
    assert values["state"]["draft"] == "draft two"
    assert values["state"]["review"] == {"approved": True, "notes": "good"}
    assert values["output"] == "draft two"
    assert values["runs"] == {"writer": 2, "reviewer": 2}


TOOLS = """
name: tools
state:
  words: {type: list}
  stats: {type: object}
  count: {type: integer}
  note: {type: string}
tools:
  - import: tests.workflow.wf_tools:stats
  - import: tests.workflow.wf_tools:publish
workflow:
  steps:
    - id: measure
      tool: stats
      args: {words: "{{ state.words }}"}
      output: stats
    - id: spread
      tool: stats
      args: {words: ["{{ vars.who }}", "b"]}
      output: {count: count}
    - id: send
      tool: publish
      args: {body: "{{ state.stats.count }} words, first {{ state.stats.first }}"}
      output: note
  output: "{{ state.note }} / {{ state.count }}"
"""


def test_tool_steps_get_rendered_arguments_and_one_expression_keeps_its_type(
    tmp_path: Path, log: Path
) -> None:
    from tests.workflow.wf_tools import calls

    wf = built(tmp_path, TOOLS, {})
    values = wf.graph.invoke(
        {"vars": {"who": "ann"}, "state": {"words": ["x", "y", "z"]}}, config()
    )
    assert calls(log) == [
        {"tool": "stats", "words": ["x", "y", "z"]},
        {"tool": "stats", "words": ["ann", "b"]},
        {"tool": "publish", "body": "3 words, first x"},
    ]
    assert values["state"]["stats"] == {"count": 3, "first": "x"}
    assert values["state"]["count"] == 2
    assert values["output"] == "published 16 characters / 2"


PEOPLE = """
name: people
state:
  draft: {type: string, default: "v1"}
  size: {type: string}
workflow:
  steps:
    - id: size
      ask: {question: "Size for {{ state.draft }}?", field: size, choices: [small, large]}
    - id: approve
      approval: {question: "Publish {{ state.size }}?", field: draft, on_reject: end}
    - id: after
      route:
        - {when: "state.draft == 'v2'", to: end}
        - {to: size}
  output: draft
"""


def pending(graph: Any, thread: str = "t1") -> list[tuple[str, list[Any]]]:
    from runner.threads.transcripts import pending_actions

    return pending_actions(graph.get_state(config(thread)))


def answer(graph: Any, decisions: list[Any], thread: str = "t1") -> dict[str, Any]:
    from runner.run.answers import resume_values

    values = resume_values(thread, pending(graph, thread), decisions)
    resume = {iid: value for iid, (_, value) in values.items()}
    return graph.invoke(Command(resume=resume), config(thread))


def test_ask_and_approval_steps_wait_with_the_agents_payloads_and_take_their_answers(
    tmp_path: Path,
) -> None:
    from runner.run.answers import Decision

    wf = built(tmp_path, PEOPLE, {})
    wf.graph.invoke({"vars": {}, "state": {"draft": "v1"}}, config())
    [(_, [question])] = pending(wf.graph)
    assert (question.name, question.args) == (
        "ask_user",
        {"question": "Size for v1?", "choices": ["small", "large"]},
    )
    answer(wf.graph, [Decision.answer("LARGE")])
    [(_, [action])] = pending(wf.graph)
    assert (action.name, action.args, action.description) == (
        "approve",
        {"draft": "v1"},
        "Publish large?",
    )
    values = answer(wf.graph, [Decision("edit", args={"draft": "v2"})])
    assert values["state"] == {"draft": "v2", "size": "large"}
    assert values["trail"] == ["size", "approve", "after"]
    assert values["output"] == "v2"


def test_a_rejection_goes_where_on_reject_says(tmp_path: Path) -> None:
    from runner.run.answers import Decision

    wf = built(tmp_path, PEOPLE, {})
    wf.graph.invoke({"vars": {}, "state": {"draft": "v1"}}, config())
    answer(wf.graph, [Decision.answer("small")])
    values = answer(wf.graph, [Decision("reject", message="no")])
    assert values["trail"] == ["size", "approve"]
    assert not pending(wf.graph)


CHOOSE = """
name: choosing
model: openai:gpt-4.1
state:
  kind: {type: string}
  done: {type: string}
agents:
  router: {prompt: You route.}
  fixer: {prompt: You fix.}
workflow:
  steps:
    - id: pick
      choose:
        agent: router
        input: "Ticket: {{ vars.ticket }}"
        options: {bug: "a defect", idea: "a request"}
        output: kind
    - id: bug
      agent: fixer
      input: "Fix {{ vars.ticket }}"
      output: done
      next: end
    - id: idea
      agent: fixer
      input: "Plan {{ vars.ticket }}"
      output: done
"""


def test_choose_takes_the_agents_structured_choice(tmp_path: Path) -> None:
    choice = {"content": "", "tool_calls": [{"name": "choice", "args": {"choice": "idea"}}]}
    wf = built(tmp_path, CHOOSE, {"router": [choice], "fixer": [{"content": "planned"}]})
    values = wf.graph.invoke({"vars": {"ticket": "dark mode"}, "state": {}}, config())
    assert values["trail"] == ["pick", "idea"]
    assert values["state"] == {"kind": "idea", "done": "planned"}


FANOUT = """
name: fanout
model: openai:gpt-4.1
state:
  a: {type: string}
  b: {type: string}
  tickets: {type: list}
  results: {type: list}
  summary: {type: string}
agents:
  researcher: {prompt: You research.}
  classifier: {prompt: You classify.}
workflow:
  steps:
    - id: both
      parallel:
        - {id: left, agent: researcher, input: "left {{ vars.topic }}", output: a}
        - {id: right, agent: researcher, input: "right {{ vars.topic }}", output: b}
    - id: each
      map:
        over: state.tickets
        as: ticket
        concurrency: 2
        steps:
          - {id: classify, agent: classifier, input: "Classify {{ ticket }} ({{ index }})", output: label}
          - id: which
            route:
              - {when: "result.label == 'bug'", to: end}
          - {id: mark, tool: publish, args: {body: "{{ ticket }} is {{ result.label }}"}, output: note}
      output: results
tools:
  - import: tests.workflow.wf_tools:publish
"""


def test_parallel_branches_and_a_map_write_their_results_in_order(
    tmp_path: Path, log: Path
) -> None:
    from tests.workflow.wf_tools import calls

    labels = ["bug", "idea", "bug", "idea"]
    wf = built(
        tmp_path,
        FANOUT,
        {
            "researcher": [{"content": "A"}, {"content": "B"}],
            "classifier": [{"content": label, "delay": 0.05} for label in labels],
        },
    )
    tickets = ["t0", "t1", "t2", "t3"]
    values = wf.graph.invoke({"vars": {"topic": "x"}, "state": {"tickets": tickets}}, config())
    assert values["state"]["a"] == "A" and values["state"]["b"] == "B"
    assert values["state"]["results"] == [
        {"label": "bug"},
        {"label": "idea", "note": "published 10 characters"},
        {"label": "bug"},
        {"label": "idea", "note": "published 10 characters"},
    ]
    assert sorted(c["body"] for c in calls(log)) == ["t1 is idea", "t3 is idea"]
    assert values["trail"] == ["left", "right", "both", "each"] or values["trail"] == [
        "right",
        "left",
        "both",
        "each",
    ]


BUSY = """
name: busy
state:
  numbers: {type: list}
  tens: {type: list}
tools:
  - import: tests.workflow.wf_tools:busy
workflow:
  steps:
    - id: each
      map:
        over: state.numbers
        concurrency: 3
        steps:
          - {id: times, tool: busy, args: {n: "{{ item }}"}, output: value}
      output: tens
"""


def test_a_map_runs_no_more_items_at_once_than_its_concurrency(tmp_path: Path) -> None:
    from tests.workflow.wf_tools import GAUGE

    GAUGE.most = 0
    wf = built(tmp_path, BUSY, {})
    values = wf.graph.invoke(
        {"vars": {}, "state": {"numbers": list(range(12))}},
        {**config(), "max_concurrency": 32},
    )
    assert values["state"]["tens"] == [{"value": n * 10} for n in range(12)]
    assert 1 <= GAUGE.most <= 3


def test_the_async_path_runs_every_kind_of_step_as_the_sync_one(tmp_path: Path, log: Path) -> None:
    import asyncio

    from langgraph.checkpoint.memory import InMemorySaver

    from runner.workflow.build import build_workflow
    from tests.workflow._specs import cassette, workflow_spec

    labels = ["bug", "idea"]
    wf = build_workflow(
        workflow_spec(FANOUT),
        model=cassette(
            tmp_path,
            {
                "researcher": [{"content": "A"}, {"content": "B"}],
                "classifier": [{"content": label} for label in labels],
            },
        ),
        checkpointer=InMemorySaver(),
    )
    values = asyncio.run(
        wf.graph.ainvoke({"vars": {"topic": "x"}, "state": {"tickets": ["t0", "t1"]}}, config())
    )
    assert values["state"]["results"] == [
        {"label": "bug"},
        {"label": "idea", "note": "published 10 characters"},
    ]
    assert (values["state"]["a"], values["state"]["b"]) == ("A", "B")  # by branch order
