"""LangGraph's stream -> `RunEvent`s: what the run loop shows of a turn, naming the agent (main or
subagent) of each event.

`EventTranslator` reads the chunks of `graph.stream(stream_mode=["messages", "updates",
"custom"], subgraphs=True)`: text as it streams, tool calls and results, todos, model calls with
their usage and cost, denied calls, approvals and questions waiting. It remembers what it has
shown, so a turn that resumes a thread does not show its history again.

For a workflow (`steps=`), the first parts of a namespace are the workflow's (the step's node,
and for a map's item the item step's); what follows is the agent's, read as for an agent run
with the step's agent as the main one. Its events carry the step's id, and the steps' own
reports become `StepStart` / `StepEnd`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from runner.events import (
    DENIED_KEY,
    SUMMARY_TAG,
    Denied,
    ModelCall,
    RunEvent,
    RunWarning,
    StepEnd,
    StepStart,
    TextDelta,
    TodosUpdate,
    ToolCall,
    ToolResult,
    Usage,
)
from runner.spec.budgets import PriceSpec
from runner.threads.transcripts import text_of

__all__ = ["EventTranslator", "Shown", "read_shown"]


class Shown:
    """The tool calls, results and replies (by id) a history holds: what a turn resuming it
    must not show again."""

    __slots__ = ("calls", "replies", "results")

    def __init__(self) -> None:
        self.calls: set[str] = set()
        self.results: set[str] = set()
        self.replies: set[str] = set()


def read_shown(shown: Shown, messages: Sequence[Any]) -> None:
    """Add what `messages` hold to `shown` (a `runner.middleware.tallies.Tallies` reader)."""
    for message in messages:
        kind = message.type
        if kind == "ai":
            shown.calls.update(call["id"] for call in message.tool_calls)
            if message.id:
                shown.replies.add(message.id)
        elif kind == "tool":
            shown.results.add(message.tool_call_id)


class EventTranslator:
    """Turns LangGraph stream chunks (`stream_mode=["messages", "updates", "custom"]`,
    `subgraphs=True`) into RunEvents, naming the agent of each."""

    def __init__(
        self,
        main_agent: str,
        *,
        seen_calls: set[str] | None = None,
        seen_results: set[str] | None = None,
        seen_replies: set[str] | None = None,
        prices: Mapping[str, Mapping[str, PriceSpec]] | None = None,
        steps: Mapping[str, str | None] | None = None,
    ) -> None:
        self.main = main_agent
        self.steps = dict(steps) if steps is not None else None
        """A workflow's step ids -> the key of the agent each runs (None: no agent)."""
        self.prices = dict(prices or {})
        """Agent name -> its model prices (`model.price`): the cost of each `Usage`."""
        self.seen_calls: set[str] = set(seen_calls or ())
        self.seen_results: set[str] = set(seen_results or ())
        # ids of AI messages already reported: a model node that rewrites the history (LangChain
        # answering invalid calls left in it, a summary) sends old replies again
        self.seen_replies: set[str] = set(seen_replies or ())
        # namespace root ("tools:<task id>") -> (agent name, id of the `task` call that started it)
        self.subagents: dict[str, tuple[str, str | None]] = {}
        # interrupt id -> the agent whose approval it asks for
        self.interrupt_agents: dict[str, str] = {}
        self.streamed_text: set[str] = set()

    def _agent(
        self, namespace: Sequence[str], meta: Mapping[str, Any] | None = None
    ) -> tuple[str, str | None]:
        if not namespace:
            return self.main, None
        known = self.subagents.get(namespace[0])
        name = (meta or {}).get("lc_agent_name")
        if known is not None:
            return known
        if isinstance(name, str):
            self.subagents[namespace[0]] = (name, None)
            return name, None
        return self.main, None

    def feed(self, namespace: Sequence[str], mode: str, data: Any) -> Iterator[RunEvent]:
        if self.steps is None:
            yield from self._feed(namespace, mode, data)
            return
        step, depth = self._step_of(namespace)
        if mode == "custom" and isinstance(data, dict):
            report = data.get("agentctl")
            if report == "step_start":
                yield StepStart(agent=self.main, step=data["step"], kind=str(data.get("kind")))
                return
            if report == "step_end":
                yield StepEnd(
                    agent=self.main,
                    step=data["step"],
                    status=str(data.get("status")),
                    seconds=float(data.get("seconds") or 0.0),
                    output=data.get("output"),
                )
                return
            if report == "subagent_start" and data.get("namespace"):
                inner = "|".join(str(data["namespace"]).split("|")[depth:])
                data = {**data, "namespace": inner}
        workflow = self.main
        self.main = (self.steps.get(step) if step else None) or workflow
        try:
            for event in self._feed(namespace[depth:], mode, data):
                yield replace(event, step=step) if step else event
        finally:
            self.main = workflow

    def _step_of(self, namespace: Sequence[str]) -> tuple[str | None, int]:
        """The step a namespace is in, and how many of its parts are the workflow's."""
        if not namespace:
            return None, 0
        node = namespace[0].split(":")[0]
        if node.endswith(".item") and len(namespace) > 1:
            return namespace[1].split(":")[0], 2
        for suffix in (".item", ".join"):
            node = node.removesuffix(suffix)
        return node, 1

    def _feed(self, namespace: Sequence[str], mode: str, data: Any) -> Iterator[RunEvent]:
        if mode == "custom":
            yield from self._custom(namespace, data)
        elif mode == "messages":
            yield from self._message_chunk(namespace, data)
        elif mode == "updates":
            yield from self._updates(namespace, data)

    def _custom(self, namespace: Sequence[str], data: Any) -> Iterator[RunEvent]:
        if not isinstance(data, dict):
            return
        if data.get("agentctl") == "subagent_start":
            ns = str(data.get("namespace") or "")
            root = ns.split("|")[0] if ns else None
            if root:
                self.subagents[root] = (str(data.get("agent")), data.get("tool_call_id"))
        elif data.get("agentctl") == "a2a_update" and data.get("text"):
            # a status message or an artifact of an A2A subagent's remote task, as it comes
            agent, parent = self._agent(namespace)
            yield TextDelta(agent=agent, parent_id=parent, text=str(data["text"]))
        elif data.get("agentctl") == "warning":
            agent, parent = self._agent(namespace)
            yield RunWarning(
                agent=agent,
                parent_id=parent,
                code=str(data.get("code") or "warning"),
                message=str(data.get("message") or ""),
            )

    def _message_chunk(self, namespace: Sequence[str], data: Any) -> Iterator[RunEvent]:
        message, meta = data
        if meta.get("langgraph_node") != "model" or message.type not in ("ai", "AIMessageChunk"):
            return
        if SUMMARY_TAG in (meta.get("tags") or ()):
            return  # the summarizer's words are not the agent's
        text = text_of(message.content)
        if text:
            agent, parent = self._agent(namespace, meta)
            if message.id:
                self.streamed_text.add(message.id)
            yield TextDelta(agent=agent, parent_id=parent, text=text)

    def _updates(self, namespace: Sequence[str], data: Any) -> Iterator[RunEvent]:
        if not isinstance(data, dict):
            return
        agent, parent = self._agent(namespace)
        for node, update in data.items():
            if node == "__interrupt__":
                for interrupt in update or ():
                    self.interrupt_agents.setdefault(getattr(interrupt, "id", ""), agent)
                continue
            for part in update if isinstance(update, list) else [update]:
                if isinstance(part, dict):
                    yield from self._update(node, part, agent, parent)

    def _update(
        self, node: str, update: dict[str, Any], agent: str, parent: str | None
    ) -> Iterator[RunEvent]:
        messages = update.get("messages")
        if isinstance(messages, list):
            for message in messages:
                kind = getattr(message, "type", None)
                if kind == "ai" and node == "model":
                    if message.id in self.seen_replies:
                        continue  # history restated (a repair, a summary): not news
                    if message.id:
                        self.seen_replies.add(message.id)
                    text = text_of(message.content)
                    if text and message.id not in self.streamed_text:
                        yield TextDelta(agent=agent, parent_id=parent, text=text)
                    yield _model_call(message, agent, parent)
                    for call in message.tool_calls:
                        if call["id"] in self.seen_calls:
                            continue
                        self.seen_calls.add(call["id"])
                        yield ToolCall(
                            agent=agent,
                            parent_id=parent,
                            name=call["name"],
                            args=dict(call["args"]),
                            id=call["id"],
                        )
                    usage = getattr(message, "usage_metadata", None)
                    if usage:
                        yield self._usage(message, usage, agent, parent)
                elif kind == "tool":
                    call_id = message.tool_call_id
                    if call_id in self.seen_results:
                        continue
                    self.seen_results.add(call_id)
                    denied = (getattr(message, "response_metadata", None) or {}).get(DENIED_KEY)
                    if isinstance(denied, dict):
                        yield Denied(
                            agent=agent,
                            parent_id=parent,
                            name=str(denied.get("tool") or message.name or ""),
                            id=call_id,
                            args=dict(denied.get("args") or {}),
                            rule=str(denied.get("rule") or ""),
                        )
                    yield ToolResult(
                        agent=agent,
                        parent_id=parent,
                        name=message.name or "",
                        id=call_id,
                        content=text_of(message.content),
                        status=getattr(message, "status", "success") or "success",
                    )
        todos = update.get("todos")
        if isinstance(todos, list):
            yield TodosUpdate(agent=agent, parent_id=parent, todos=[dict(t) for t in todos])

    def _usage(
        self, message: Any, usage: Mapping[str, Any], agent: str, parent: str | None
    ) -> Usage:
        """A reply's token usage, with its cost when the spec prices the agent's model."""
        tokens_in = int(usage.get("input_tokens", 0))
        tokens_out = int(usage.get("output_tokens", 0))
        cost = None
        if self.prices.get(agent):
            from runner.middleware.budgets import price_for

            meta = message.response_metadata or {}
            price = price_for(self.prices[agent], meta.get("model_name") or meta.get("model"))
            cost = price.cost(tokens_in, tokens_out) if price is not None else None
        return Usage(
            agent=agent,
            parent_id=parent,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            total_tokens=int(usage.get("total_tokens", 0)),
            cost=cost,
        )


def _model_call(message: Any, agent: str, parent: str | None) -> ModelCall:
    from runner.middleware.replies import finish_reason

    meta = message.response_metadata or {}
    model = meta.get("model_name") or meta.get("model")
    return ModelCall(
        agent=agent,
        parent_id=parent,
        model=str(model) if model else None,
        finish_reason=finish_reason(message),
    )
