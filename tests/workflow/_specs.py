"""A test-only stand-in for the workflow loader: YAML text -> WorkflowSpec with `agent_specs()`
filled (each agent validated as an AgentSpec named by its key, inheriting the workflow's model).
No locations, no `ref:`, no checks: the real loader is `runner.load`'s. Also `built`: a
workflow built on replayed agents and a SQLite checkpointer."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import yaml
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.memory import InMemoryStore

from runner.spec import AgentSpec
from runner.spec.workflow import AgentStep, ChooseStep, WorkflowAgent, WorkflowSpec
from runner.workflow.build import build_workflow, steps_of


def _agent(key: str, entry: Any, spec: WorkflowSpec) -> AgentSpec:
    data = (
        entry.model_dump(exclude_unset=True, by_alias=True)
        if isinstance(entry, WorkflowAgent)
        else dict(entry)
    )
    if "model" not in data and spec.model is not None:
        data["model"] = (
            spec.model.model_dump(exclude_unset=True)
            if hasattr(spec.model, "model_dump")
            else spec.model
        )
    return AgentSpec.model_validate({"name": key, **data, "vars": spec.vars})


def workflow_spec(text: str) -> WorkflowSpec:
    raw = yaml.safe_load(text)
    spec = WorkflowSpec.model_validate(raw)
    agents: dict[str, AgentSpec] = {}
    for key, entry in spec.agents.items():
        agents[key] = _agent(key, entry, spec)
    for step in steps_of(spec):
        agent = (
            step.agent
            if isinstance(step, AgentStep)
            else step.choose.agent
            if isinstance(step, ChooseStep)
            else None
        )
        if agent is not None and not isinstance(agent, str):
            agents[step.id] = _agent(step.id, agent, spec)
    spec._agent_specs = agents
    return spec


def cassette(tmp_path: Path, agents: dict[str, list[Any]]) -> str:
    path = tmp_path / "replies.cassette.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "agents": agents}))
    return f"replay:{path}"


def built(tmp_path: Path, text: str, agents: dict[str, list[Any]], db: Path | None = None) -> Any:
    conn = sqlite3.connect(db or tmp_path / "db.sqlite", check_same_thread=False)
    return build_workflow(
        workflow_spec(text),
        model=cassette(tmp_path, agents),
        checkpointer=SqliteSaver(conn),
        store=InMemoryStore(),
    )


def config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 200}
