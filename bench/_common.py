"""What the three-way benchmarks share: the instant scripted model, the step tool, the three
agents built from the same tools, and small timing helpers.

The three contenders, built with the same model object and the same tools:
(a) bare `langchain.agents.create_agent`, (b) `deepagents.create_deep_agent` (a black box with
its defaults), (c) agentctl's `build_agent` from an equivalent YAML spec (the DEFAULT harness).

`bench/` is the script's own folder, so `import _common` works when a script runs as
`.venv/bin/python bench/X.py`.
"""

from __future__ import annotations

import gc
import itertools
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from pydantic import Field

CONTENDERS = ("bare", "deepagents", "agentctl")
LABELS = {"bare": "(a) create_agent", "deepagents": "(b) deepagents", "agentctl": "(c) agentctl"}


@tool
def step(i: int) -> str:
    """Do one step of the work; returns the step number."""
    return str(i)


Script = Callable[[BaseMessage, int], AIMessage]


class InstantModel(BaseChatModel):
    """A chat model that answers at once, deciding from the LAST message only (O(1) per call,
    so a long conversation costs the model nothing more): `script(last_message, call_number)`.

    `stamps` records `perf_counter()` at every call, to split a run into per-step times.
    """

    script: Any
    delay: Any = 0.0
    """Seconds to sleep before answering, or `delay(last_message)`."""
    stamps: list[float] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "instant"

    def bind_tools(self, tools: Any, **kwargs: Any) -> InstantModel:  # type: ignore[override]
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        self.stamps.append(time.perf_counter())
        return self.script(messages[-1], len(self.stamps))

    def _seconds(self, messages: list[BaseMessage]) -> float:
        return float(self.delay(messages[-1]) if callable(self.delay) else self.delay)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if seconds := self._seconds(messages):
            time.sleep(seconds)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if seconds := self._seconds(messages):
            import asyncio

            await asyncio.sleep(seconds)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])


_ids = itertools.count()


def calls(*tool_calls: tuple[str, dict[str, Any]], content: str = "") -> AIMessage:
    """An AI message asking for `tool_calls` (name, args), each with a fresh id."""
    return AIMessage(
        content=content,
        tool_calls=[{"name": n, "args": a, "id": f"call_{next(_ids)}"} for n, a in tool_calls],
    )


def replies_script(replies: Sequence[Callable[[], AIMessage]]) -> Script:
    """The n-th model call of a run answers `replies[n - 1]()`."""
    return lambda _last, call: replies[call - 1]()


def steps_script(steps: int) -> Script:
    """`steps` model calls that each call `step(i)`, then a final answer. The step number rides
    in the tool call and comes back in the ToolMessage, so the model needs only the last message.
    """

    def script(last: BaseMessage, _call: int) -> AIMessage:
        done = int(last.content) + 1 if isinstance(last, ToolMessage) else 0
        if done >= steps:
            return AIMessage(content="done")
        return calls(("step", {"i": done}))

    return script


def spec_file(
    folder: Path, name: str, extra: dict[str, Any] | None = None, *, tool_ref: str | None = None
) -> Path:
    """An agentctl spec with the default harness and one tool (`step` from this module unless
    `tool_ref` names another), plus the `extra` settings."""
    spec = {
        "version": 1,
        "name": name,
        "model": "openai:gpt-4.1",  # replaced by the instance passed to build_agent
        "tools": [{"import": tool_ref or f"{Path(__file__).resolve()}:step"}],
        **(extra or {}),
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def build(
    kind: str,
    model: BaseChatModel,
    spec: Path,
    *,
    tools: Sequence[BaseTool] = (step,),
    checkpointer: Any = None,
    bare: dict[str, Any] | None = None,
    deep: dict[str, Any] | None = None,
) -> Any:
    """One contender's agent over `model` and `tools`; `bare` and `deep` are extra keyword
    arguments for create_agent and create_deep_agent (agentctl takes its settings from `spec`).
    """
    if kind == "bare":
        from langchain.agents import create_agent

        return create_agent(model, tools=list(tools), checkpointer=checkpointer, **(bare or {}))
    if kind == "deepagents":
        from deepagents import create_deep_agent

        return create_deep_agent(
            model, tools=list(tools), checkpointer=checkpointer, **(deep or {})
        )
    import runner

    return runner.build_agent(spec, model=model, checkpointer=checkpointer)


def run_agent(agent: Any, message: Any, mode: str, config: Any = None) -> Any:
    """`agent.invoke` or, for mode "ainvoke", `agent.ainvoke` in a fresh event loop."""
    if mode == "invoke":
        return agent.invoke(message, config)
    import asyncio

    return asyncio.run(agent.ainvoke(message, config))


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


class FullCollections:
    """Counts the collector's full collections (generation 2) while installed: each one
    examines every object the process made and has not frozen (the imported libraries
    included, some 130,000-150,000 objects in a process that ran an agent: 50-80 ms), so it is
    the slowest turn of a long run. How often one comes depends on how many objects a turn
    leaves alive long enough to reach the oldest generation (when they outnumber a quarter of
    those there)."""

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._seen)

    def _seen(self, phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            self.count += 1


def timed(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def rotations(repeat: int) -> list[tuple[str, ...]]:
    """The contenders in a rotating order per repeat, so none always runs first or last."""
    return [tuple(CONTENDERS[(i + k) % 3] for k in range(3)) for i in range(repeat)]


def python_version() -> str:
    return sys.version.split()[0]
