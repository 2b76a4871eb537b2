"""agentctl: run deep agents defined as YAML.

    import runner
    spec = runner.load_spec("agents/researcher.yaml", vars={"topic": "databases"})
    agent = runner.build_agent(spec)            # a LangGraph CompiledStateGraph
    agent.invoke({"messages": [{"role": "user", "content": "go"}]})

Names are imported lazily: `import runner` does not import langchain, so tools built on the spec
alone (validation, schema generation) start fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "AgentSpec": "runner.spec",
    "BuildError": "runner.errors",
    "Problem": "runner.errors",
    "ResolutionError": "runner.errors",
    "RunError": "runner.errors",
    "RunnerError": "runner.errors",
    "Session": "runner.run",
    "SpecError": "runner.errors",
    "build_agent": "runner.agent.build",
    "load_spec": "runner.load.loader",
    "open_home": "runner.threads",
}

__all__ = [
    "AgentSpec",
    "BuildError",
    "Problem",
    "ResolutionError",
    "RunError",
    "RunnerError",
    "Session",
    "SpecError",
    "__version__",
    "build_agent",
    "load_spec",
    "open_home",
]

if TYPE_CHECKING:
    from runner.agent.build import build_agent
    from runner.errors import (
        BuildError,
        Problem,
        ResolutionError,
        RunError,
        RunnerError,
        SpecError,
    )
    from runner.load.loader import load_spec
    from runner.run import Session
    from runner.spec import AgentSpec
    from runner.threads import open_home


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'runner' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
