"""Harness wrap hooks fused: one `wrap_model_call` (and one `wrap_tool_call`) where several
harness middleware would each add their own.

`create_agent` runs every wrap hook through a tracing wrapper that, under `ainvoke`, hops to a
worker thread and back twice per call even with tracing off: each hook costs about 0.25 ms on
every model or tool call. Harness middleware whose hooks of one kind are adjacent (no other
middleware's hook of that kind between them) are therefore composed here and handed to
`create_agent` as one hook, placed where the first of them was. The composition is the one
`create_agent` applies: the first middleware outermost; an inner hook's `ExtendedModelResponse`
unwrapped before the outer hook sees the response; the state updates of every layer applied
inner first, in one command. The middleware keep their state schema, tools and node hooks; only
their wrap hooks move into the fused one.

`runner.agent.build.middleware_chain` still lists the chain as documented (that is what `inspect`
shows); `build_graph` fuses it just before compiling.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage
from langgraph.types import Command

Middleware = AgentMiddleware[Any, Any, Any]

__all__ = ["fuse_wrap_hooks"]

HOOKS = {
    "model": ("wrap_model_call", "awrap_model_call"),
    "tool": ("wrap_tool_call", "awrap_tool_call"),
}


def has_hook(middleware: Middleware, kind: str) -> bool:
    """Whether `create_agent` would see a hook of `kind` (model / tool) on `middleware`."""
    return any(
        getattr(type(middleware), hook) is not getattr(AgentMiddleware, hook)
        for hook in HOOKS[kind]
    )


def fuse_wrap_hooks(
    chain: Sequence[Middleware], fusable: Callable[[Middleware], bool]
) -> list[Middleware]:
    """`chain` with each run of two or more adjacent `fusable` hooks of a kind fused into one.

    A fused middleware's hooks become plain methods of a copy of it (the original object is
    left as it was), so `create_agent` does not run them twice.
    """
    stripped: dict[int, set[str]] = {}
    fused_after: dict[int, list[tuple[str, list[int]]]] = {}
    for kind in HOOKS:
        for run in _runs(chain, kind, fusable):
            for index in run:
                stripped.setdefault(index, set()).update(HOOKS[kind])
            fused_after.setdefault(run[0], []).append((kind, run))
    if not fused_after:
        return list(chain)
    copies = {i: _without_hooks(chain[i], frozenset(h)) for i, h in stripped.items()}
    result: list[Middleware] = []
    for index, middleware in enumerate(chain):
        result.append(copies.get(index, middleware))
        for kind, run in fused_after.get(index, []):
            members = [(type(chain[i]), copies[i]) for i in run]
            fused = FusedModelCalls(members) if kind == "model" else FusedToolCalls(members)
            result.append(fused)
    return result


def _runs(
    chain: Sequence[Middleware], kind: str, fusable: Callable[[Middleware], bool]
) -> list[list[int]]:
    runs: list[list[int]] = [[]]
    for index, middleware in enumerate(chain):
        if not has_hook(middleware, kind):
            continue
        if fusable(middleware):
            runs[-1].append(index)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if len(run) > 1]


_STRIPPED: dict[tuple[type, frozenset[str]], type] = {}


def _without_hooks(middleware: Middleware, hooks: frozenset[str]) -> Middleware:
    """A shallow copy of `middleware` whose class no longer overrides `hooks` (same name)."""
    cls = type(middleware)
    stripped = _STRIPPED.get((cls, hooks))
    if stripped is None:
        namespace: dict[str, Any] = {h: getattr(AgentMiddleware, h) for h in hooks}
        namespace.update(__module__=cls.__module__, __qualname__=cls.__qualname__)
        stripped = _STRIPPED[cls, hooks] = type(cls.__name__, (cls,), namespace)
    clone = copy.copy(middleware)
    clone.__class__ = stripped
    return clone


class _Fused(AgentMiddleware):
    def __init__(self, members: list[tuple[type, Middleware]], kind: str) -> None:
        super().__init__()
        sync, async_ = HOOKS[kind]
        # The members' own hook functions, bound to their hook-less copies.
        self.hooks = [getattr(cls, sync).__get__(m) for cls, m in members]
        self.ahooks = [getattr(cls, async_).__get__(m) for cls, m in members]
        self._name = f"{type(self).__name__}[{'+'.join(m.name for _, m in members)}]"

    @property
    def name(self) -> str:
        return self._name


# --------------------------------------------------------------------------- model calls

Layer = tuple[ModelResponse, Sequence[Command]]
_NONE: tuple[Command, ...] = ()


def _split(result: Any) -> Layer:
    """A hook's result as create_agent normalizes it between layers: (response, commands)."""
    if type(result) is ModelResponse:  # the usual result, first
        return result, _NONE
    if isinstance(result, ExtendedModelResponse):
        return result.model_response, (result.command,) if result.command is not None else _NONE
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result], structured_response=None), _NONE
    return result, _NONE


def _joined(response: ModelResponse, commands: Sequence[Command]) -> Any:
    """One result for create_agent: the commands' updates in order, as one command."""
    if not commands:
        return response
    if len(commands) == 1:
        return ExtendedModelResponse(model_response=response, command=commands[0])
    updates: list[tuple[str, Any]] = []
    for command in commands:
        update = command.update
        updates.extend(update.items() if isinstance(update, dict) else update or ())
    first = next((c for c in commands if c.goto or c.graph or c.resume is not None), None)
    command = Command(
        update=updates,
        goto=first.goto if first else (),
        graph=first.graph if first else None,
        resume=first.resume if first else None,
    )
    return ExtendedModelResponse(model_response=response, command=command)


class FusedModelCalls(_Fused):
    """Adjacent harness `wrap_model_call` hooks run as one.

    Each layer but the outermost is run by the handler its outer layer's hook is given: that
    handler runs the layer's hook (with the handler of the next layer, if any) and keeps the
    layer's commands, those of the last attempt when the outer hook calls it again; a layer's
    commands are its inner layers' and then its own. A layer costs one call (under `ainvoke`,
    one coroutine) besides its hook."""

    def __init__(self, members: list[tuple[type, Middleware]]) -> None:
        super().__init__(members, "model")
        self._last = len(self.hooks) - 1

    def _handler(
        self, index: int, handler: Callable[..., Any], sink: list[Command]
    ) -> Callable[[ModelRequest], ModelResponse]:
        """The handler of layer `index - 1`: runs layer `index`, its commands into `sink`."""
        hook = self.hooks[index]
        inner = None if index == self._last else index + 1

        def run(request: ModelRequest) -> ModelResponse:
            sink.clear()  # a retrying hook keeps only the last attempt's commands
            if inner is None:
                response, commands = _split(hook(request, handler))
            else:
                below: list[Command] = []
                response, commands = _split(hook(request, self._handler(inner, handler, below)))
                sink.extend(below)
            sink.extend(commands)
            return response

        return run

    def _ahandler(
        self, index: int, handler: Callable[..., Awaitable[Any]], sink: list[Command]
    ) -> Callable[[ModelRequest], Awaitable[ModelResponse]]:
        """`_handler` under `ainvoke`."""
        hook = self.ahooks[index]
        inner = None if index == self._last else index + 1

        async def run(request: ModelRequest) -> ModelResponse:
            sink.clear()
            if inner is None:
                response, commands = _split(await hook(request, handler))
            else:
                below: list[Command] = []
                next_handler = self._ahandler(inner, handler, below)
                response, commands = _split(await hook(request, next_handler))
                sink.extend(below)
            sink.extend(commands)
            return response

        return run

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        below: list[Command] = []
        response, commands = _split(self.hooks[0](request, self._handler(1, handler, below)))
        return _joined(response, [*below, *commands] if below else commands)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[..., Awaitable[Any]]
    ) -> Any:
        below: list[Command] = []
        inner = self._ahandler(1, handler, below)
        response, commands = _split(await self.ahooks[0](request, inner))
        return _joined(response, [*below, *commands] if below else commands)


# --------------------------------------------------------------------------- tool calls


class FusedToolCalls(_Fused):
    """Adjacent harness `wrap_tool_call` hooks run as one."""

    def __init__(self, members: list[tuple[type, Middleware]]) -> None:
        super().__init__(members, "tool")
        self._depth = len(self.hooks)

    def _call(self, index: int, request: Any, execute: Callable[[Any], Any]) -> Any:
        if index == self._depth:
            return execute(request)
        return self.hooks[index](request, lambda r: self._call(index + 1, r, execute))

    def _acall(self, index: int, request: Any, execute: Callable[[Any], Any]) -> Awaitable[Any]:
        """The awaitable of layer `index` (each layer's own coroutine, none around it)."""
        if index == self._depth:
            return execute(request)
        return self.ahooks[index](request, lambda r: self._acall(index + 1, r, execute))

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return self._call(0, request, handler)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return await self._acall(0, request, handler)
