"""Load a workflow file into a `WorkflowSpec`, located as agent files are (see `loader.py`).

The same stages as an agent file: YAML with positions, `${VAR}`, `include:`, validation, paths.
Step templates (`input:`, `question:`, string `args:`) and expressions (`when:`, `while:`,
`over:`) stay raw text: they read `state`, known only when the step runs. The agents the steps
run are loaded as `AgentSpec`s: a `ref:` file by the agent loader (its problems located in it),
an inline agent from its mapping, named by its key, with the workflow's `model:` when it sets
none and the workflow's `vars`/`inputs` (its prompt is rendered here, as an agent file's is).
`WorkflowSpec.agent_specs()` returns them by agent key.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.errors import Problem
from runner.load.loader import _Loader, _resolve_model, _UsedVars
from runner.load.problems import problems_from_validation
from runner.load.source import KeyPath, Pos, SourceMap, format_path
from runner.spec import AgentSpec
from runner.spec.workflow import (
    AgentStep,
    ChooseStep,
    MapStep,
    ParallelStep,
    WorkflowAgent,
    WorkflowAgentRef,
    WorkflowSpec,
)

__all__ = ["agents_in", "load_workflow", "step_agents", "walk_steps"]


def load_workflow(
    path: str | os.PathLike[str],
    *,
    vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    allow_unused_vars: bool = False,
    require_inputs: bool = True,
) -> WorkflowSpec:
    """Load and validate the workflow file at `path`; the arguments are `load_spec`'s. Raises
    `SpecError` listing every problem found (the checks that need the whole workflow, such as
    unknown step ids, are `runner.check.workflow`'s)."""
    loader = _Loader(dict(vars or {}), os.environ if env is None else env, require_inputs)
    spec = _load(loader, Path(path))
    return loader.finish(spec, Path(path), allow_unused_vars=allow_unused_vars)


# --------------------------------------------------------------------------- steps


def walk_steps(spec: WorkflowSpec) -> Iterator[tuple[KeyPath, Any]]:
    """Every step of the workflow with its key path: the top-level steps, the branches of
    `parallel` steps and the steps of `map` steps, in file order."""
    for index, step in enumerate(spec.workflow.steps):
        at: KeyPath = ("workflow", "steps", index)
        yield at, step
        if isinstance(step, ParallelStep):
            for number, branch in enumerate(step.parallel):
                yield (*at, "parallel", number), branch
        elif isinstance(step, MapStep):
            for number, inner in enumerate(step.map.steps):
                yield (*at, "map", "steps", number), inner


def step_agents(spec: WorkflowSpec) -> Iterator[tuple[str, KeyPath, Any]]:
    """(agent key, key path, entry) of each agent written in a step (`agent:` or
    `choose.agent`): a name from `agents:` (a str), a `WorkflowAgentRef` or a `WorkflowAgent`.
    The key of a name is the name; of an agent written in place, the step's id."""
    for at, step in walk_steps(spec):
        if isinstance(step, AgentStep):
            entry, where = step.agent, (*at, "agent")
        elif isinstance(step, ChooseStep):
            entry, where = step.choose.agent, (*at, "choose", "agent")
        else:
            continue
        yield (entry if isinstance(entry, str) else step.id), where, entry


def agents_in(spec: AgentSpec | WorkflowSpec) -> list[tuple[str, AgentSpec]]:
    """(key path prefix, spec) of the agents a file runs: an agent file's own spec (prefix ""),
    or each agent of a workflow (prefix `agents.KEY.`), for checks that look at every agent a
    served file runs (its backends' folders, say)."""
    if isinstance(spec, AgentSpec):
        return [("", spec)]
    return [(f"agents.{key}.", agent) for key, agent in spec.agent_specs().items()]


# --------------------------------------------------------------------------- loading


class _Under(SourceMap):
    """The source map of a workflow, seen from the mapping at `prefix` (an inline agent): its
    key paths are the agent's, its problems name the whole path."""

    def __init__(self, smap: SourceMap, prefix: KeyPath) -> None:
        super().__init__(smap.root)
        self.prefix = prefix

    def _node(self, path: KeyPath) -> tuple[Pos, int]:
        node, depth = super()._node((*self.prefix, *path))
        return node, depth - len(self.prefix)

    def shown(self, path: KeyPath) -> str:
        return format_path((*self.prefix, *path))


def _load(loader: _Loader, path: Path) -> WorkflowSpec | None:
    doc = loader._read(path)
    if doc is None:
        return None
    value, pos = loader._with_includes(path, doc, ())
    smap = SourceMap(pos)
    try:
        spec = WorkflowSpec.model_validate(value)
    except ValidationError as exc:
        hints = _step_hints(value)
        loader.problems.extend(
            _hinted(p, hints)
            for p in problems_from_validation(exc, value, smap, WorkflowSpec)
            if (p.file, p.path) not in loader.unreadable
        )
        loader.used_vars.update(loader.caller_vars)  # (the file's names are unknown)
        return None
    spec._source = str(path)
    spec._locator = lambda keypath, message, at_key: smap.problem(keypath, message, at_key=at_key)
    loader.used_vars.update(spec.vars)
    loader.used_vars.update(spec.inputs)
    values = loader.input_values(spec, smap)
    variables = _UsedVars({**spec.vars, **values}, loader.used_vars)
    # the run's `vars`: the file's, with the caller's values and the inputs (checked, defaulted)
    run_vars = {**spec.vars, **values}
    if spec.model is not None:
        _resolve_model(spec.model, smap, ("model",))
    loader.resolve_tools(spec.tools, (), smap)
    stack = (path.resolve(),)
    agents: dict[str, AgentSpec] = {}
    entries: list[tuple[str, KeyPath, Any]] = [
        (name, ("agents", name), entry) for name, entry in spec.agents.items()
    ]
    entries += [e for e in step_agents(spec) if not isinstance(e[2], str)]
    for key, at, entry in entries:
        if isinstance(entry, WorkflowAgentRef):
            ref_path, agent = loader.load_ref_file(entry.ref, at, smap, stack)
            entry.ref = str(ref_path)
        else:
            agent = _inline_agent(loader, spec, entry, key, at, value, smap, stack, variables)
        if agent is not None:  # (a ref'd file's agent is named by its key here too)
            agents[key] = agent if agent.name == key else agent.model_copy(update={"name": key})
    spec._agent_specs = agents
    spec.vars = run_vars
    return spec


def _inline_agent(
    loader: _Loader,
    spec: WorkflowSpec,
    entry: WorkflowAgent,
    key: str,
    at: KeyPath,
    raw: dict[str, Any],
    smap: SourceMap,
    stack: tuple[Path, ...],
    variables: dict[str, Any],
) -> AgentSpec | None:
    """The `AgentSpec` of an agent written in the workflow (at `at`), named `key`."""
    mapping: Any = raw
    for part in at:
        mapping = mapping[part]
    under = _Under(smap, at)
    data = {**mapping, "name": key}
    try:
        agent = AgentSpec.model_validate(data)
    except ValidationError as exc:
        loader.problems.extend(
            p
            for p in problems_from_validation(exc, data, under, AgentSpec)
            if (p.file, p.path) not in loader.unreadable
        )
        return None
    if agent.model is None and spec.model is not None:
        agent.model = spec.model.model_copy(deep=True)
    agent.vars = dict(spec.vars)
    agent.inputs = dict(spec.inputs)
    agent._source = spec.source
    agent._locator = lambda keypath, message, at_key: under.problem(keypath, message, at_key=at_key)
    loader.resolve_agent(agent, under, stack, variables)
    return agent


def _step_hints(value: dict[str, Any]) -> dict[str, str]:
    """What to add to the schema's problems at a step (by the path a problem shows): the kind
    of step a misspelt key means (`rout:` -> `route`), and what a loop's `max:` is."""
    from runner.load.problems import did_you_mean
    from runner.spec.workflow import STEP_KINDS

    hints: dict[str, str] = {}

    def visit(steps: Any, at: KeyPath) -> None:
        for index, step in enumerate(steps if isinstance(steps, list) else []):
            if not isinstance(step, dict):
                continue
            where = (*at, index)
            if not any(kind in step for kind in STEP_KINDS):
                for key in step:
                    hint = did_you_mean(str(key), STEP_KINDS)
                    if hint is not None:
                        hints[format_path(where)] = (
                            f"; `{key}:` is no kind of step: did you mean {hint!r}?"
                        )
                        break
            loop = step.get("loop")
            if isinstance(loop, dict) and "max" not in loop:
                hints[format_path((*where, "loop", "max"))] = (
                    ": a loop needs a bound, the most times it goes back (e.g. `max: 3`)"
                )
            visit(step.get("parallel"), (*where, "parallel"))
            body = step.get("map")
            if isinstance(body, dict):
                visit(body.get("steps"), (*where, "map", "steps"))

    body = value.get("workflow")
    if isinstance(body, dict):
        visit(body.get("steps"), ("workflow", "steps"))
    return hints


def _hinted(problem: Problem, hints: dict[str, str]) -> Problem:
    hint = hints.get(problem.path)
    if hint is None or not (
        problem.message.startswith("a step") or problem.message == "missing required key"
    ):
        return problem
    return replace(problem, message=problem.message + hint)
