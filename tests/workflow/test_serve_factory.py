"""A workflow file served like an agent: the server's graph factory builds it, and a client's
empty input runs it with the assistant's vars and the state's defaults."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from runner.serve.factory import GraphFactory

WORKFLOW = """
name: served
vars: {who: world}
state:
  count: {type: integer, default: 2}
  words: {type: list}
  note: {type: string}
model: openai:gpt-4.1
agents:
  greeter: {prompt: You greet.}
tools:
  - import: tests.workflow.wf_tools:stats
workflow:
  steps:
    - {id: greet, agent: greeter, input: "Greet {{ vars.who }} {{ state.count }} times", output: note}
    - {id: count, tool: stats, args: {words: ["{{ vars.who }}", "{{ state.note }}"]}, output: words}
  output: note
"""


def test_the_graph_factory_builds_a_workflow_that_runs_from_an_empty_input(
    tmp_path: Path, log: Path
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    spec = tmp_path / "served.yaml"
    spec.write_text(WORKFLOW)
    tape = tmp_path / "served.cassette.yaml"
    tape.write_text(yaml.safe_dump({"version": 1, "agents": {"greeter": [{"content": "hi"}]}}))
    factory = GraphFactory()
    try:
        graph = asyncio.run(
            factory.agraph(
                spec, {"configurable": {"vars": {"who": "ann"}, "model": f"replay:{tape}"}}
            )
        )
        graph.checkpointer = InMemorySaver()  # what the server's engine does for each run
        config = {"configurable": {"thread_id": "t"}}
        values = asyncio.run(graph.ainvoke({}, config))
    finally:
        factory.close()
    assert values["output"] == "hi"
    assert values["state"] == {"count": 2, "note": "hi", "words": {"count": 2, "first": "ann"}}
    assert values["trail"] == ["greet", "count"]
