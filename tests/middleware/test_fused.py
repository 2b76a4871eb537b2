"""Fused harness wrap hooks behave exactly like the separate hooks create_agent would compose."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
)
from langchain_core.tools import tool
from langgraph.types import Command

import runner
from runner.agent.build import fused_chain, middleware_chain
from runner.agent.resolve import Resolver
from runner.middleware.fused import FusedModelCalls, FusedToolCalls, fuse_wrap_hooks, has_hook
from tests.fakes import ScriptedChatModel, ai


class LogState(AgentState):  # type: ignore[type-arg]
    log: Annotated[list[str], operator.add]


class Recorder(AgentMiddleware):
    """Wraps model and tool calls, records the order, and adds a state update per model call
    (as an ExtendedModelResponse, or by returning the bare AIMessage when `plain`)."""

    state_schema = LogState  # type: ignore[assignment]

    def __init__(self, label: str, trace: list[str], *, plain: bool = False) -> None:
        super().__init__()
        self.label, self.trace, self.plain = label, trace, plain

    @property
    def name(self) -> str:
        return self.label

    def _done(self, response: Any) -> Any:
        self.trace.append(f"<{self.label}")
        if self.plain:
            return response.result[0]
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"log": [self.label]})
        )

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        self.trace.append(f"{self.label}>")
        return self._done(handler(request))

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        self.trace.append(f"{self.label}>")
        return self._done(await handler(request))

    def _tool_done(self, result: Any) -> Any:
        self.trace.append(f"<{self.label}")
        return result.model_copy(update={"content": f"{result.content}+{self.label}"})

    def wrap_tool_call(self, request: Any, handler: Callable[..., Any]) -> Any:
        self.trace.append(f"{self.label}>")
        return self._tool_done(handler(request))

    async def awrap_tool_call(self, request: Any, handler: Callable[..., Any]) -> Any:
        self.trace.append(f"{self.label}>")
        return self._tool_done(await handler(request))


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool
def big() -> str:
    """A large result."""
    return "line\n" * 50_000


def run(chain: list[AgentMiddleware], *, asynchronous: bool) -> dict[str, Any]:
    model = ScriptedChatModel(script=[ai("", ("echo", {"text": "hi"})), ai("done")])
    agent = create_agent(model, tools=[echo], middleware=chain)
    message: Any = {"messages": [{"role": "user", "content": "go"}]}
    if asynchronous:
        return asyncio.run(agent.ainvoke(message))
    return agent.invoke(message)


def chain(trace: list[str]) -> list[AgentMiddleware]:
    """Two fusable runs (a, b, c) and (d, e), split by `outside`, which is not fusable."""
    return [
        Recorder("a", trace),
        Recorder("b", trace, plain=True),
        Recorder("c", trace),
        Recorder("outside", trace),
        Recorder("d", trace),
        Recorder("e", trace),
    ]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_fused_hooks_run_in_the_same_order_with_the_same_result(asynchronous: bool) -> None:
    separate: list[str] = []
    expected = run(chain(separate), asynchronous=asynchronous)
    together: list[str] = []
    fused = fuse_wrap_hooks(chain(together), lambda m: m.name != "outside")
    got = run(fused, asynchronous=asynchronous)

    assert together == separate
    assert got["log"] == expected["log"] == ["e", "d", "outside", "c", "a"] * 2
    assert [m.content for m in got["messages"]] == [m.content for m in expected["messages"]]
    assert got["messages"][2].content == "hi+e+d+outside+c+b+a"
    names = [m.name for m in fused]
    assert "FusedModelCalls[a+b+c]" in names and "FusedToolCalls[d+e]" in names
    assert sum(isinstance(m, FusedModelCalls) for m in fused) == 2
    assert sum(isinstance(m, FusedToolCalls) for m in fused) == 2


class Twice(Recorder):
    """Calls the model (the layers inside it) twice, as a retry does, and keeps the second
    reply: the inner layers' commands of the first attempt are dropped."""

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        handler(request)
        return super().wrap_model_call(request, handler)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        await handler(request)
        return await super().awrap_model_call(request, handler)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("layers", ["a twice b", "twice a b", "a b twice", "a twice b c"])
def test_a_layer_that_calls_again_keeps_the_last_attempts_commands(
    asynchronous: bool, layers: str
) -> None:
    def members(trace: list[str]) -> list[AgentMiddleware]:
        return [(Twice if n == "twice" else Recorder)(n, trace) for n in layers.split()]

    separate: list[str] = []
    expected = run(members(separate), asynchronous=asynchronous)
    together: list[str] = []
    got = run(fuse_wrap_hooks(members(together), lambda m: True), asynchronous=asynchronous)
    assert together == separate
    assert got["log"] == expected["log"] == layers.split()[::-1] * 2


def test_fused_members_keep_their_state_and_lose_only_their_wrap_hooks() -> None:
    trace: list[str] = []
    original = chain(trace)
    fused = fuse_wrap_hooks(original, lambda m: m.name != "outside")
    members = [m for m in fused if not isinstance(m, FusedModelCalls | FusedToolCalls)]
    assert [m.name for m in members] == ["a", "b", "c", "outside", "d", "e"]
    assert [has_hook(m, "model") for m in members] == [False] * 3 + [True] + [False] * 2
    assert all(m.state_schema is LogState for m in members)
    assert all(has_hook(m, "model") for m in original)  # the originals are left as they were


def test_the_default_harness_fuses_its_model_and_tool_hooks(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"name": "a", "model": "openai:gpt-4.1"}), encoding="utf-8")
    resolved = Resolver(with_models=False).resolve(runner.load_spec(path))
    documented = middleware_chain(resolved)
    fused = fused_chain(resolved, documented)
    hooks = [m.name for m in fused if has_hook(m, "model") or has_hook(m, "tool")]
    assert hooks == [
        "FusedToolCalls[ToolJournalMiddleware+FilesystemMiddleware+LargeInputsMiddleware]",
        "FusedModelCalls[LargeInputsMiddleware+ReplyCheckMiddleware+SummarizationMiddleware+PatchToolCallsMiddleware]",
    ]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_results_and_inputs_are_still_evicted_through_the_fused_hooks(
    tmp_path: Path, asynchronous: bool
) -> None:
    path = tmp_path / "agent.yaml"
    spec = {"name": "a", "backend": "state", "tools": [{"import": f"{__file__}:big"}]}
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    script = [
        ai("", ("big", {})),
        ai("", ("write_file", {"file_path": "/x.md", "content": "y" * 100_000})),
        ai("done"),
    ]
    agent = runner.build_agent(path, model=ScriptedChatModel(script=script))
    message: Any = {"messages": [{"role": "user", "content": "go"}]}
    state = asyncio.run(agent.ainvoke(message)) if asynchronous else agent.invoke(message)

    result = state["messages"][2]
    assert result.content.startswith("This result was too large for your context (250,000")
    assert f"/large_tool_results/{result.tool_call_id}" in state["files"]
    asked = state["messages"][3]
    assert asked.tool_calls[0]["args"]["content"] == (
        "[100,000 characters, removed from the conversation to save context; "
        "it is the content of /x.md]"
    )
