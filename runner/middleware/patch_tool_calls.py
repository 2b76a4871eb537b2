"""Answer dangling tool calls before the model sees them.

A thread can stop between the model asking for a tool and the tool answering: the process was
killed, or the user sent a new message instead of answering an approval. Providers reject a
history where an AI tool call has no ToolMessage, so each such call gets a ToolMessage saying it
was cancelled, placed right after the AI message that made it.

This is a model-call hook, not a `before_agent` node: a node is a graph step, and every step
writes a checkpoint holding the whole conversation, so a node that almost never changes anything
cost one full checkpoint per turn. The hook checks the messages it is about to send and patches
only the request when something dangles. The check reads only the messages added since the
conversation's previous model call (`runner.middleware.tallies`: the calls asked and answered up
to there are remembered by message ids, and used only while that part is still the start of the
history).
`runner.run.Session` also writes the answers into the thread when a new message arrives
(`patch_dangling` on the state it reads for that turn anyway), so a saved conversation shows
what the model was told.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AnyMessage, ToolMessage

from runner.middleware.tallies import Tallies


def cancelled_message(name: str, call_id: str) -> ToolMessage:
    return ToolMessage(
        content=(
            f"Tool call {name} with id {call_id} was cancelled - another message came in "
            "before it could be completed."
        ),
        name=name,
        tool_call_id=call_id,
        status="error",
    )


class _Calls:
    """The tool calls a history has answered, and those it asked for and has not answered."""

    __slots__ = ("answered", "open")

    def __init__(self) -> None:
        self.answered: set[str] = set()
        self.open: set[str] = set()


def _tally(calls: _Calls, messages: Sequence[Any]) -> None:
    """Add the tool calls `messages` ask for and answer to `calls`."""
    for message in messages:
        kind = message.type
        if kind == "ai":
            for call in message.tool_calls or ():
                if call["id"] not in calls.answered:
                    calls.open.add(call["id"])
        elif kind == "tool":
            calls.answered.add(message.tool_call_id)
            calls.open.discard(message.tool_call_id)


def has_dangling(messages: Sequence[Any]) -> bool:
    """Whether some AI tool call in `messages` has no ToolMessage."""
    calls = _Calls()
    _tally(calls, messages)
    return bool(calls.open)


class DanglingCheck:
    """`has_dangling` for the growing histories of model calls and turns: each conversation's
    calls are tallied once (`runner.middleware.tallies`), and each call reads only the messages
    added since."""

    def __init__(self) -> None:
        self.tallies: Tallies[_Calls] = Tallies(_Calls, _tally)

    def __call__(self, messages: Sequence[Any]) -> bool:
        return bool(self.tallies(messages).open)


def patch_dangling(
    messages: Sequence[AnyMessage], *, dangling: Callable[[Sequence[Any]], bool] = has_dangling
) -> list[AnyMessage] | None:
    """The history with cancelled ToolMessages inserted, or None when nothing dangles
    (`dangling` tells first, e.g. a `DanglingCheck`; the history is read whole only when it
    says something dangles)."""
    if not dangling(messages):
        return None
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    patched: list[AnyMessage] = []
    for message in messages:
        patched.append(message)
        for call in getattr(message, "tool_calls", None) or () if message.type == "ai" else ():
            if call["id"] not in answered:
                patched.append(cancelled_message(call["name"], call["id"]))
    return patched if len(patched) > len(messages) else None


class PatchToolCallsMiddleware(AgentMiddleware):
    def __init__(self) -> None:
        super().__init__()
        self._dangling = DanglingCheck()

    def _patched(self, request: ModelRequest) -> ModelRequest:
        if not self._dangling(request.messages):
            return request
        patched = patch_dangling(request.messages)
        return request if patched is None else request.override(messages=patched)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._patched(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        return await handler(self._patched(request))
