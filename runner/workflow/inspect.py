"""`agentctl inspect` of a workflow: its steps as text, and as a Mermaid flowchart.

Read from the spec alone (no model, no tool is made), so it works with no API key; the edges are
the ones `runner.workflow.graph` compiles: the next step in the list unless `next:` says
otherwise, the jumps of route, choose, loop and rejected approvals, parallel branches and their
join, a map's item steps in a box of their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

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
    ToolStep,
    WorkflowSpec,
    step_kind,
)

__all__ = ["mermaid", "steps_text"]


def _agent(step: AgentStep | ChooseStep) -> str:
    agent = step.agent if isinstance(step, AgentStep) else step.choose.agent
    return agent if isinstance(agent, str) else f"{step.id} (inline)"


def _output(output: Any, into: str = "state") -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return f" → {into}.{output}"
    return " → " + ", ".join(f"{into}.{k} = {v}" for k, v in output.items())


def _summary(step: Any, into: str = "state") -> str:
    """What a step does, in one line (`into`: where its outputs go, `result` in a map)."""
    if isinstance(step, AgentStep):
        return f"agent {_agent(step)}{_output(step.output, into)}"
    if isinstance(step, ToolStep):
        return f"tool {step.tool}{_output(step.output, into)}"
    if isinstance(step, ApprovalStep):
        a = step.approval
        field = f", shows state.{a.field}" if a.field else ""
        return f"approval {a.question!r}{field}; reject → {a.on_reject}"
    if isinstance(step, AskStep):
        choices = f" ({' / '.join(step.ask.choices)})" if step.ask.choices else ""
        return f"ask {step.ask.question!r}{choices} → state.{step.ask.field}"
    if isinstance(step, RouteStep):
        cases = "; ".join(f"{c.when or 'otherwise'} → {c.to}" for c in step.route)
        return f"route: {cases}"
    if isinstance(step, ChooseStep):
        return f"choose by agent {_agent(step)}: {', '.join(step.choose.options)}"
    if isinstance(step, LoopStep):
        loop = step.loop
        return f"loop back to {loop.to} while {loop.while_} (at most {loop.max} times)"
    if isinstance(step, ParallelStep):
        return "parallel: " + ", ".join(b.id for b in step.parallel)
    if isinstance(step, MapStep):
        spec = step.map
        return (
            f"map over {spec.over} as {spec.as_}, {spec.concurrency} at once{_output(step.output)}"
        )
    return str(step_kind(step))


def _lines(steps: Sequence[Any], indent: str, into: str = "state") -> Iterator[str]:
    width = max(len(s.id) for s in steps)
    for number, step in enumerate(steps, 1):
        jump = f"  (then {step.next})" if step.next else ""
        yield f"{indent}{number}. {step.id:<{width}}  {_summary(step, into)}{jump}"
        if step.description:
            yield f"{indent}   {'':<{width}}  {step.description}"
        if isinstance(step, ParallelStep):
            yield from _lines(step.parallel, indent + "     ")
        elif isinstance(step, MapStep):
            yield from _lines(step.map.steps, indent + "     ", "result")


def steps_text(spec: WorkflowSpec) -> str:
    """The workflow as `agentctl inspect` prints it."""
    lines = [f"workflow    {spec.name}" + (f"  ({spec.source})" if spec.source else "")]
    if spec.description:
        lines.append(f"            {spec.description}")
    if spec.inputs:
        lines.append("inputs      " + ", ".join(spec.inputs))
    for index, (name, field) in enumerate(spec.state.items()):
        about = f"  {field.description}" if field.description else ""
        lines.append(f"{'state' if index == 0 else '':<12}{name}: {field.type}{about}")
    specs = spec.agent_specs()
    for index, key in enumerate(sorted(specs)):
        model = specs[key].model
        shown = f" ({model.id})" if model is not None else ""
        lines.append(f"{'agents' if index == 0 else '':<12}{key}{shown}")
    if spec.tools:
        names = [_tool_name(t) for t in spec.tools]
        lines.append("tools       " + ", ".join(names))
    lines.append("steps")
    lines.extend(_lines(spec.workflow.steps, "  "))
    output = spec.workflow.output
    lines.append(f"output      {output if output is not None else '(the last output written)'}")
    return "\n".join(lines)


def _tool_name(entry: Any) -> str:
    """A `tools:` entry as a name: its `name:`, or what it names (`module:function`'s function,
    an MCP server's name)."""
    if getattr(entry, "name", None):
        return str(entry.name)
    for key in ("import_", "http", "openapi", "script", "mcp"):
        value = getattr(entry, key, None)
        if isinstance(value, str):
            return value.rpartition(":")[2]
        if value is not None:
            return str(getattr(value, "name", None) or key)
    return "?"


# --------------------------------------------------------------------------- mermaid


def _label(text: str) -> str:
    return text.replace('"', "#quot;").replace("\n", " ")


def _node(step: Any) -> str:
    kind = step_kind(step) or "step"
    text = _label(f"{step.id}<br/>{kind}" + (f" {_agent(step)}" if kind == "agent" else ""))
    if isinstance(step, RouteStep | ChooseStep | LoopStep):
        return f'{step.id}{{"{text}"}}'
    if isinstance(step, ApprovalStep | AskStep):
        return f'{step.id}[/"{text}"/]'
    return f'{step.id}["{text}"]'


def _flow(steps: Sequence[Any], end: str, out: list[str], indent: str) -> None:
    ids = [s.id for s in steps]

    def follows(index: int) -> str:
        step = steps[index]
        if step.next is not None:
            return end if step.next == END else step.next
        return ids[index + 1] if index + 1 < len(ids) else end

    def target(name: str) -> str:
        return end if name == END else name

    for index, step in enumerate(steps):
        after = follows(index)
        out.append(f"{indent}{_node(step)}")
        if isinstance(step, RouteStep):
            for case in step.route:
                out.append(
                    f'{indent}{step.id} -->|"{_label(case.when or "otherwise")}"| {target(case.to)}'
                )
            out.append(f"{indent}{step.id} -.-> {after}")
        elif isinstance(step, ChooseStep):
            for option in step.choose.options:
                out.append(f'{indent}{step.id} -->|"{_label(option)}"| {target(option)}')
        elif isinstance(step, LoopStep):
            loop = step.loop
            why = _label(f"{loop.while_} (max {loop.max})")
            out.append(f'{indent}{step.id} -->|"{why}"| {target(loop.to)}')
            out.append(f"{indent}{step.id} --> {after}")
        elif isinstance(step, ApprovalStep):
            out.append(f'{indent}{step.id} -->|"approve"| {after}')
            if step.approval.on_reject != "fail":
                out.append(f'{indent}{step.id} -->|"reject"| {target(step.approval.on_reject)}')
        elif isinstance(step, ParallelStep):
            join = f"{step.id}_join"
            out.append(f"{indent}{join}(( ))")
            for branch in step.parallel:
                out.append(f"{indent}{_node(branch)}")
                out.append(f"{indent}{step.id} --> {branch.id}")
                out.append(f"{indent}{branch.id} --> {join}")
            out.append(f"{indent}{join} --> {after}")
        elif isinstance(step, MapStep):
            box = f"{step.id}_items"
            out.append(f'{indent}subgraph {box}["each {_label(step.map.over)}"]')
            item_end = f"{step.id}_item_end"
            out.append(f"{indent}  {item_end}(( ))")
            _flow(step.map.steps, item_end, out, indent + "  ")
            out.append(f"{indent}end")
            out.append(f"{indent}{step.id} --> {step.map.steps[0].id}")
            out.append(f"{indent}{item_end} --> {after}")
        else:
            out.append(f"{indent}{step.id} --> {after}")


def mermaid(spec: WorkflowSpec) -> str:
    """The workflow as a Mermaid flowchart (`agentctl inspect --mermaid`)."""
    out = ["flowchart TD", "  start([start])", "  finish([end])"]
    out.append(f"  start --> {spec.workflow.steps[0].id}")
    _flow(spec.workflow.steps, "finish", out, "  ")
    return "\n".join(out)
