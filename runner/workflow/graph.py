"""WorkflowSpec -> LangGraph `StateGraph`: one node per step, named by its id.

The graph's state is `WorkflowState`: `vars` (inputs and vars), `state` (the declared fields, each
step writing its outputs into it), `loops` (how often each loop went back), `trail` (the ids of
the steps that finished, in order: `threads fork --at` and `agentctl test` read it), `items` (a
running map's results) and `output` (the workflow's result, set by the `output.` node every path
ends in).

How each kind of step runs:

- agent: the agent's compiled graph is invoked inside the step's node, so it is a subgraph with
  its own checkpoint namespace (`draft:<task id>`): a crash mid-agent resumes mid-agent, its
  events stream with that namespace, and its approvals are the workflow's interrupts.
- tool: the tool is called with the rendered `args:`; the result is journaled in the thread's
  tool journal (the one agents' tool calls use) before the step returns, so a tool step that
  finished is not called again when a crash came before its checkpoint.
- approval / ask: `interrupt()` with the payload agents' approvals (`action_requests` /
  `review_configs`) and `ask_user` questions use, so `runner.run.answers`, the CLI's flags, the
  terminal and a LangGraph server's clients answer them unchanged.
- route / choose / loop: the node returns `Command(goto=...)`.
- parallel: the branches are nodes of their own after the parallel step's node, joined by
  `<id>.join`.
- map: `Send` per item to `<id>.item`, whose node runs the item's steps (a graph of their own,
  compiled like this one) as a subgraph: each item checkpoints under its own task, and an item
  that finished keeps its saved result when a crash stops its siblings. Every item waits on a
  semaphore of the map (its `concurrency`) before it starts; LangGraph's `max_concurrency` would
  bound the whole superstep, agents' tool calls included.

Each step reports `{"agentctl": "step_start" | "step_end", ...}` on the custom stream, which
`runner.run.translate` turns into `StepStart` / `StepEnd` events.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from runner.errors import RunError
from runner.spec.workflow import (
    END as END_TARGET,
)
from runner.spec.workflow import (
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
from runner.workflow.templates import evaluate, render, render_args

if TYPE_CHECKING:
    from langchain_core.runnables import Runnable, RunnableConfig
    from langchain_core.tools import BaseTool
    from langgraph.graph.state import CompiledStateGraph

__all__ = [
    "ITEM_SUFFIX",
    "JOIN_SUFFIX",
    "OUTPUT_NODE",
    "WorkflowState",
    "agent_key",
    "compile_workflow",
    "step_of_node",
]

OUTPUT_NODE = "output."
"""The node every path ends in: it sets `output` (a `.` keeps it apart from step ids)."""
INPUT_NODE = "input."
"""The node every run starts with: the spec's `vars` under the input's, each state field's
`default` where the input gives no value (so `{}` is a valid input, as a server's client may
send)."""
ITEM_SUFFIX = ".item"
"""`<map id>.item`: the node that runs one item of a map."""
JOIN_SUFFIX = ".join"
"""`<id>.join`: where a parallel step's branches or a map's items meet."""
STEP_EVENT = "agentctl"
"""The key of a step's event on the custom stream (as `runner.events.emit_warning` uses)."""


def _merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    return {**(left or {}), **(right or {})}


def _merge_items(
    left: dict[str, Any] | None, right: dict[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """A map's results: `{"count": n}` starts a map again, `{"results": {i: r}}` adds items."""
    merged = dict(left or {})
    for map_id, part in (right or {}).items():
        if "count" in part:
            merged[map_id] = {"count": part["count"], "results": {}}
        else:
            current = merged.get(map_id) or {"count": 0, "results": {}}
            merged[map_id] = {**current, "results": {**current["results"], **part["results"]}}
    return merged


def _last(left: Any, right: Any) -> Any:
    return right


def _add_counts(left: dict[str, int] | None, right: dict[str, int] | None) -> dict[str, int]:
    merged = dict(left or {})
    for key, count in (right or {}).items():
        merged[key] = merged.get(key, 0) + count
    return merged


class WorkflowState(TypedDict, total=False):
    """A workflow thread's values (see the module docstring)."""

    vars: dict[str, Any]
    state: Annotated[dict[str, Any], _merge]
    loops: Annotated[dict[str, int], _merge]
    trail: Annotated[list[str], operator.add]
    items: Annotated[dict[str, Any], _merge_items]
    runs: Annotated[dict[str, int], _add_counts]
    """Agent key -> how many runs of it the workflow's steps started: a replayed agent's next
    step plays the next run of its replies, after a restart too (`runner.replay.calls`)."""
    output: Annotated[Any, _last]
    """The last output a step wrote (a parallel step's: its branches' outputs by step id), then
    the workflow's result."""


class ItemState(TypedDict, total=False):
    """One map item's values: the workflow's `vars` and `state` as the map found them, the item,
    its index, and `result` (the item steps' outputs)."""

    vars: dict[str, Any]
    state: dict[str, Any]
    item: Any
    index: int
    result: Annotated[dict[str, Any], _merge]
    runs: dict[str, int]
    """The run of its agent's replies the item's first step plays (see `WorkflowState.runs`)."""


def agent_key(step: AgentStep | ChooseStep) -> str:
    """The key of the agent a step runs: its name in `agents:`, or the step's id for an agent
    written in the step."""
    agent = step.agent if isinstance(step, AgentStep) else step.choose.agent
    return agent if isinstance(agent, str) else step.id


def step_of_node(node: str) -> str:
    """The step id a node of the workflow graph belongs to."""
    for suffix in (ITEM_SUFFIX, JOIN_SUFFIX):
        if node.endswith(suffix):
            return node[: -len(suffix)]
    return node


# --------------------------------------------------------------------------- events


def _emit(data: dict[str, Any]) -> None:
    from langgraph.config import get_stream_writer

    try:
        writer = get_stream_writer()
    except RuntimeError:  # not inside a streamed run
        return
    writer({STEP_EVENT: data.pop("event"), **data})


def _start(step_id: str, kind: str) -> float:
    _emit({"event": "step_start", "step": step_id, "kind": kind})
    return time.monotonic()


def _end(step_id: str, started: float, status: str, output: Any = None) -> None:
    data: dict[str, Any] = {
        "event": "step_end",
        "step": step_id,
        "status": status,
        "seconds": round(time.monotonic() - started, 3),
    }
    if output is not None:
        data["output"] = output
    _emit(data)


class _Reported:
    """Reports a step's end however its node leaves: done, waiting for a person, or failed."""

    def __init__(self, step_id: str, kind: str) -> None:
        self.step_id, self.kind = step_id, kind
        self.output: Any = None

    def __enter__(self) -> _Reported:
        self.started = _start(self.step_id, self.kind)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        from langgraph.errors import GraphBubbleUp

        if exc is None:
            _end(self.step_id, self.started, "done", self.output)
        elif isinstance(exc, GraphBubbleUp):
            _end(self.step_id, self.started, "waiting")
        else:
            _end(self.step_id, self.started, "failed")


# --------------------------------------------------------------------------- outputs


def _answer(result: Mapping[str, Any]) -> Any:
    """An agent's answer: its structured response as a mapping, else its last reply's text."""
    from runner.threads.transcripts import text_of

    structured = result.get("structured_response")
    if structured is not None:
        return structured.model_dump() if hasattr(structured, "model_dump") else structured
    messages = result.get("messages") or []
    last = next((m for m in reversed(messages) if m.type == "ai"), None)
    return text_of(last.content) if last is not None else ""


def _tool_value(result: Any) -> Any:
    """A tool's result as a value: JSON text parsed, a ToolMessage's content read."""
    import json

    content = getattr(result, "content", result)
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def _spread(output: str | dict[str, str] | None, value: Any, where: str) -> dict[str, Any]:
    """The state fields a step's `output:` writes from its value."""
    if output is None:
        return {}
    if isinstance(output, str):
        return {output: value}
    if not isinstance(value, Mapping):
        raise RunError(
            f"{where}: `output:` picks fields of the answer, but the answer is "
            f"{type(value).__name__}, not an object"
        )
    return {field: value.get(answer_field) for field, answer_field in output.items()}


# --------------------------------------------------------------------------- the compiler


class _Level:
    """Where a step list lives: the workflow (outputs go to `state`) or a map's item (outputs go
    to the item's `result`)."""

    def __init__(self, *, item_name: str | None = None) -> None:
        self.item_name = item_name

    @property
    def is_item(self) -> bool:
        return self.item_name is not None

    def scope(self, values: Mapping[str, Any]) -> dict[str, Any]:
        scope = {"vars": values.get("vars") or {}, "state": values.get("state") or {}}
        if self.item_name is not None:
            scope[self.item_name] = values.get("item")
            scope["item"] = values.get("item")
            scope["index"] = values.get("index")
            scope["result"] = values.get("result") or {}
        return scope

    def write(
        self,
        fields: dict[str, Any],
        step_id: str,
        last: Any,
        agent: str | None = None,
        *,
        branch: bool = False,
    ) -> dict[str, Any]:
        if self.item_name is not None:
            return {"result": fields}
        update: dict[str, Any] = {"state": fields, "trail": [step_id]}
        if agent is not None:
            update["runs"] = {agent: 1}
        if fields and not branch:
            update["output"] = last
        return update

    @property
    def end(self) -> str:
        from langgraph.graph import END

        return END if self.is_item else OUTPUT_NODE


class _Compiler:
    def __init__(
        self,
        spec: WorkflowSpec,
        agents: Mapping[str, Runnable[Any, Any]],
        tools: Mapping[str, BaseTool],
        choosers: Mapping[str, Runnable[Any, Any]],
    ) -> None:
        self.spec = spec
        self.agents = agents
        self.tools = tools
        self.choosers = choosers
        self._semaphores: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------- graph shape

    def graph(self, steps: Sequence[Any], level: _Level) -> Any:
        from langgraph.graph import START, StateGraph

        schema: Any = ItemState if level.is_item else WorkflowState
        builder: Any = StateGraph(schema)
        ids = [s.id for s in steps]

        def follows(index: int) -> str:
            step = steps[index]
            if step.next is not None:
                return level.end if step.next == END_TARGET else step.next
            return ids[index + 1] if index + 1 < len(ids) else level.end

        def target(name: str) -> str:
            return level.end if name == END_TARGET else name

        if level.is_item:
            builder.add_edge(START, ids[0])
        else:
            builder.add_node(INPUT_NODE, self._input_node())
            builder.add_edge(START, INPUT_NODE)
            builder.add_edge(INPUT_NODE, ids[0])
        for index, step in enumerate(steps):
            after = follows(index)
            if isinstance(step, AgentStep | ToolStep):
                builder.add_node(step.id, self._work_node(step, level, first=index == 0))
                builder.add_edge(step.id, after)
            elif isinstance(step, ApprovalStep | AskStep):
                ends = [after]
                if isinstance(step, ApprovalStep) and step.approval.on_reject != "fail":
                    ends.append(target(step.approval.on_reject))
                builder.add_node(step.id, self._person_node(step, after, target), destinations=ends)
            elif isinstance(step, RouteStep):
                ends = [after, *(target(c.to) for c in step.route)]
                node = self._route_node(step, level, after, target)
                builder.add_node(step.id, node, destinations=ends)
            elif isinstance(step, ChooseStep):
                ends = [target(o) for o in step.choose.options]
                node = self._choose_node(step, level, target, first=index == 0)
                builder.add_node(step.id, node, destinations=ends)
            elif isinstance(step, LoopStep):
                ends = [after, target(step.loop.to)]
                builder.add_node(step.id, self._loop_node(step, after, target), destinations=ends)
            elif isinstance(step, ParallelStep):
                join = step.id + JOIN_SUFFIX
                builder.add_node(step.id, self._fork_node(step))
                seen: list[str] = []
                for branch in step.parallel:
                    key = agent_key(branch) if isinstance(branch, AgentStep) else branch.id
                    node = self._work_node(branch, level, offset=seen.count(key), branch=True)
                    seen.append(key)
                    builder.add_node(branch.id, node)
                    builder.add_edge(step.id, branch.id)
                builder.add_node(join, self._join_node(step))
                builder.add_edge([b.id for b in step.parallel], join)
                builder.add_edge(join, after)
            elif isinstance(step, MapStep):
                item, join = step.id + ITEM_SUFFIX, step.id + JOIN_SUFFIX
                builder.add_node(step.id, self._map_node(step, level), destinations=[item, join])
                builder.add_node(item, self._item_node(step))
                builder.add_node(join, self._map_join_node(step, level))
                builder.add_edge(item, join)
                builder.add_edge(join, after)
            else:  # the spec's union is closed; a new kind must be compiled here
                raise RunError(f"step {step.id!r}: cannot run a step of kind {step_kind(step)!r}")
        if not level.is_item:
            builder.add_node(OUTPUT_NODE, self._output_node())
        return builder

    # ------------------------------------------------------------------- agent and tool

    def _work_node(
        self,
        step: AgentStep | ToolStep,
        level: _Level,
        *,
        offset: int = 0,
        first: bool = False,
        branch: bool = False,
    ) -> Any:
        if isinstance(step, AgentStep):
            return self._agent_node(step, level, offset=offset, first=first, branch=branch)
        return self._tool_node(step, level, branch=branch)

    def _agent_node(
        self, step: AgentStep, level: _Level, *, offset: int, first: bool, branch: bool
    ) -> Any:
        from langchain_core.messages import HumanMessage

        key = agent_key(step)
        graph = self.agents[key]

        def prepare(values: Mapping[str, Any]) -> tuple[dict[str, Any], _Replay]:
            text = render(step.input, level.scope(values), where=f"step {step.id!r} input")
            run = _run_number(values, key, level, offset=offset, first=first)
            replay = _Replay(key, _call_id(step.id, values, level), text, run)
            return {"messages": [HumanMessage(content=text)]}, replay

        def finish(result: Mapping[str, Any], report: _Reported) -> dict[str, Any]:
            answer = _answer(result)
            report.output = answer
            fields = _spread(step.output, answer, f"step {step.id!r}")
            return level.write(fields, step.id, answer, agent=key, branch=branch)

        def run(values: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            with _Reported(step.id, "agent") as report:
                message, replay = prepare(values)
                with replay:
                    return finish(graph.invoke(message, config), report)

        async def arun(values: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            with _Reported(step.id, "agent") as report:
                message, replay = prepare(values)
                with replay:
                    return finish(await graph.ainvoke(message, config), report)

        return _node(step.id, run, arun)

    def _tool_node(self, step: ToolStep, level: _Level, *, branch: bool) -> Any:
        tool = self.tools[step.tool]

        def prepare(values: Mapping[str, Any], config: RunnableConfig) -> tuple[Any, Any]:
            args = render_args(step.args, level.scope(values), where=f"step {step.id!r} args")
            return args, _journal_entry(config, step.id)

        def finish(result: Any, report: _Reported) -> dict[str, Any]:
            value = _tool_value(result)
            report.output = value
            fields = _spread(step.output, value, f"step {step.id!r}")
            return level.write(fields, step.id, value, branch=branch)

        def run(values: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            with _Reported(step.id, "tool") as report:
                args, entry = prepare(values, config)
                found = entry.lookup() if entry is not None else None
                if found is not None:
                    return finish(found, report)
                result = tool.invoke(args)
                if entry is not None:
                    entry.record(result)
                return finish(result, report)

        async def arun(values: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            with _Reported(step.id, "tool") as report:
                args, entry = prepare(values, config)
                found = await entry.alookup() if entry is not None else None
                if found is not None:
                    return finish(found, report)
                result = await tool.ainvoke(args)
                if entry is not None:
                    await entry.arecord(result)
                return finish(result, report)

        return _node(step.id, run, arun)

    # ------------------------------------------------------------------- people

    def _person_node(
        self, step: ApprovalStep | AskStep, after: str, target: Callable[[str], str]
    ) -> Any:
        from langgraph.types import Command, interrupt

        from runner.middleware.ask_user import answer_of, ask_user_request

        def run(values: Mapping[str, Any]) -> Any:
            scope = _Level().scope(values)
            with _Reported(step.id, "ask" if isinstance(step, AskStep) else "approval") as report:
                if isinstance(step, AskStep):
                    ask = step.ask
                    question = render(ask.question, scope, where=f"step {step.id!r} question")
                    answer = answer_of(interrupt(ask_user_request(question, ask.choices, step.id)))
                    report.output = answer
                    return Command(
                        update={"state": {ask.field: answer}, "trail": [step.id]}, goto=after
                    )
                resume = interrupt(self._request(step, scope))
                return self._approval(step, after, target, resume, report)

        return _node(step.id, run, None)

    def _request(self, step: ApprovalStep, scope: dict[str, Any]) -> dict[str, Any]:
        """An approval's interrupt value, shaped as an agent's approval of one tool call named
        by the step id, whose argument is the field shown (edit replaces it)."""
        approval = step.approval
        question = render(approval.question, scope, where=f"step {step.id!r} question")
        args = {approval.field: scope["state"].get(approval.field)} if approval.field else {}
        return {
            "action_requests": [
                {"name": step.id, "args": args, "description": question, "id": step.id}
            ],
            "review_configs": [
                {"action_name": step.id, "allowed_decisions": list(approval.decisions)}
            ],
        }

    def _approval(
        self,
        step: ApprovalStep,
        after: str,
        target: Callable[[str], str],
        resume: Any,
        report: _Reported,
    ) -> Any:
        from langgraph.types import Command

        approval = step.approval
        decisions = resume.get("decisions") if isinstance(resume, dict) else None
        decision: dict[str, Any] = decisions[0] if decisions else {"type": "approve"}
        kind = decision.get("type", "approve")
        report.output = kind
        update: dict[str, Any] = {"trail": [step.id]}
        if kind == "edit" and approval.field:
            edited = (decision.get("edited_action") or {}).get("args") or {}
            if approval.field in edited:
                update["state"] = {approval.field: edited[approval.field]}
        if kind != "reject":
            return Command(update=update, goto=after)
        if approval.on_reject == "fail":
            why = decision.get("message")
            raise RunError(f"step {step.id!r} was rejected" + (f": {why}" if why else ""))
        return Command(update=update, goto=target(approval.on_reject))

    # ------------------------------------------------------------------- jumps

    def _route_node(
        self, step: RouteStep, level: _Level, after: str, target: Callable[[str], str]
    ) -> Any:
        from langgraph.types import Command

        def run(values: Mapping[str, Any]) -> Any:
            scope = level.scope(values)
            with _Reported(step.id, "route") as report:
                goto = after
                for number, case in enumerate(step.route):
                    where = f"step {step.id!r} route[{number}].when"
                    if case.when is None or evaluate(case.when, scope, where=where):
                        goto = target(case.to)
                        break
                report.output = step_of_node(goto) if goto != OUTPUT_NODE else END_TARGET
                update = level.write({}, step.id, None)
                return Command(update=update, goto=goto)

        return _node(step.id, run, None)

    def _loop_node(self, step: LoopStep, after: str, target: Callable[[str], str]) -> Any:
        from langgraph.types import Command

        loop = step.loop

        def run(values: Mapping[str, Any]) -> Any:
            count = (values.get("loops") or {}).get(step.id, 0)
            with _Reported(step.id, "loop") as report:
                scope = _Level().scope(values)
                again = evaluate(loop.while_, scope, where=f"step {step.id!r} while")
                update: dict[str, Any] = {"trail": [step.id]}
                if again and count < loop.max:
                    report.output = f"again ({count + 1} of {loop.max})"
                    return Command(
                        update={**update, "loops": {step.id: count + 1}}, goto=target(loop.to)
                    )
                if again and loop.on_max == "fail":
                    raise RunError(
                        f"step {step.id!r}: the loop went back {loop.max} times (its `max`) and "
                        f"`{loop.while_}` still holds"
                    )
                report.output = "done"
                return Command(update={**update, "loops": {step.id: 0}}, goto=after)

        return _node(step.id, run, None)

    def _choose_node(
        self, step: ChooseStep, level: _Level, target: Callable[[str], str], *, first: bool
    ) -> Any:
        from langchain_core.messages import HumanMessage
        from langgraph.types import Command

        choose = step.choose
        graph = self.choosers[step.id]
        key = agent_key(step)

        def prepare(values: Mapping[str, Any]) -> tuple[dict[str, Any], _Replay]:
            text = render(choose.input, level.scope(values), where=f"step {step.id!r} input")
            listed = "\n".join(f"- {name}: {why}" for name, why in choose.options.items())
            text += f"\n\nChoose one of these options (answer with its name):\n{listed}"
            run = _run_number(values, key, level, offset=0, first=first)
            replay = _Replay(key, _call_id(step.id, values, level), text, run)
            return {"messages": [HumanMessage(content=text)]}, replay

        def finish(result: Mapping[str, Any], report: _Reported) -> Any:
            answer = _answer(result)
            choice = answer.get("choice") if isinstance(answer, Mapping) else answer
            if choice not in choose.options:
                raise RunError(
                    f"step {step.id!r}: the agent chose {choice!r}, not one of "
                    + ", ".join(repr(o) for o in choose.options)
                )
            report.output = choice
            fields = {choose.output: choice} if choose.output else {}
            update = level.write(fields, step.id, choice, agent=key)
            return Command(update=update, goto=target(choice))

        def run(values: Mapping[str, Any], config: RunnableConfig) -> Any:
            with _Reported(step.id, "choose") as report:
                message, replay = prepare(values)
                with replay:
                    return finish(graph.invoke(message, config), report)

        async def arun(values: Mapping[str, Any], config: RunnableConfig) -> Any:
            with _Reported(step.id, "choose") as report:
                message, replay = prepare(values)
                with replay:
                    return finish(await graph.ainvoke(message, config), report)

        return _node(step.id, run, arun)

    # ------------------------------------------------------------------- parallel

    def _fork_node(self, step: ParallelStep) -> Any:
        def run(values: Mapping[str, Any]) -> dict[str, Any]:
            _start(step.id, "parallel")
            return {}

        return _node(step.id, run, None)

    def _join_node(self, step: ParallelStep) -> Any:
        def run(values: Mapping[str, Any]) -> dict[str, Any]:
            _end(step.id, time.monotonic(), "done")
            state = values.get("state") or {}
            outputs = {
                branch.id: {f: state.get(f) for f in _fields(branch.output)}
                for branch in step.parallel
                if branch.output
            }
            return {"trail": [step.id], "output": outputs}

        return _node(step.id + JOIN_SUFFIX, run, None)

    # ------------------------------------------------------------------- map

    def _map_node(self, step: MapStep, level: _Level) -> Any:
        from langgraph.types import Command, Send

        def run(values: Mapping[str, Any]) -> Any:
            _start(step.id, "map")
            items = evaluate(step.map.over, level.scope(values), where=f"step {step.id!r} over")
            if items is None:
                items = []
            if not isinstance(items, list | tuple):
                raise RunError(
                    f"step {step.id!r}: `over: {step.map.over}` is {type(items).__name__}, "
                    "not a list"
                )
            update = {"items": {step.id: {"count": len(items)}}}
            if not items:
                return Command(update=update, goto=step.id + JOIN_SUFFIX)
            shared = {"vars": values.get("vars") or {}, "state": values.get("state") or {}}
            first = _first_agent(step)
            base = (values.get("runs") or {}).get(first, 0) if first else 0
            sends = [
                Send(
                    step.id + ITEM_SUFFIX,
                    {
                        **shared,
                        "item": item,
                        "index": index,
                        "runs": {first: base + index} if first else {},
                    },
                )
                for index, item in enumerate(items)
            ]
            return Command(update=update, goto=sends)

        return _node(step.id, run, None)

    def _semaphore(self, step: MapStep, config: RunnableConfig, kind: str) -> Any:
        """The map's limit on items at once, per thread and map (an asyncio one per loop)."""
        thread = (config.get("configurable") or {}).get("thread_id")
        loop = id(asyncio.get_running_loop()) if kind == "async" else None
        key = (thread, step.id, kind, loop)
        with self._lock:
            found = self._semaphores.get(key)
            if found is None:
                limit = step.map.concurrency
                found = asyncio.Semaphore(limit) if kind == "async" else threading.Semaphore(limit)
                self._semaphores[key] = found
            return found

    def _item_node(self, step: MapStep) -> Any:
        item_level = _Level(item_name=step.map.as_)
        graph = self.graph(step.map.steps, item_level).compile(name=step.id + ITEM_SUFFIX)

        def finish(payload: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
            return {"items": {step.id: {"results": {payload["index"]: result.get("result", {})}}}}

        def run(payload: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            with self._semaphore(step, config, "sync"):
                return finish(payload, graph.invoke({**payload, "result": {}}, config))

        async def arun(payload: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            async with self._semaphore(step, config, "async"):
                return finish(payload, await graph.ainvoke({**payload, "result": {}}, config))

        return _node(step.id + ITEM_SUFFIX, run, arun)

    def _map_join_node(self, step: MapStep, level: _Level) -> Any:
        def run(values: Mapping[str, Any]) -> dict[str, Any]:
            started = time.monotonic()
            found = (values.get("items") or {}).get(step.id) or {"count": 0, "results": {}}
            results = [found["results"].get(i, {}) for i in range(found["count"])]
            _end(step.id, started, "done", f"{len(results)} items")
            fields = {step.output: results} if step.output else {}
            update = level.write(fields, step.id, results)
            first = _first_agent(step)
            if first and found["count"]:
                update["runs"] = {first: found["count"]}
            return update

        return _node(step.id + JOIN_SUFFIX, run, None)

    # ------------------------------------------------------------------- output

    def _input_node(self) -> Any:
        spec = self.spec

        def run(values: Mapping[str, Any]) -> dict[str, Any]:
            state = values.get("state") or {}
            defaults = {
                name: field.default
                for name, field in spec.state.items()
                if field.default is not None and name not in state
            }
            return {"vars": {**spec.vars, **(values.get("vars") or {})}, "state": defaults}

        return _node(INPUT_NODE, run, None)

    def _output_node(self) -> Any:
        output = self.spec.workflow.output

        def run(values: Mapping[str, Any]) -> dict[str, Any]:
            state = values.get("state") or {}
            if output is None:
                return {"output": values.get("output")}
            if output in state or output in self.spec.state:
                return {"output": state.get(output)}
            scope = {"vars": values.get("vars") or {}, "state": state}
            return {"output": render(output, scope, where="workflow.output")}

        return _node(OUTPUT_NODE, run, None)


def _fields(output: str | dict[str, str] | None) -> list[str]:
    """The state fields a step's `output:` writes."""
    if output is None:
        return []
    return [output] if isinstance(output, str) else list(output)


def _first_agent(step: MapStep) -> str | None:
    """The agent of a map's first item step, which every item runs once."""
    first = step.map.steps[0]
    return agent_key(first) if isinstance(first, AgentStep | ChooseStep) else None


def _run_number(
    values: Mapping[str, Any], key: str, level: _Level, *, offset: int, first: bool
) -> int | None:
    """Which run of agent `key`'s replies this step plays (see `WorkflowState.runs`): at the
    workflow's level the runs counted so far (plus the branches before it in a parallel step);
    a map item's first step the one its map gave it; other item steps: not known (None)."""
    runs = values.get("runs") or {}
    if level.is_item:
        return runs.get(key) if first else None
    return runs.get(key, 0) + offset


def _call_id(step_id: str, values: Mapping[str, Any], level: _Level) -> str:
    """The id a replayed agent sees for this run of a step: the step's id, and in a map the
    item's index too, so items that reach one step each play a run of replies of their own."""
    return f"{step_id}[{values.get('index')}]" if level.is_item else step_id


class _Replay:
    """While an agent step runs: which run of a replayed agent's replies it plays (a leaf
    contextvar the replay model reads, as a subagent's `task` call sets it)."""

    def __init__(self, key: str, step_id: str, text: str, run: int | None) -> None:
        from runner.replay.calls import TaskCall

        self.call = TaskCall(subagent=key, id=step_id, description=text, siblings=(), run=run)

    def __enter__(self) -> None:
        from runner.replay.calls import TASK_CALL

        self.token = TASK_CALL.set(self.call)

    def __exit__(self, *exc: object) -> None:
        from runner.replay.calls import TASK_CALL

        TASK_CALL.reset(self.token)


def _node(name: str, func: Callable[..., Any], afunc: Callable[..., Any] | None) -> Any:
    from langgraph._internal._runnable import RunnableCallable

    if afunc is None:
        return RunnableCallable(func, name=name, trace=False)
    return RunnableCallable(func, afunc, name=name, trace=False)


# --------------------------------------------------------------------------- tool journal


class _JournalEntry:
    """A tool step's place in the thread's tool journal (`runner.middleware.journal`)."""

    def __init__(self, journal: Any, thread_id: str, call_id: str) -> None:
        self.journal, self.thread_id, self.call_id = journal, thread_id, call_id

    def lookup(self) -> Any:
        from runner.threads.guards import AsyncToolJournal

        if isinstance(self.journal, AsyncToolJournal):
            return None
        return self.journal.lookup(self.thread_id, "workflow", self.call_id)

    def record(self, result: Any) -> None:
        from runner.threads.guards import AsyncToolJournal

        if not isinstance(self.journal, AsyncToolJournal):
            self.journal.record(self.thread_id, "workflow", self.call_id, result)

    async def alookup(self) -> Any:
        from runner.threads.guards import AsyncToolJournal

        if isinstance(self.journal, AsyncToolJournal):
            return await self.journal.alookup(self.thread_id, "workflow", self.call_id)
        return await asyncio.to_thread(self.lookup)

    async def arecord(self, result: Any) -> None:
        from runner.threads.guards import AsyncToolJournal

        if isinstance(self.journal, AsyncToolJournal):
            await self.journal.arecord(self.thread_id, "workflow", self.call_id, result)
        else:
            await asyncio.to_thread(self.record, result)


def _journal_entry(config: RunnableConfig, step_id: str) -> _JournalEntry | None:
    """The journal entry of this run of a tool step: keyed by the step's task (its checkpoint
    namespace), which a re-run of the same step after a crash shares and a later run of the
    step (a loop going back) does not."""
    from runner.middleware.journal import CHECKPOINTER_KEY, journal_for

    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    namespace = configurable.get("checkpoint_ns")
    journal = journal_for(configurable.get(CHECKPOINTER_KEY))
    if journal is None or not thread_id or not namespace:
        return None
    return _JournalEntry(journal, str(thread_id), f"{namespace}")


# --------------------------------------------------------------------------- entry point


def compile_workflow(
    spec: WorkflowSpec,
    *,
    agents: Mapping[str, Runnable[Any, Any]],
    tools: Mapping[str, BaseTool],
    choosers: Mapping[str, Runnable[Any, Any]] | None = None,
    checkpointer: Any = None,
    store: Any = None,
) -> CompiledStateGraph:
    """Compile `spec` with its agents' compiled graphs (by agent key, see `agent_key`), the
    tools its tool steps call (by name) and, for each `choose` step (by step id), the agent
    graph that answers with `{"choice": option}`. The agents' graphs should be compiled
    without a checkpointer of their own: as subgraphs they use the workflow's."""
    compiler = _Compiler(spec, agents, tools, choosers or {})
    builder = compiler.graph(spec.workflow.steps, _Level())
    from langgraph.graph import END

    builder.add_edge(OUTPUT_NODE, END)
    return builder.compile(checkpointer=checkpointer, store=store, name=spec.name)
