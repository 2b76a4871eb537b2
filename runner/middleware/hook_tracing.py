"""Harness wrap hooks pay for LangSmith tracing only when a trace is being recorded.

`create_agent` wraps every `wrap_model_call` / `wrap_tool_call` hook in LangSmith's `traceable`
so each hook shows up as a span. The wrapper does its bookkeeping whether or not anything is
traced: under `ainvoke` it moves to a worker thread and back twice per call (its set-up and its
tear-down go through `run_in_executor`) and runs the hook in a task of its own; under `invoke` it
builds a run container per call. With tracing off that bookkeeping produces nothing, yet it was
most of what the harness added to a step under `ainvoke` (see `bench/RESULTS.md`).

`traced_when_tracing` hands `create_agent` the harness's hooks behind a check, made on every
call, of the three things that make `traceable` record a span: tracing enabled (environment or
`tracing_context`), a LangSmith run in progress, or a LangChain tracer among the run's
callbacks. When any of them holds, the hook runs through the very wrapper `create_agent` made,
so a recorded trace is the same as before; when none holds, the hook is called directly.

Only agentctl's own middleware is treated so: the spec's middleware and LangChain's keep the
wrapper as `create_agent` makes it (their hooks run in a task of their own, which a hook that
sets context variables may rely on; agentctl's hooks reset what they set).
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["might_trace", "traced_when_tracing"]

_PATCH_LOCK = threading.RLock()


def might_trace() -> bool:
    """Whether LangSmith's `traceable` would record a span here (conservatively: True when in
    doubt). Mirrors its decision: enabled by context or environment, or a parent run to attach
    to, either LangSmith's own or a LangChain tracer's.

    It runs on every harness hook call, so it reads LangSmith's context variables itself (a
    tenth of a microsecond) rather than through `tracing_is_enabled`, which builds the whole
    tracing context each time (about 6 us, twice a step); where those variables are not what
    this LangSmith version has, it asks LangSmith."""
    return (_checks or _made_checks())()


def _langsmiths_decision() -> bool:
    """LangSmith's own answer, through its public functions (what `_made_checks` follows)."""
    from langchain_core.runnables.config import var_child_runnable_config
    from langchain_core.tracers.langchain import LangChainTracer
    from langsmith.run_helpers import get_current_run_tree
    from langsmith.utils import tracing_is_enabled

    if get_current_run_tree() is not None or tracing_is_enabled():
        return True
    return _has_tracer(var_child_runnable_config.get(), LangChainTracer)


def _has_tracer(config: Any, tracer: type) -> bool:
    """A LangChain tracer among the callbacks of the runnable being run (`config`)."""
    callbacks = config.get("callbacks") if config else None
    if callbacks is None:
        return False
    handlers = getattr(callbacks, "handlers", None) or (
        callbacks if isinstance(callbacks, list) else ()
    )
    # Usually there are none: then no generator is made.
    return bool(handlers) and any(isinstance(handler, tracer) for handler in handlers)


_checks: Callable[[], bool] | None = None


def _made_checks() -> Callable[[], bool]:
    """`tracing_is_enabled`'s steps, in its order, on LangSmith's context variables: the
    `enabled` of `tracing_context` when set, else a run in progress, else the global setting,
    else the environment (`LANGSMITH_TRACING`, through LangSmith's cached lookup); then the
    callbacks."""
    global _checks
    from langchain_core.runnables.config import var_child_runnable_config
    from langchain_core.tracers.langchain import LangChainTracer

    try:
        from langsmith._internal import _context
        from langsmith.utils import get_env_var

        parent = _context._PARENT_RUN_TREE_REF
        enabled_here = _context._TRACING_ENABLED
        _context._GLOBAL_TRACING_ENABLED  # noqa: B018 - this version has it
    except (ImportError, AttributeError):
        _checks = _langsmiths_decision
        return _checks

    def checks() -> bool:
        ref = parent.get()
        if ref is not None and ref() is not None:
            return True
        enabled = enabled_here.get()
        if enabled is None:
            enabled = _context._GLOBAL_TRACING_ENABLED
        if enabled is None:
            tracing = get_env_var("TRACING", default="")
            enabled = get_env_var("TRACING_V2", default=tracing) == "true"
        return bool(enabled) or _has_tracer(var_child_runnable_config.get(), LangChainTracer)

    _checks = checks
    return checks


def _when_tracing(hook: Callable[..., Any], traced: Callable[..., Any]) -> Callable[..., Any]:
    """`hook` itself, or `traced` (its `traceable` wrapper) while a trace may be recorded."""

    @functools.wraps(hook)
    def chosen(*args: Any, **kwargs: Any) -> Any:
        if (_checks or _made_checks())():  # `might_trace`, one call less (twice a step)
            return traced(*args, **kwargs)
        return hook(*args, **kwargs)

    if not inspect.iscoroutinefunction(hook):
        return chosen
    # The coroutine of the hook (or of its wrapper) is handed on as it is, without one more
    # coroutine around it; it still reads as a coroutine function. Python 3.11 cannot mark a
    # function so: there, one coroutine goes around it.
    mark: Callable[[Callable[..., Any]], Callable[..., Any]] | None = getattr(
        inspect, "markcoroutinefunction", None
    )
    if mark is not None:
        return mark(chosen)

    @functools.wraps(hook)
    async def ahook(*args: Any, **kwargs: Any) -> Any:
        return await chosen(*args, **kwargs)

    return ahook


@contextmanager
def traced_when_tracing(middleware: Sequence[Any]) -> Iterator[None]:
    """While `create_agent` runs in this block, the wrap hooks of `middleware` (bound methods of
    those objects) get `_when_tracing` around LangChain's `traceable` wrapper; every other hook
    gets the wrapper alone, as without this block.

    It replaces `langchain.agents.factory.traceable` for the block's duration (under a lock,
    so builds in other threads see either the original or a wrapper that leaves their hooks
    alone). Where that name is gone (another LangChain version), hooks are wrapped as before.
    """
    from langchain.agents import factory

    ours = {id(m) for m in middleware}
    with _PATCH_LOCK:  # read under the lock too: another build's wrapper is never "original"
        original = getattr(factory, "traceable", None)
        if original is None:
            yield
            return

        def traceable(*args: Any, **kwargs: Any) -> Any:
            decorate = original(*args, **kwargs)

            def decorator(function: Callable[..., Any]) -> Callable[..., Any]:
                traced = decorate(function)
                if id(getattr(function, "__self__", None)) not in ours:
                    return traced
                return _when_tracing(function, traced)

            return decorator

        factory.traceable = traceable
        try:
            yield
        finally:
            factory.traceable = original
