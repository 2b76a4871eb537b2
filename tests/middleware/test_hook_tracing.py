"""The harness's wrap hooks skip LangSmith's bookkeeping when nothing is traced, and are traced
exactly as before when something is (runner.middleware.hook_tracing)."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import langsmith
import pytest
from langchain_core.callbacks import CallbackManager
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers.langchain import LangChainTracer
from langsmith._internal import _aiter

import runner
from runner.middleware.hook_tracing import might_trace
from tests.fakes import ScriptedChatModel, ai
from tests.middleware.helpers import MODES, run, spec_file

USER_MIDDLEWARE = textwrap.dedent(
    """
    from langchain.agents.middleware import AgentMiddleware

    class Passing(AgentMiddleware):
        def wrap_model_call(self, request, handler):
            return handler(request)

        async def awrap_model_call(self, request, handler):
            return await handler(request)
    """
)

HARNESS_MODEL_HOOK = (
    "FusedModelCalls[LargeInputsMiddleware+ReplyCheckMiddleware+SummarizationMiddleware+"
    "PatchToolCallsMiddleware]"
)
HARNESS_TOOL_HOOK = (
    "FusedToolCalls[ToolJournalMiddleware+FilesystemMiddleware+LargeInputsMiddleware]"
)


@pytest.fixture(autouse=True)
def no_tracing_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2"):
        monkeypatch.delenv(name, raising=False)


def agent(tmp_path: Path, *, user_middleware: bool = False) -> Any:
    fields: dict[str, Any] = {"backend": "state"}
    if user_middleware:
        (tmp_path / "mw.py").write_text(USER_MIDDLEWARE, encoding="utf-8")
        fields["middleware"] = [{"import": "./mw.py:Passing"}]
    model = ScriptedChatModel(script=[ai("", ("ls", {"path": "/"})), ai("done")])
    return runner.build_agent(spec_file(tmp_path, **fields), model=model)


@pytest.fixture
def langsmith_hops(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the functions whose `traceable` wrapper went to a worker thread (under
    `ainvoke`, every traced call does, twice)."""
    hops: list[str] = []
    original = _aiter.aio_to_thread

    async def counting(ctx: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
        if getattr(func, "__name__", "") == "_setup_run":
            hops.append(getattr(args[0], "__qualname__", repr(args[0])))
        return await original(ctx, func, *args, **kwargs)

    monkeypatch.setattr(_aiter, "aio_to_thread", counting)
    yield hops


def test_untraced_harness_hooks_stay_on_the_event_loop(
    tmp_path: Path, langsmith_hops: list[str]
) -> None:
    state = run(agent(tmp_path, user_middleware=True), "go", "ainvoke")
    assert state["messages"][-1].content == "done"
    assert state["messages"][2].type == "tool"  # the ls call ran through the harness hooks
    # Only the spec's middleware goes through LangSmith's wrapper (once per model call).
    assert langsmith_hops == ["Passing.awrap_model_call"] * 2


@pytest.mark.parametrize("mode", MODES)
def test_traced_runs_record_the_harness_hooks_as_before(tmp_path: Path, mode: str) -> None:
    client = mock.MagicMock(spec=langsmith.Client)
    client.tracing_queue = None
    with langsmith.tracing_context(enabled=True, client=client, project_name="agentctl-test"):
        state = run(agent(tmp_path), "go", mode)
    assert state["messages"][-1].content == "done"
    runs = {c.kwargs["id"]: c.kwargs for c in client.create_run.call_args_list}
    by_name: dict[str, list[dict[str, Any]]] = {}
    for created in runs.values():
        by_name.setdefault(created["name"], []).append(created)
    prefix = "a" if mode == "ainvoke" else ""
    model_hook = f"{HARNESS_MODEL_HOOK}.{prefix}wrap_model_call"
    tool_hook = f"{HARNESS_TOOL_HOOK}.{prefix}wrap_tool_call"
    assert len(by_name[model_hook]) == 2 and len(by_name[tool_hook]) == 1
    # The spans nest as LangChain makes them: the model call inside the model hook's span,
    # the tool inside the tool hook's.
    assert all(runs[m["parent_run_id"]]["name"] == model_hook for m in by_name["ScriptedChatModel"])
    assert runs[by_name["ls"][0]["parent_run_id"]]["name"] == tool_hook


def test_might_trace_follows_langsmiths_decision() -> None:
    assert not might_trace()
    with langsmith.tracing_context(enabled=True):
        assert might_trace()

    @langsmith.traceable(client=mock.MagicMock(spec=langsmith.Client))
    def inside_a_run() -> bool:
        return might_trace()

    with langsmith.tracing_context(enabled=True):
        assert inside_a_run()
    tracer = LangChainTracer(client=mock.MagicMock(spec=langsmith.Client))
    token = var_child_runnable_config.set({"callbacks": CallbackManager(handlers=[tracer])})
    try:
        assert might_trace()
    finally:
        var_child_runnable_config.reset(token)
    assert not might_trace()


@pytest.mark.parametrize("in_run", [False, True])
@pytest.mark.parametrize("here", [None, True, False, "local"])
@pytest.mark.parametrize("globally", [None, True, False])
@pytest.mark.parametrize("environment", ["", "true", "false"])
def test_might_trace_reads_langsmiths_variables_as_langsmith_does(
    monkeypatch: pytest.MonkeyPatch, in_run: bool, here: Any, globally: Any, environment: str
) -> None:
    """The fast check gives LangSmith's own answer (`tracing_is_enabled` and a run in progress)
    for every combination of what decides it: a run, `tracing_context(enabled=...)`, the global
    setting and the environment."""
    from langsmith._internal import _context
    from langsmith.utils import get_env_var

    from runner.middleware.hook_tracing import _langsmiths_decision

    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING", "LANGSMITH_TRACING_V2"):
        monkeypatch.delenv(name, raising=False)
    if environment:
        monkeypatch.setenv("LANGCHAIN_TRACING_V2", environment)
    else:
        monkeypatch.delenv("LANGCHAIN_TRACING_V2", raising=False)
    monkeypatch.setattr(_context, "_GLOBAL_TRACING_ENABLED", globally)
    get_env_var.cache_clear()
    try:

        def decisions() -> tuple[bool, bool]:
            with langsmith.tracing_context(enabled=here):
                return might_trace(), _langsmiths_decision()

        if in_run:
            traced = langsmith.traceable(client=mock.MagicMock(spec=langsmith.Client))(decisions)
            with langsmith.tracing_context(enabled=True):
                fast, reference = traced()
        else:
            fast, reference = decisions()
    finally:
        get_env_var.cache_clear()
    assert fast == reference
    assert fast is (
        in_run
        or bool(here)
        or (here is None and (bool(globally) or (globally is None and environment == "true")))
    )


def test_concurrent_builds_keep_langchains_traceable(tmp_path: Path) -> None:
    from langchain.agents import factory

    original = factory.traceable
    path = spec_file(tmp_path, backend="state")

    def build() -> Any:
        return runner.build_agent(path, model=ScriptedChatModel(script=[ai("done")]))

    async def build_many() -> None:
        await asyncio.gather(*(asyncio.to_thread(build) for _ in range(8)))

    asyncio.run(build_many())
    assert factory.traceable is original
