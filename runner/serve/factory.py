"""Graphs for a server: built from an agent file on first use, rebuilt when the file changes.

A server calls the factory at the start of each run (and to read a thread's state), with the
assistant's config: `configurable.vars` (a mapping) overrides the spec's template variables and
`configurable.model` (`provider:model`) replaces its model. Graphs are cached by (file, vars,
model) and rebuilt when the file's modification time changes, so an edited agent file takes
effect for new runs without a restart while runs already going keep the graph they started with.

The engine supplies the checkpointer and the store to each run; a graph is compiled without
them (an agent with a `store` backend is compiled against a placeholder store that runs never
see: the engine's store replaces it, and subagents use their parent run's).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.agent.cache import AgentCache, vars_key
from runner.errors import BuildError, ResolutionError

__all__ = [
    "GraphFactory",
    "assistant_config_model",
    "assistant_config_schema",
    "check_run_vars",
    "refuse_file_inputs",
    "served_file_inputs",
]


def assistant_config_schema(spec: Any) -> dict[str, Any]:
    """The JSON Schema of an assistant's `configurable`: `vars` (the spec's typed inputs, and
    its plain `vars:` as free values with their defaults) and `model`."""
    properties: dict[str, Any] = {
        name: {"default": value, "description": "a template variable (`vars:`)"}
        for name, value in spec.vars.items()
    }
    properties.update({name: declared.json_schema() for name, declared in spec.inputs.items()})
    variables: dict[str, Any] = {
        "type": "object",
        "description": "The agent's inputs and template variables (`--var NAME=VALUE`).",
        "properties": properties,
    }
    required = sorted(name for name, declared in spec.inputs.items() if declared.required)
    if required:
        variables["required"] = required
    return {
        "title": f"{spec.name} config",
        "type": "object",
        "properties": {
            "vars": variables,
            "model": {
                "type": "string",
                "description": "Run with this model instead of the spec's (`provider:model`).",
            },
        },
    }


def assistant_config_model(spec: Any) -> type:
    """A pydantic model whose JSON Schema is `assistant_config_schema(spec)`: the LangGraph
    server reads an assistant's config schema from the graph's `context_schema`. Every field is
    optional and other keys are kept, so a run's context is never refused by it."""
    import copy

    from pydantic import BaseModel, ConfigDict

    schema = assistant_config_schema(spec)

    class AgentConfig(BaseModel):
        model_config = ConfigDict(extra="allow")

        vars: dict[str, Any] | None = None
        model: str | None = None

        @classmethod
        def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
            return copy.deepcopy(schema)

    return AgentConfig


VARS_FROM = "configurable.vars"
"""Where a run's vars come from, as messages about them say: its config's `configurable.vars`."""


def refuse_file_inputs(
    path: str | os.PathLike[str], *, base_vars: Mapping[str, Any], vars: Mapping[str, Any]
) -> None:
    """A `file` input's value is a path the server reads into the prompt: a client choosing
    it could read any file the server can. Only `agentctl serve --var` sets one. Vars reach
    every agent of the tree, so a `file` input of any of them (a `ref:` subagent file, an
    included file) counts."""
    _refuse_file_inputs(_served_spec(path, base_vars), vars)


def _served_spec(path: str | os.PathLike[str], base_vars: Mapping[str, Any]) -> Any:
    from runner.load.any import load_any

    return load_any(Path(path), vars=base_vars, require_inputs=False, allow_unused_vars=True)


def served_file_inputs(spec: Any) -> set[str]:
    """The `file` input names of an agent's tree (`file_inputs`), or of a workflow: its own
    inputs and those of every agent it runs."""
    from runner.spec import AgentSpec
    from runner.spec.checks import file_inputs

    if isinstance(spec, AgentSpec):
        return file_inputs(spec)
    files = {n for n, declared in spec.inputs.items() if declared.kind == "file"}
    for agent in spec.agent_specs().values():
        files |= file_inputs(agent)
    return files


def _refuse_file_inputs(spec: Any, vars: Mapping[str, Any]) -> None:
    files = served_file_inputs(spec)
    for name in sorted(vars):
        if name in files:
            raise BuildError(
                f"`vars.{name}` is a file input: its value is a path the server reads, which "
                f"a client may not choose; the server sets it (agentctl serve --var "
                f"{name}=PATH)"
            )


def check_run_vars(
    path: str | os.PathLike[str], *, base_vars: Mapping[str, Any], vars: Any
) -> None:
    """Raise the located error a run of the agent file at `path` given `vars` (its config's
    `configurable.vars`) would fail on as it starts: vars that are no mapping, a `file` input,
    a required input without a value, a value of the wrong type, a name the agent does not use
    (blocking). A server checks them when the run is asked for, to refuse the request. A
    problem of the file itself is not the request's: it is left for the run to report."""
    from runner.errors import SpecError
    from runner.load.loader import load_spec
    from runner.load.workflow import load_workflow
    from runner.spec.workflow import WorkflowSpec

    vars = _checked_vars(vars) or {}
    try:
        spec = _served_spec(path, base_vars)
    except SpecError:
        return
    _refuse_file_inputs(spec, vars)
    if isinstance(spec, WorkflowSpec):
        load_workflow(Path(path), vars={**base_vars, **vars}, require_inputs=True)
    else:
        load_spec(Path(path), vars={**base_vars, **vars}, require_inputs=True, vars_from=VARS_FROM)


def _checked_vars(vars: Any) -> Mapping[str, Any] | None:
    if vars is not None and not isinstance(vars, Mapping):
        raise BuildError(f"assistant config `vars` must be a mapping, found {vars!r}")
    return vars


@dataclass
class _Built:
    graph: Any
    resolved: Any


_TELLING: dict[type, type] = {}


def _telling_provider_failures(graph: Any) -> Any:
    """`graph`, whose runs end on a model provider's connection or HTTP error (no API key
    accepted, a server that cannot be reached) with a `RunError` that says which server and what
    to check, as `agentctl run` says it: the engines tell a `RunError` to the client and log it
    on one line, where they sent `An internal error occurred` and logged two tracebacks.
    Retries and fallbacks inside the graph still see the provider's own error."""
    cls = type(graph)
    if cls not in _TELLING:
        _TELLING[cls] = _telling_class(cls)
    graph.__class__ = _TELLING[cls]
    return graph


def _telling_class(cls: type) -> type:
    class Telling(cls):
        async def astream(self, *args: Any, **kwargs: Any) -> Any:
            from runner.agent.models import describe_provider_error
            from runner.errors import RunError

            try:
                async for chunk in super().astream(*args, **kwargs):
                    yield chunk
            except Exception as exc:
                told = describe_provider_error(exc)
                if told is None:
                    raise
                raise RunError(told) from exc

    Telling.__name__ = Telling.__qualname__ = cls.__name__
    return Telling


def _unused_model() -> Any:
    """A chat model for a graph that is read and never run."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    return GenericFakeChatModel(messages=iter(()))


def _close_built(built: _Built) -> None:
    built.resolved.close()


@dataclass
class GraphFactory:
    """Compiled graphs of agent files, cached by (file, mtime, vars, model)."""

    base_vars: Mapping[str, Any] = field(default_factory=dict)
    """Template variables every build gets (from `--var`); an assistant's `vars` override them."""
    # A graph rebuilt because its file changed is retired, not closed: runs that started on the
    # old graph may still use its MCP sessions; they are closed with the factory.
    _cache: AgentCache[_Built] = field(default_factory=lambda: AgentCache(_close_built))

    @property
    def builds(self) -> int:
        """How many graphs were compiled (a cache miss each)."""
        return self._cache.builds

    def graph(
        self,
        path: str | os.PathLike[str],
        *,
        vars: Mapping[str, Any] | None = None,
        model: str | None = None,
        require_inputs: bool = True,
    ) -> Any:
        """The compiled graph of the agent file at `path` (blocking: call it off the loop).
        Without `require_inputs` (the server reading an assistant's schemas, not running it), a
        required input without a value gets a stand-in instead of failing the build."""
        path = os.path.abspath(path)
        if vars:
            refuse_file_inputs(path, base_vars=self.base_vars, vars=vars)
        merged = {**self.base_vars, **(vars or {})}
        key = (path, vars_key(merged), model, require_inputs)
        mtime = os.stat(path).st_mtime_ns
        built = self._cache.get(
            key, lambda: self._build(path, merged, model, require_inputs), stamp=mtime
        )
        return built.graph

    def _build(self, path: str, vars: dict[str, Any], model: str | None, require: bool) -> _Built:
        from langgraph.store.memory import InMemoryStore

        from runner.agent.build import build_graph
        from runner.agent.resolve import Resolver
        from runner.load.loader import is_workflow_file, load_spec

        if is_workflow_file(path):
            return self._build_workflow(path, vars, model, require)
        spec = load_spec(Path(path), vars=vars, require_inputs=require, vars_from=VARS_FROM)
        try:
            resolved = Resolver(model=model).resolve(spec)
        except ResolutionError:
            if require:
                raise
            # Built only to be read (its schemas, a thread's state), the graph calls no model:
            # one that cannot be made now (no API key set yet) must not fail the reading
            resolved = Resolver(model=_unused_model()).resolve(spec)
        try:
            store = InMemoryStore() if resolved.backend and resolved.backend.uses_store else None
            graph = build_graph(resolved, store=store)
            # What the server shows as the assistant's config schema (`configurable`)
            graph.context_schema = assistant_config_model(spec)
        except BaseException:
            resolved.close()
            raise
        return _Built(_telling_provider_failures(graph), resolved)

    def _build_workflow(
        self, path: str, vars: dict[str, Any], model: str | None, require: bool
    ) -> _Built:
        """A workflow file's graph: its agents built as subgraphs, the engine's checkpointer and
        store given to the whole at each run."""
        from langgraph.store.memory import InMemoryStore

        from runner.check.workflow import load_checked_workflow
        from runner.workflow.build import build_workflow

        spec = load_checked_workflow(Path(path), vars=vars, require_inputs=require)
        try:
            built = build_workflow(spec, model=model, store=InMemoryStore())
        except ResolutionError:
            if require:
                raise
            built = build_workflow(spec, model=_unused_model(), store=InMemoryStore())
        graph = built.graph
        try:
            graph.context_schema = assistant_config_model(spec)
        except BaseException:
            built.close()
            raise
        return _Built(_telling_provider_failures(graph), built)

    async def agraph(
        self,
        path: str | os.PathLike[str],
        config: Mapping[str, Any] | None,
        *,
        execution: bool | None = None,
    ) -> Any:
        """`graph` for a run's config, built in a worker thread (it reads files, may start MCP
        servers). `execution`: whether the server builds it to run it (True) or only to read
        its schemas or a thread's state (False); None: as the config says."""
        configurable = (config or {}).get("configurable") or {}
        vars, model = _checked_vars(configurable.get("vars")), configurable.get("model")
        if model is not None and not isinstance(model, str):
            raise BuildError(
                f"assistant config `model` must be a `provider:model` string, found {model!r}"
            )
        # The LangGraph server says whether it builds the graph to run it or only to read it
        # (its schemas, a thread's state); absent, it is built to run.
        if execution is None:
            execution = configurable.get("__is_for_execution__") is not False
        return await asyncio.to_thread(
            self.graph, path, vars=vars, model=model, require_inputs=execution
        )

    def close(self) -> None:
        """Close every MCP session the built agents opened."""
        self._cache.close()
