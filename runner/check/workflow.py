"""The checks of a workflow that need the whole file, made before anything runs.

Each problem is located at the key that is wrong (`file:line:col: key.path: message`) and, for a
name, says which name was meant:

- a jump to a step that is not there (`next`, `route[].to`, `choose.options`, `loop.to`,
  `approval.on_reject`), or out of a `map`'s own steps; `next:` on a parallel branch;
- two steps with one id (ids are unique over the whole file, `map` and `parallel` steps too);
- an agent name not in `agents:`, a tool name not in `tools:`;
- a step that can never run (not reachable from the first step), a `loop` whose `to` is not
  an earlier step;
- a template or expression naming `state.X` that `state:` lacks, `vars.X` that neither `vars:`
  nor `inputs:` declares, or `item`/`index`/`result` outside a `map`; one that does not parse;
- an output that cannot fit its state field (a text answer into a non-text field, an answer
  field that the agent's `response_format` lacks or whose type differs, a map's results into a
  field that is not a list), or a field that `state:` lacks;
- two parallel branches writing one state field.

`load_checked_workflow` loads a workflow and runs these checks: what `run` and `validate` call.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from runner.errors import Problem, SpecError
from runner.load.problems import did_you_mean
from runner.load.source import KeyPath, format_path
from runner.load.workflow import load_workflow, walk_steps
from runner.spec.workflow import (
    END,
    AgentStep,
    ApprovalStep,
    AskStep,
    ChooseStep,
    LoopStep,
    MapStep,
    ParallelStep,
    RouteStep,
    StateField,
    ToolStep,
    WorkflowSpec,
)

__all__ = ["load_checked_workflow", "workflow_problems"]

_MAP_NAMES = ("index", "result")
"""Names a map's templates read besides its item (`as:`, default `item`)."""

_JSON_TO_STATE: dict[str, tuple[str, ...]] = {
    "string": ("string", "enum"),
    "integer": ("integer", "number"),
    "number": ("number",),
    "boolean": ("boolean",),
    "array": ("list",),
    "object": ("object",),
}
"""A `response_format` property's JSON type -> the state field types that can hold it."""


def load_checked_workflow(
    path: str | os.PathLike[str],
    *,
    vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    allow_unused_vars: bool = False,
    require_inputs: bool = True,
) -> WorkflowSpec:
    """`load_workflow`, then `workflow_problems`: `SpecError` lists every problem found."""
    spec = load_workflow(
        path,
        vars=vars,
        env=env,
        allow_unused_vars=allow_unused_vars,
        require_inputs=require_inputs,
    )
    problems = workflow_problems(spec)
    if problems:
        raise SpecError(problems)
    return spec


def workflow_problems(spec: WorkflowSpec) -> list[Problem]:
    """Every problem of a loaded workflow that needs the whole file (see the module)."""
    checker = _Checker(spec)
    checker.run()
    return sorted(set(checker.problems))


class _Scope:
    """One list of steps (the workflow's, or a map's): the ids a jump in it may name."""

    def __init__(self, steps: list[Any], at: KeyPath, map_step: MapStep | None) -> None:
        self.steps = steps
        self.at = at
        self.map_step = map_step
        self.ids = [step.id for step in steps]

    def name(self) -> str:
        return f"map step {self.map_step.id!r}" if self.map_step else "the workflow's steps"


class _Checker:
    def __init__(self, spec: WorkflowSpec) -> None:
        self.spec = spec
        self.problems: list[Problem] = []
        self.agents = spec.agent_specs()
        self.state = spec.state
        self.var_names = sorted({*spec.vars, *spec.inputs})
        from runner.check.tools import entry_tool_names

        self.tools, self.open_tools = entry_tool_names(spec.tools)

    def add(self, at: KeyPath, message: str, *, at_key: bool = False) -> None:
        self.problems.append(self.spec.problem(at, message, at_key=at_key))

    def line_of(self, at: KeyPath) -> str:
        where = self.spec.problem(at, "")
        return f"line {where.line}" if where.line else format_path(at)

    # ----------------------------------------------------------------------- all

    def run(self) -> None:
        self.duplicate_ids()
        top = _Scope(self.spec.workflow.steps, ("workflow", "steps"), None)
        scopes = [top]
        for index, step in enumerate(top.steps):
            if isinstance(step, MapStep):
                at = (*top.at, index, "map", "steps")
                scopes.append(_Scope(step.map.steps, at, step))
        for scope in scopes:
            self.targets(scope, top)
            self.reachable(scope)
        for at, step in walk_steps(self.spec):
            self.names(at, step)
        for scope in scopes:
            for index, step in enumerate(scope.steps):
                self.templates((*scope.at, index), step, scope.map_step)
                if scope.map_step is None:
                    self.outputs((*scope.at, index), step)
        output = self.spec.workflow.output
        if output is not None:
            if output.isidentifier():
                self.field(("workflow", "output"), output)
            else:
                self.template(("workflow", "output"), output, None, expression=False)

    # ----------------------------------------------------------------------- ids and jumps

    def duplicate_ids(self) -> None:
        seen: dict[str, KeyPath] = {}
        for at, step in walk_steps(self.spec):
            first = seen.setdefault(step.id, at)
            if first is not at:
                self.add(
                    (*at, "id"),
                    f"step id {step.id!r} is already used ({format_path(first)}, "
                    f"{self.line_of((*first, 'id'))}); step ids are unique in the file",
                )
            if step.id == END:
                self.add((*at, "id"), "`end` is the jump that ends the workflow; rename the step")

    def targets(self, scope: _Scope, top: _Scope) -> None:
        for index, step in enumerate(scope.steps):
            at = (*scope.at, index)
            for target, where, at_key in _jumps(step, at):
                self.target(scope, top, target, where, at_key=at_key)
            if isinstance(step, LoopStep):
                self.loop_back(scope, index, step)
            if isinstance(step, ParallelStep):
                for number, branch in enumerate(step.parallel):
                    if branch.next is not None:
                        self.add(
                            (*at, "parallel", number, "next"),
                            "a parallel branch cannot jump: the branches join when all finish; "
                            f"set `next:` on the parallel step {step.id!r} instead",
                        )

    def target(
        self, scope: _Scope, top: _Scope, target: str, at: KeyPath, *, at_key: bool = False
    ) -> None:
        if target == END or target in scope.ids:
            return
        if scope.map_step is not None and target in top.ids:
            message = (
                f"{target!r} is a step outside {scope.name()}; a step of a map jumps only to "
                "the map's own steps or `end` (which ends the item)"
            )
        else:
            hint = did_you_mean(target, scope.ids)
            fix = f"did you mean {hint!r}? " if hint else ""
            message = (
                f"no step {target!r} in {scope.name()}; {fix}(a jump names a step id of the "
                f"same list, or `end`; the steps: {', '.join(scope.ids)})"
            )
        self.add(at, message, at_key=at_key)

    def loop_back(self, scope: _Scope, index: int, step: LoopStep) -> None:
        to = step.loop.to
        at = (*scope.at, index, "loop", "to")
        if to == END:
            self.add(at, "a loop goes back to an earlier step, not to `end`")
        elif to in scope.ids and scope.ids.index(to) >= index:
            self.add(
                at,
                f"a loop goes back to an earlier step; {to!r} is "
                f"{'the loop itself' if to == step.id else 'after it'} (use `next:` or a "
                "`route` to jump forward)",
            )

    def reachable(self, scope: _Scope) -> None:
        known = {*scope.ids, END}
        if any(t not in known for step in scope.steps for t, _, _ in _jumps(step, ())):
            return  # (reported: what can run is known when the jumps are fixed)
        position = {step_id: index for index, step_id in enumerate(scope.ids)}

        def reach(start: int, seen: set[int]) -> None:
            seen.add(start)
            todo = [start]
            while todo:
                index = todo.pop()
                for nxt in _successors(scope.steps[index], index, len(scope.steps), position):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)

        seen: set[int] = set()
        reach(0, seen)
        for index, step in enumerate(scope.steps):
            if index not in seen:
                reach(index, seen)  # the steps after it are reported with it, not each
                self.add(
                    (*scope.at, index, "id"),
                    f"step {step.id!r} can never run: no step that runs goes on to it or jumps "
                    "to it (remove it, or jump to it with `next:`, a `route` or a `loop`)",
                )

    # ----------------------------------------------------------------------- agents and tools

    def names(self, at: KeyPath, step: Any) -> None:
        agent = (
            (step.agent, (*at, "agent"))
            if isinstance(step, AgentStep)
            else (step.choose.agent, (*at, "choose", "agent"))
            if isinstance(step, ChooseStep)
            else None
        )
        if agent is not None and isinstance(agent[0], str) and agent[0] not in self.spec.agents:
            names = sorted(self.spec.agents)
            hint = did_you_mean(agent[0], names)
            fix = (
                f"; did you mean {hint!r}?"
                if hint
                else f"; the agents: {', '.join(names)}"
                if names
                else "; `agents:` declares none"
            )
            self.add(agent[1], f"no agent named {agent[0]!r} in `agents:`{fix}")
        if isinstance(step, ToolStep) and step.tool not in self.tools and not self.open_tools:
            hint = did_you_mean(step.tool, self.tools)
            fix = (
                f"; did you mean {hint!r}?"
                if hint
                else f"; the tools: {', '.join(sorted(self.tools))}"
                if self.tools
                else "; `tools:` declares none"
            )
            self.add((*at, "tool"), f"no tool named {step.tool!r} in `tools:`{fix}")

    # ----------------------------------------------------------------------- templates

    def templates(self, at: KeyPath, step: Any, map_step: MapStep | None) -> None:
        for where, text, expression in _template_fields(step, at):
            self.template(where, text, map_step, expression=expression)
        if isinstance(step, ParallelStep):
            for number, branch in enumerate(step.parallel):
                self.templates((*at, "parallel", number), branch, map_step)
        elif isinstance(step, MapStep):
            self.template((*at, "map", "over"), step.map.over, None, expression=True)

    def template(
        self, at: KeyPath, text: str, map_step: MapStep | None, *, expression: bool
    ) -> None:
        import jinja2
        from jinja2 import nodes

        source = "{{ (" + text + ") }}" if expression else text
        try:
            tree = jinja2.Environment().parse(source)
        except jinja2.TemplateSyntaxError as exc:
            kind = "expression" if expression else "template"
            self.add(at, f"not a valid Jinja {kind}: {exc.message}")
            return
        results = _map_outputs(map_step) if map_step is not None else []
        assigned = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
        reported: set[str] = set()
        for node in tree.find_all(nodes.Name):
            if node.ctx != "load" or node.name in assigned:
                continue
            name = node.name
            if map_step is None and name in (*_MAP_NAMES, "item") and name not in reported:
                reported.add(name)
                self.add(at, f"`{name}` is only set in the steps of a `map`")
        for owner, field in _fields_read(tree):
            key = f"{owner}.{field}"
            if key in reported:
                continue
            reported.add(key)
            if owner == "state" and field not in self.state:
                self.add(at, _unknown("state field", field, sorted(self.state), "`state:`"))
            elif owner == "vars" and field not in self.var_names:
                self.add(at, _unknown("variable", field, self.var_names, "`vars:` or `inputs:`"))
            elif owner == "result" and map_step is not None and field not in results:
                self.add(
                    at,
                    _unknown(
                        "result", field, results, f"the `output:` of map step {map_step.id!r}"
                    ),
                )

    # ----------------------------------------------------------------------- outputs

    def field(self, at: KeyPath, name: str, *, at_key: bool = False) -> StateField | None:
        """The state field `name`, or None after reporting that `state:` lacks it."""
        found = self.state.get(name)
        if found is None:
            self.add(
                at, _unknown("state field", name, sorted(self.state), "`state:`"), at_key=at_key
            )
        return found

    def outputs(self, at: KeyPath, step: Any) -> None:
        if isinstance(step, AgentStep):
            self.agent_output(at, step)
        elif isinstance(step, ToolStep) and step.output is not None:
            if isinstance(step.output, str):
                self.field((*at, "output"), step.output)
            else:
                for name in step.output:
                    self.field((*at, "output", name), name, at_key=True)
        elif isinstance(step, ApprovalStep) and step.approval.field is not None:
            self.field((*at, "approval", "field"), step.approval.field)
        elif isinstance(step, AskStep):
            self.field((*at, "ask", "field"), step.ask.field)
        elif isinstance(step, ChooseStep) and step.choose.output is not None:
            found = self.field((*at, "choose", "output"), step.choose.output)
            if found is not None and found.type not in ("string", "enum"):
                self.add(
                    (*at, "choose", "output"),
                    f"the chosen option's name is text; state field {step.choose.output!r} is "
                    f"`type: {found.type}`",
                )
        elif isinstance(step, MapStep) and step.output is not None:
            found = self.field((*at, "output"), step.output)
            if found is not None and found.type != "list":
                self.add(
                    (*at, "output"),
                    f"a map's output is the list of its items' results; state field "
                    f"{step.output!r} is `type: {found.type}` (make it `type: list`)",
                )
        elif isinstance(step, ParallelStep):
            writers: dict[str, int] = {}
            for number, branch in enumerate(step.parallel):
                branch_at = (*at, "parallel", number)
                self.outputs(branch_at, branch)
                for name, where, at_key in _written(branch, branch_at):
                    first = writers.setdefault(name, number)
                    if first != number:
                        self.add(
                            where,
                            f"state field {name!r} is also written by the parallel branch "
                            f"{step.parallel[first].id!r}; parallel branches write different "
                            "fields",
                            at_key=at_key,
                        )

    def agent_output(self, at: KeyPath, step: AgentStep) -> None:
        output = step.output
        if output is None:
            return
        key = step.agent if isinstance(step.agent, str) else step.id
        agent = self.agents.get(key)
        schema = agent.response_format if agent is not None else None
        if isinstance(output, str):
            found = self.field((*at, "output"), output)
            if found is None or agent is None:
                return
            if schema is None and found.type not in ("string", "enum"):
                self.add(
                    (*at, "output"),
                    f"agent {key!r} answers text (it has no `response_format`); state field "
                    f"{output!r} is `type: {found.type}`",
                )
            elif schema is not None and found.type != "object":
                self.add(
                    (*at, "output"),
                    f"agent {key!r} answers an object (its `response_format`); state field "
                    f"{output!r} is `type: {found.type}` (make it `type: object`, or take one "
                    f"field of the answer with `output: {{{output}: FIELD}}`)",
                )
            return
        for name, answer_field in output.items():
            where = (*at, "output", name)
            found = self.field(where, name, at_key=True)
            if agent is None:
                continue
            if schema is None:
                self.add(
                    where,
                    f"agent {key!r} answers text (it has no `response_format`); "
                    "`{state_field: answer_field}` takes fields of a structured answer",
                )
                return
            properties = schema.get("properties") or {}
            prop = properties.get(answer_field)
            if prop is None:
                self.add(
                    where,
                    _unknown(
                        "answer field",
                        answer_field,
                        sorted(properties),
                        f"the `response_format` of agent {key!r}",
                    ),
                )
                continue
            if found is None or not isinstance(prop, dict):
                continue
            json_type = "string" if "enum" in prop and "type" not in prop else prop.get("type")
            fits = _JSON_TO_STATE.get(json_type) if isinstance(json_type, str) else None
            if fits is not None and found.type not in fits:
                self.add(
                    where,
                    f"answer field {answer_field!r} of agent {key!r} is `type: {json_type}`; "
                    f"state field {name!r} is `type: {found.type}`",
                )


# --------------------------------------------------------------------------- helpers


def _unknown(kind: str, name: str, known: list[str], where: str) -> str:
    hint = did_you_mean(name, known)
    fix = f"; did you mean {hint!r}?" if hint else f" ({', '.join(known)})" if known else ""
    return f"no {kind} {name!r} in {where}{fix}"


def _jumps(step: Any, at: KeyPath) -> Iterator[tuple[str, KeyPath, bool]]:
    """(target, where it is written, whether that place is a key) of each jump of a step."""
    if step.next is not None:
        yield step.next, (*at, "next"), False
    if isinstance(step, RouteStep):
        for number, case in enumerate(step.route):
            yield case.to, (*at, "route", number, "to"), False
    elif isinstance(step, ChooseStep):
        for option in step.choose.options:
            yield option, (*at, "choose", "options", option), True
    elif isinstance(step, LoopStep):
        yield step.loop.to, (*at, "loop", "to"), False
    elif isinstance(step, ApprovalStep) and step.approval.on_reject != "fail":
        yield step.approval.on_reject, (*at, "approval", "on_reject"), False


def _successors(step: Any, index: int, count: int, position: dict[str, int]) -> Iterator[int]:
    """The steps (by position) that may run after `step`."""
    targets: list[str] = []
    falls_through = step.next is None
    if step.next is not None:
        targets.append(step.next)
    if isinstance(step, RouteStep):
        targets += [case.to for case in step.route]
        if step.route[-1].when is None:
            falls_through = False  # a default case: some case always holds
    elif isinstance(step, ChooseStep):
        targets += list(step.choose.options)
        falls_through = False
    elif isinstance(step, LoopStep):
        targets.append(step.loop.to)
    elif isinstance(step, ApprovalStep) and step.approval.on_reject != "fail":
        targets.append(step.approval.on_reject)
    if falls_through and index + 1 < count:
        yield index + 1
    for target in targets:
        if target in position:
            yield position[target]


def _template_fields(step: Any, at: KeyPath) -> Iterator[tuple[KeyPath, str, bool]]:
    """(where, text, is an expression) of each template and expression of one step."""
    if isinstance(step, AgentStep):
        yield (*at, "input"), step.input, False
    elif isinstance(step, ToolStep):
        yield from _string_args(step.args, (*at, "args"))
    elif isinstance(step, ApprovalStep):
        yield (*at, "approval", "question"), step.approval.question, False
    elif isinstance(step, AskStep):
        yield (*at, "ask", "question"), step.ask.question, False
    elif isinstance(step, RouteStep):
        for number, case in enumerate(step.route):
            if case.when is not None:
                yield (*at, "route", number, "when"), case.when, True
    elif isinstance(step, ChooseStep):
        yield (*at, "choose", "input"), step.choose.input, False
    elif isinstance(step, LoopStep):
        yield (*at, "loop", "while"), step.loop.while_, True


def _string_args(value: Any, at: KeyPath) -> Iterator[tuple[KeyPath, str, bool]]:
    if isinstance(value, str):
        yield at, value, False
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _string_args(item, (*at, key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            yield from _string_args(item, (*at, number))


def _fields_read(tree: Any) -> Iterator[tuple[str, str]]:
    """(`state`/`vars`/`result`, field) for each `state.X`, `state['X']`, `state.get('X')`."""
    from jinja2 import nodes

    owners = ("state", "vars", "result")
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        base = node.node
        if not (isinstance(base, nodes.Name) and base.name in owners and base.ctx == "load"):
            continue
        if isinstance(node, nodes.Getattr):
            if node.attr in ("get", "items", "keys", "values"):
                continue
            yield base.name, node.attr
        elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            yield base.name, node.arg.value
    for call in tree.find_all(nodes.Call):
        func = call.node
        if (
            isinstance(func, nodes.Getattr)
            and func.attr == "get"
            and isinstance(func.node, nodes.Name)
            and func.node.name in owners
            and call.args
            and isinstance(call.args[0], nodes.Const)
            and isinstance(call.args[0].value, str)
        ):
            yield func.node.name, call.args[0].value


def _map_outputs(map_step: MapStep) -> list[str]:
    """The keys of a map item's result: the `output:` names of the map's steps."""
    names: list[str] = []
    for step in map_step.map.steps:
        output = getattr(step, "output", None)
        if isinstance(output, str):
            names.append(output)
        elif isinstance(output, dict):
            names += list(output)
    return names


def _written(step: Any, at: KeyPath) -> Iterable[tuple[str, KeyPath, bool]]:
    """(state field, where, at a key) of each field a parallel branch writes."""
    output = getattr(step, "output", None)
    if isinstance(output, str):
        return [(output, (*at, "output"), False)]
    if isinstance(output, dict):
        return [(name, (*at, "output", name), True) for name in output]
    return []
