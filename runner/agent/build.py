"""ResolvedAgent -> CompiledStateGraph on `langchain.agents.create_agent`.

`middleware_chain` is the one place the harness order is decided; `runner.middleware`'s docstring
explains each position.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware

from runner.agent.resolve import ResolvedAgent, Resolver
from runner.errors import BuildError
from runner.middleware.prompt import PromptSection, split_for_user_middleware, static_prompt
from runner.spec import AgentSpec

if TYPE_CHECKING:
    Middleware = AgentMiddleware[Any, Any, Any]
    from langchain_core.language_models.chat_models import BaseChatModel
    from langgraph.graph.state import CompiledStateGraph

__all__ = ["build_agent", "build_graph", "middleware_chain"]

# Parallel tool calls (several `task` calls in one message) run at once up to this many; the
# default pool of min(32, cpus + 4) threads would run them in waves on a small machine.
MAX_CONCURRENCY = 64


def _limits(agent: ResolvedAgent) -> list[Middleware]:
    from langchain.agents.middleware import ModelCallLimitMiddleware, ToolCallLimitMiddleware

    limits = agent.spec.limits
    found: list[Middleware] = []
    if limits.model_calls is not None:
        found.append(ModelCallLimitMiddleware(run_limit=limits.model_calls, exit_behavior="error"))
    if isinstance(limits.tool_calls, int):
        found.append(ToolCallLimitMiddleware(run_limit=limits.tool_calls, exit_behavior="continue"))
    elif isinstance(limits.tool_calls, dict):
        found.extend(
            ToolCallLimitMiddleware(tool_name=tool, run_limit=limit, exit_behavior="continue")
            for tool, limit in limits.tool_calls.items()
        )
    return found


class _Described(AgentMiddleware):
    """A middleware that needs model objects, in a chain resolved without them: it has its
    name and no hooks, so `inspect` shows the chain that a build makes."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    @property
    def name(self) -> str:
        return self._name


def _model_resilience(agent: ResolvedAgent) -> list[Middleware]:
    from langchain.agents.middleware import (
        ModelFallbackMiddleware,
        ModelRetryMiddleware,
        ToolRetryMiddleware,
    )

    found: list[Middleware] = []
    if agent.model.fallbacks:
        first, *rest = agent.model.fallbacks
        found.append(ModelFallbackMiddleware(first, *rest))
    elif agent.model.fallback_ids:  # resolved to describe (`inspect`): no model objects
        found.append(_Described("ModelFallbackMiddleware"))
    retries = agent.spec.retries
    for policy, cls in (
        (retries.model, ModelRetryMiddleware),
        (retries.tools, ToolRetryMiddleware),
    ):
        if policy is None:
            continue
        kwargs: dict[str, Any] = {
            "max_retries": policy.max_retries,
            "initial_delay": policy.initial_delay,
            "backoff_factor": policy.backoff_factor,
            "max_delay": policy.max_delay,
            "on_failure": "error",
        }
        if cls is ToolRetryMiddleware and policy.tools is not None:
            kwargs["tools"] = policy.tools
        found.append(cls(**kwargs))
    return found


def prompt_parts(agent: ResolvedAgent) -> tuple[list[PromptSection], list[PromptSection]]:
    """The prompt sections before the user's middleware and after it (empty without any)."""
    if not agent.user_middleware:
        return agent.prompt_sections, []
    return split_for_user_middleware(agent.prompt_sections)


def middleware_chain(agent: ResolvedAgent) -> list[Middleware]:
    """The harness in order (see `runner.middleware` for why each sits where it does)."""
    from runner.middleware.caching import prompt_caching_middleware
    from runner.middleware.prompt import SystemPromptMiddleware

    h = agent.harness
    head, tail = prompt_parts(agent)
    chain = [
        SystemPromptMiddleware(head) if static_prompt(head) is None else None,
        h.get("todos"),
        h.get("memory"),
        h.get("skills"),
        h.get("journal"),
        h.get("filesystem"),
        h.get("large_inputs"),
        h.get("subagents"),
        h.get("permissions"),
        h.get("ask_user"),
        h.get("replies"),
        h.get("summarization"),
        h.get("budget"),
        *_limits(agent),
        *_model_resilience(agent),
        prompt_caching_middleware(
            agent.spec.prompt_caching,
            [agent.model.id, *agent.model.fallback_ids],
            [agent.model.chat_model, *agent.model.fallbacks],
        ),
        h.get("patch_tool_calls"),
        *agent.user_middleware,
        SystemPromptMiddleware(tail, append=True) if tail else None,
        h.get("approvals"),
    ]
    return [m for m in chain if m is not None]


def _is_harness(agent: ResolvedAgent) -> Callable[[Middleware], bool]:
    """Whether a middleware of the chain is agentctl's own (not the spec's, not LangChain's)."""
    users = {id(m) for m in agent.user_middleware}
    return lambda m: id(m) not in users and type(m).__module__.startswith("runner.")


def fused_chain(agent: ResolvedAgent, chain: list[Middleware]) -> list[Middleware]:
    """`chain` with adjacent harness wrap hooks fused into one per kind (see
    `runner.middleware.fused`). Only agentctl's own middleware is fused: the spec's middleware
    and LangChain's keep their hooks (and their trace spans)."""
    from runner.middleware.fused import fuse_wrap_hooks

    return fuse_wrap_hooks(chain, _is_harness(agent))


def subagent_middleware(
    agent: ResolvedAgent, *, store: Any = None, compile: bool = True
) -> Middleware | None:
    """The `task` middleware for the agent's subagents, compiling each (unless only describing)."""
    if not agent.subagents:
        return None
    from runner.middleware.subagents import Subagent, SubAgentMiddleware

    subagents = []
    for sub in agent.subagents:
        graph = sub.runnable
        if compile and sub.agent is not None:
            # No checkpointer of its own: a subagent uses its parent's, so its approvals pause
            # and resume with the parent's thread.
            graph = build_graph(sub.agent, checkpointer=None, store=store)
        elif sub.kind == "a2a" and sub.remote is not None:
            from runner.tools.a2a import a2a_subagent_graph

            graph = a2a_subagent_graph(sub.remote, budget=agent.harness.get("budget"))
        elif sub.remote is not None:
            from runner.middleware.remote_subagents import RemoteAgent

            graph = RemoteAgent(sub.name, sub.remote, budget=agent.harness.get("budget"))
        subagents.append(Subagent(sub.name, sub.description, graph, sub.kind))
    return SubAgentMiddleware(
        subagents, task_description=getattr(agent.spec, "task_description", None)
    )


def _check_approvals(agent: ResolvedAgent, tools: set[str]) -> None:
    """An `interrupt_on` entry naming no tool is a typo the author must hear about (inherited
    entries are skipped: a subagent may lack some of its parent's tools)."""
    if not agent.is_main and "interrupt_on" not in agent.spec.model_fields_set:
        return
    from runner.check.tools import unknown_tool_message

    for name in agent.interrupt_on:
        if name in tools:
            continue
        message = unknown_tool_message(name, agent.name, sorted(tools))
        at = ("interrupt_on", name)
        problem = agent.locate(at, message, at_key=True) if agent.locate else None
        raise BuildError(message, problem=problem)


def build_graph(
    agent: ResolvedAgent,
    *,
    checkpointer: Any = None,
    store: Any = None,
) -> CompiledStateGraph:
    """Compile one resolved agent (and its subagents)."""
    from langchain.agents import create_agent

    from runner.agent import state

    if store is None and agent.backend is not None and agent.backend.uses_store:
        raise BuildError(
            f"agent {agent.name!r} keeps files in a `store` backend, so it needs a LangGraph "
            "store: pass `store=` (e.g. langgraph.store.memory.InMemoryStore()) to build_agent"
        )
    agent.harness["subagents"] = subagent_middleware(agent, store=store)
    middleware = middleware_chain(agent)
    names = [m.name for m in middleware]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BuildError(
            f"middleware names must be unique in one agent; used twice: {', '.join(duplicates)} "
            "(check the spec's `middleware:` list)"
        )
    tool_names = [t.name for t in agent.tools] + [
        getattr(t, "name", str(t)) for m in middleware for t in getattr(m, "tools", None) or ()
    ]
    _check_approvals(agent, set(tool_names))
    clashes = sorted({n for n in tool_names if tool_names.count(n) > 1})
    if clashes:
        raise BuildError(
            f"two tools are named {', '.join(repr(c) for c in clashes)}; rename one with `name:` "
            "on its `import:` entry, or `prefix:` on an MCP server"
        )
    from runner.middleware.hook_tracing import traced_when_tracing

    chain = fused_chain(agent, middleware)
    harness = _is_harness(agent)
    try:
        # The harness's wrap hooks skip LangSmith's per-call bookkeeping unless a trace is
        # being recorded (runner.middleware.hook_tracing).
        with traced_when_tracing([m for m in chain if harness(m)]):
            graph = create_agent(
                agent.model.require(),
                tools=agent.tools,
                system_prompt=static_prompt(prompt_parts(agent)[0]),
                middleware=chain,
                response_format=agent.response_format,
                checkpointer=checkpointer,
                store=store,
                name=agent.name,
                state_schema=state.agent_state(state.SNAPSHOT_EVERY),
            )
        return graph.with_config(
            recursion_limit=agent.recursion_limit, max_concurrency=MAX_CONCURRENCY
        )
    except (ValueError, TypeError) as exc:
        raise BuildError(f"cannot assemble agent {agent.name!r}: {exc}") from None


def _as_spec(
    spec_or_path: AgentSpec | str | os.PathLike[str],
    vars: Mapping[str, Any] | None,
    *,
    allow_unused_vars: bool = False,
    require_inputs: bool = True,
) -> AgentSpec:
    if isinstance(spec_or_path, AgentSpec):
        if vars:
            raise BuildError("`vars` apply when loading a spec; pass a path, or load it with them")
        return spec_or_path
    from runner.load.loader import load_spec

    return load_spec(
        Path(spec_or_path),
        vars=vars,
        allow_unused_vars=allow_unused_vars,
        require_inputs=require_inputs,
    )


def build_agent(
    spec_or_path: AgentSpec | str | os.PathLike[str],
    *,
    model: str | BaseChatModel | None = None,
    vars: Mapping[str, Any] | None = None,
    checkpointer: Any = None,
    store: Any = None,
    backend: Any = None,
) -> CompiledStateGraph:
    """Build a runnable agent from a spec file or a loaded `AgentSpec`.

    `backend` (an object implementing `runner.backends.protocol.Backend`, or `SandboxBackend`
    for `execute`: a remote sandbox, a backend of your own) replaces the spec's `backend:` of
    the main agent and of the subagents that share it; it is checked here.

    `model` (a `provider:model` string or a chat model instance) replaces the model of the main
    agent and of every subagent that does not set its own. `vars` override the spec's template
    variables. The graph carries the spec's recursion limit; pass a `checkpointer` to keep
    threads (needed for approvals) and a `store` for `store` backends.

    MCP servers named in the spec start here and stay up for the graph's life: they are closed
    when the interpreter exits. To close them earlier, use `runner.run.Session` (closed by
    `close()` or `with`), or resolve with `Resolver` and call `ResolvedAgent.close()`.
    """
    spec = _as_spec(spec_or_path, vars)
    resolved = Resolver(model=model, backend=backend).resolve(spec)
    try:
        return build_graph(resolved, checkpointer=checkpointer, store=store)
    except BaseException:
        resolved.close()
        raise
