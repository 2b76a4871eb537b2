"""`write_todos` without a per-step node: the tool itself rejects parallel calls."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

import runner
from runner.middleware.todos import PARALLEL_ERROR
from tests.fakes import ScriptedChatModel, ai

TODOS = [{"content": "plan", "status": "in_progress"}]


def agent(tmp_path: Path, script: list[Any]) -> Any:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"name": "planner", "backend": "state"}), encoding="utf-8")
    return runner.build_agent(path, model=ScriptedChatModel(script=script))


def run(graph: Any, asynchronous: bool) -> dict[str, Any]:
    message: Any = {"messages": [{"role": "user", "content": "go"}]}
    return asyncio.run(graph.ainvoke(message)) if asynchronous else graph.invoke(message)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_parallel_write_todos_calls_are_each_rejected(tmp_path: Path, asynchronous: bool) -> None:
    twice = ai("", ("write_todos", {"todos": TODOS}), ("write_todos", {"todos": TODOS}))
    state = run(agent(tmp_path, [twice, ai("done")]), asynchronous)
    asked, *results, final = state["messages"][1:]
    assert [r.content for r in results] == [PARALLEL_ERROR] * 2
    assert [r.status for r in results] == ["error"] * 2
    assert [r.tool_call_id for r in results] == [c["id"] for c in asked.tool_calls]
    assert state.get("todos") is None and final.content == "done"


@pytest.mark.parametrize("asynchronous", [False, True])
def test_one_write_todos_call_updates_the_list(tmp_path: Path, asynchronous: bool) -> None:
    state = run(
        agent(tmp_path, [ai("", ("write_todos", {"todos": TODOS})), ai("done")]), asynchronous
    )
    assert state["todos"] == TODOS
    assert state["messages"][2].content == f"Updated todo list to {TODOS}"


def test_no_graph_node_runs_after_each_model_call(tmp_path: Path) -> None:
    graph = agent(tmp_path, [])
    assert not [name for name in graph.get_graph().nodes if "after_model" in name]
