"""Workflows: a `WorkflowSpec` (`runner.spec.workflow`) compiled to a LangGraph `StateGraph`.

`build_workflow` resolves and builds the workflow's agents and tools as `runner.agent` does for
any agent, then `compile_workflow` makes one node per step (`runner.workflow.graph` says how
each kind runs). `runner.run.Session` runs the result on a thread like an agent.
"""

from __future__ import annotations

__all__ = ["BuiltWorkflow", "build_workflow", "compile_workflow"]


def __getattr__(name: str) -> object:
    if name in ("BuiltWorkflow", "build_workflow"):
        from runner.workflow import build

        return getattr(build, name)
    if name == "compile_workflow":
        from runner.workflow.graph import compile_workflow

        return compile_workflow
    raise AttributeError(name)
