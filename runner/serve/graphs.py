"""Where the engine imports graphs from: a module holding one factory per served agent.

The in-memory engine loads each graph by an import path, `MODULE:NAME`. `register` creates that
module in `sys.modules` (in this process, before the engine starts) with nothing in it but the
factories, so any agent name is a free attribute. Aegra loads a graph from a file instead
(`file.py:NAME`): `graph_files` names `graph_file.py`, which hands out the same factories.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from runner.serve.agents import ServedAgent
from runner.serve.factory import GraphFactory

__all__ = ["MODULE", "add", "graph_file", "graph_files", "register", "remove"]

MODULE = "agentctl_served_graphs"


def register(agents: list[ServedAgent], factory: GraphFactory) -> dict[str, str]:
    """Make each agent's factory importable; {graph id: import path} for the engine."""
    module = types.ModuleType(MODULE, "Graph factories of the agents `agentctl serve` serves.")
    for agent in agents:
        setattr(module, agent.name, _factory_for(agent, factory))
    sys.modules[MODULE] = module
    return {agent.name: f"{MODULE}:{agent.name}" for agent in agents}


def add(agent: ServedAgent, factory: GraphFactory) -> Any:
    """Make a newly served agent's factory importable too (`register` first); the factory."""
    make_graph = _factory_for(agent, factory)
    setattr(sys.modules[MODULE], agent.name, make_graph)
    return make_graph


def remove(name: str) -> None:
    """The agent `name` is no longer served: its factory goes."""
    module = sys.modules.get(MODULE)
    if module is not None and hasattr(module, name):
        delattr(module, name)


def _factory_for(agent: ServedAgent, factory: GraphFactory) -> Callable[[Any, Any], Awaitable[Any]]:
    """The agent's graph factory in the form both engines call with the reason they build the
    graph: `make_graph(config, runtime: ServerRuntime)`, where `runtime.access_context` is
    `threads.create_run` only for a run (else the server reads schemas or a thread's state).
    Only a run needs the agent's required inputs."""
    from langgraph_sdk.runtime import ServerRuntime

    async def make_graph(config: Any, runtime: Any) -> Any:
        access = getattr(runtime, "access_context", None)
        execution = None if access is None else access == "threads.create_run"
        return await factory.agraph(agent.path, config, execution=execution)

    # The engines tell the runtime parameter by its annotation (the object, not a string).
    make_graph.__annotations__ = {"config": Any, "runtime": ServerRuntime, "return": Any}
    make_graph.__name__ = make_graph.__qualname__ = f"make_graph_{agent.name}"
    return make_graph


def graph_files(graphs: Mapping[str, str]) -> dict[str, str]:
    """The registered graphs as Aegra names them: {graph id: `/path/graph_file.py:NAME`}. The
    file is named by its path, not imported: it imports this module (`MODULE`)."""
    return {name: graph_file(name) for name in graphs}


def graph_file(name: str) -> str:
    """Where Aegra loads the graph `name` from: `/path/graph_file.py:NAME`."""
    return f"{Path(__file__).with_name('graph_file.py')}:{name}"
