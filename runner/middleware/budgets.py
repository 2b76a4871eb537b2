"""Budgets: `limits.tokens`, `limits.time` and `limits.cost` of one run, subagents included.

One `RunBudget` holds the running totals of each thread's current run; the main agent and every
subagent it builds share it (each with a `BudgetMiddleware` knowing its own model's prices), so
a subagent's tokens count against the main agent's budget. A run starts at the main agent's
first model call after a user message. Before each model call the totals are checked; a budget
that is reached raises `BudgetExceeded`, a located `RunError`, which ends the run with the
thread left as it was (the reply that crossed the line is kept; `agentctl run --thread ID`
continues the run once the budget is raised). The call that crosses the line is never cut off:
a budget stops the run before its next model call.

Time counts within turns: when a run continues in a new turn (after an approval or an answer),
the pause is left out. The totals are also saved in the main agent's state after each of its
model calls (`agentctl_budget`), so a run continued in another process keeps counting from them.
A turn is told apart by `configurable.agentctl_turn` (set by `runner.run.Session`) or
`configurable.run_id` (set by LangGraph servers); without either, each user message starts a run
and pauses are counted.

A workflow's budget (`runner.workflow.build`) also counts calls: `limits.model_calls` and
`limits.tool_calls` of the workflow are totals over the whole run, every step's agents (and
their subagents) adding to them (`RunBudget(counts_calls=True)`, `CallBudgetMiddleware`). A
model call past `model_calls` stops the run as a token budget does; a tool call past
`tool_calls` (in all, or of that tool when it is a mapping) is answered with an error message
instead of running, as an agent's own `tool_calls` limit answers it, and the agent goes on.

A wrap hook, not node hooks: two extra graph steps per model call would cost more than the one
wrap (see `runner.middleware`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from runner.errors import Problem, RunError
from runner.spec.agent import LimitsSpec
from runner.spec.budgets import PriceSpec, human_cost, human_duration

__all__ = ["BudgetExceeded", "BudgetMiddleware", "CallBudgetMiddleware", "RunBudget", "price_for"]

STATE_KEY = "agentctl_budget"
MAX_TALLIES = 10_000
"""Threads whose run totals are kept in memory; a forgotten one is read back from its state."""

Locate = Callable[[tuple[str | int, ...], str], Problem]


def _now() -> float:
    """The clock budgets read (tests replace it)."""
    return time.monotonic()


class BudgetExceeded(RunError):
    """A budget of the spec (`limits.tokens`, `limits.time`, `limits.cost`) was reached."""


class BudgetState(AgentState):
    agentctl_budget: NotRequired[dict[str, Any]]


def price_for(prices: Mapping[str, PriceSpec], model_name: str | None) -> PriceSpec | None:
    """The price of the model that answered: the one whose name matches the reply's model name
    (a fallback's, when one took over), else the agent's first priced model; None without any."""
    if not prices:
        return None
    if model_name:
        for model_id, price in prices.items():
            name = model_id.partition(":")[2]
            if name and (model_name == name or model_name.startswith(name)):
                return price
    return next(iter(prices.values()))


@dataclass
class _Tally:
    turn: str | None
    tokens: int = 0
    cost: float = 0.0
    unpriced: bool = False
    """A call was made by a model without a price: the cost is a lower bound."""
    elapsed: float = 0.0
    """Seconds of the run's earlier turns."""
    started: float = field(default_factory=lambda: _now())
    last_seen: float = field(default_factory=lambda: _now())
    loaded: bool = False
    """The totals saved in the thread's state were added (a run continued in a new process)."""
    model_calls: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)
    """Tool calls made, by tool name (counted with `counts_calls` only)."""

    def seconds(self, now: float) -> float:
        return self.elapsed + (now - self.started)

    def saved(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "cost": self.cost,
            "seconds": self.seconds(self.last_seen),
        }


class RunBudget:
    """The budgets of the main agent's spec and the totals of each thread's current run."""

    def __init__(self, limits: LimitsSpec, locate: Locate, *, counts_calls: bool = False) -> None:
        """`counts_calls`: `limits.model_calls` and `limits.tool_calls` are totals of the run
        too (a workflow's), not left to each agent's own limit middleware."""
        self.limits = limits
        self.locate = locate
        self.counts_calls = counts_calls
        self._tallies: dict[str, _Tally] = {}
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        return self.limits.has_budget(counts_calls=self.counts_calls)

    def begin(self, thread_id: str, turn: str | None, *, new_run: bool) -> _Tally:
        """The tally a model call adds to: a fresh one when a run starts."""
        now = _now()
        with self._lock:
            tally = self._tallies.get(thread_id)
            if new_run or tally is None:
                tally = self._tallies[thread_id] = _Tally(turn=turn, loaded=new_run)
                if len(self._tallies) > MAX_TALLIES:  # a long-lived server: forget the oldest
                    oldest = min(self._tallies, key=lambda t: self._tallies[t].last_seen)
                    del self._tallies[oldest]
            elif turn != tally.turn:  # the run goes on in a new turn: leave the pause out
                tally.elapsed += tally.last_seen - tally.started
                tally.started = now
                tally.turn = turn
            tally.last_seen = now
            return tally

    def restore(self, tally: _Tally, saved: Mapping[str, Any] | None) -> None:
        """Add the totals the thread's state saved, once (a run continued in a new process)."""
        with self._lock:
            if tally.loaded:
                return
            tally.loaded = True
            if saved:
                tally.tokens += int(saved.get("tokens", 0))
                tally.cost += float(saved.get("cost", 0.0))
                tally.elapsed += float(saved.get("seconds", 0.0))

    def add(
        self, tally: _Tally, message: AIMessage | None, prices: Mapping[str, PriceSpec]
    ) -> None:
        usage = getattr(message, "usage_metadata", None) if message is not None else None
        with self._lock:
            tally.last_seen = _now()
            tally.model_calls += 1
            if not usage:
                return
            tokens_in = int(usage.get("input_tokens", 0))
            tokens_out = int(usage.get("output_tokens", 0))
            tally.tokens += tokens_in + tokens_out
            meta = message.response_metadata if message is not None else {}
            price = price_for(prices, meta.get("model_name") or meta.get("model"))
            if price is None:
                tally.unpriced = True
            else:
                tally.cost += price.cost(tokens_in, tokens_out)

    def check(self, tally: _Tally) -> None:
        """Raise `BudgetExceeded` when a budget is reached."""
        limits = self.limits
        if (
            self.counts_calls
            and limits.model_calls is not None
            and tally.model_calls >= limits.model_calls
        ):
            self._stop(
                "model_calls",
                f"limit of {limits.model_calls} model calls reached ({tally.model_calls} made)",
            )
        if limits.tokens is not None and tally.tokens >= limits.tokens:
            self._stop(
                "tokens",
                f"budget of {limits.tokens:,} tokens reached ({tally.tokens:,} used)",
            )
        if limits.cost is not None and tally.cost >= limits.cost:
            self._stop(
                "cost",
                f"budget of {human_cost(limits.cost)} reached ({human_cost(tally.cost)} spent)",
            )
        seconds = tally.seconds(_now())
        if limits.time is not None and seconds >= limits.time:
            self._stop(
                "time",
                f"budget of {human_duration(limits.time)} reached ({human_duration(seconds)} used)",
            )

    def take_tool_call(self, tally: _Tally, tool: str) -> str | None:
        """Count a tool call, or refuse it: why, when the run's `tool_calls` limit (in all, or
        of this tool) is reached."""
        limit = self.limits.tool_calls
        with self._lock:
            if isinstance(limit, int):
                made, most = sum(tally.tool_calls.values()), limit
            elif isinstance(limit, dict) and tool in limit:
                made, most = tally.tool_calls.get(tool, 0), limit[tool]
            else:
                made, most = 0, None
            if most is not None and made >= most:
                which = "tool calls" if isinstance(limit, int) else f"calls of {tool}"
                where = (
                    ("limits", "tool_calls")
                    if isinstance(limit, int)
                    else ("limits", "tool_calls", tool)
                )
                problem = self.locate(where, f"limit of {most} {which} reached")
                return f"{problem}; this call was not made (the run's other calls went on)"
            tally.tool_calls[tool] = tally.tool_calls.get(tool, 0) + 1
            return None

    def _stop(self, key: str, message: str) -> None:
        problem = self.locate(("limits", key), message)
        raise BudgetExceeded(
            f"{problem}; the run stopped (raise `limits.{key}` and continue the thread to let "
            "it go on)"
        )


def _turn_of(configurable: Mapping[str, Any]) -> str | None:
    turn = configurable.get("agentctl_turn") or configurable.get("run_id")
    return str(turn) if turn is not None else None


class BudgetMiddleware(AgentMiddleware[BudgetState, Any, Any]):
    """Checks the run's budgets before each model call and counts each call's tokens and cost."""

    state_schema = BudgetState

    def __init__(self, budget: RunBudget, prices: Mapping[str, PriceSpec], *, main: bool) -> None:
        super().__init__()
        self.budget = budget
        self.prices = dict(prices)
        self.main = main

    def _before(self, request: ModelRequest) -> _Tally:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
        thread_id = str(configurable.get("thread_id") or "")
        messages = request.messages
        new_run = self.main and bool(messages) and isinstance(messages[-1], HumanMessage)
        tally = self.budget.begin(thread_id, _turn_of(configurable), new_run=new_run)
        if self.main and not new_run:
            saved: Any = (request.state or {}).get(STATE_KEY)
            self.budget.restore(tally, saved if isinstance(saved, Mapping) else None)
        self.budget.check(tally)
        return tally

    def _after(self, tally: _Tally, response: Any) -> Any:
        inner = response.model_response if isinstance(response, ExtendedModelResponse) else response
        result = inner.result if isinstance(inner, ModelResponse) else [inner]
        reply = next((m for m in result if isinstance(m, AIMessage)), None)
        self.budget.add(tally, reply, self.prices)
        if not self.main:
            return response
        update: Command[Any] = Command(update={STATE_KEY: tally.saved()})
        if isinstance(response, ExtendedModelResponse):
            return response  # an inner layer's command stands; the totals are saved next call
        return ExtendedModelResponse(model_response=response, command=update)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> Any:
        tally = self._before(request)
        return self._after(tally, handler(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        tally = self._before(request)
        return self._after(tally, await handler(request))


class CallBudgetMiddleware(BudgetMiddleware):
    """`BudgetMiddleware` that also counts tool calls against the run's `limits.tool_calls`
    (a workflow's budget, `RunBudget(counts_calls=True)`): a call past it is answered with an
    error message instead of running."""

    def _refused(self, request: Any) -> ToolMessage | None:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
        thread_id = str(configurable.get("thread_id") or "")
        tally = self.budget.begin(thread_id, _turn_of(configurable), new_run=False)
        call = request.tool_call
        why = self.budget.take_tool_call(tally, call["name"])
        if why is None:
            return None
        return ToolMessage(content=why, tool_call_id=call["id"], name=call["name"], status="error")

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return self._refused(request) or handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        return self._refused(request) or await handler(request)
