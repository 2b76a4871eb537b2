"""Answer dangling tool calls before the model sees them.

A thread can stop between the model asking for a tool and the tool answering: the process was
killed, or the user sent a new message instead of answering an approval. Providers reject a
history where an AI tool call has no ToolMessage, so each such call gets a ToolMessage saying it
was cancelled, placed right after the AI message that made it.

This is a model-call hook, not a `before_agent` node: a node is a graph step, and every step
writes a checkpoint holding the whole conversation, so a node that almost never changes anything
cost one full checkpoint per turn. The hook checks the messages it is about to send and patches
only the request when something dangles. The check reads only the messages added since the
conversation's previous model call: the calls asked and answered up to there are remembered with
that part of the history, and used only when it is still the start of the one checked now.
`runner.run.Session` also writes the answers into the thread when a new message arrives
(`patch_dangling` on the state it reads for that turn anyway), so a saved conversation shows
what the model was told.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AnyMessage, ToolMessage


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


def _tally(messages: Sequence[Any], asked: set[str], answered: set[str]) -> None:
    """Add the tool calls `messages` ask for and answer to `asked` and `answered`."""
    for message in messages:
        kind = message.type
        if kind == "ai":
            for call in message.tool_calls or ():
                asked.add(call["id"])
        elif kind == "tool":
            answered.add(message.tool_call_id)


def has_dangling(messages: Sequence[Any]) -> bool:
    """Whether some AI tool call in `messages` has no ToolMessage."""
    asked: set[str] = set()
    answered: set[str] = set()
    _tally(messages, asked, answered)
    return not asked <= answered


class _Tally(NamedTuple):
    """The calls asked for and answered by `prefix`, the start of a conversation."""

    prefix: list[Any]
    asked: set[str]
    answered: set[str]


CONVERSATIONS_REMEMBERED = 64


class DanglingCheck:
    """`has_dangling` for the growing histories of model calls: each conversation's tally is
    kept (by its first message) with the messages it covers, and reused when those messages
    are still the start of the history (the same objects, or equal ones); then only the rest
    is read. Any other history is read whole."""

    def __init__(self) -> None:
        self._tallies: dict[int, _Tally] = {}
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[Any]) -> bool:
        if not messages:
            return False
        key = id(messages[0])
        with self._lock:
            known = self._tallies.pop(key, None)
        if known is not None and (
            len(known.prefix) > len(messages) or messages[: len(known.prefix)] != known.prefix
        ):
            known = None
        if known is None:
            asked: set[str] = set()
            answered: set[str] = set()
            start = 0
        else:  # taken out of the cache above, so its sets are this call's alone to extend
            asked, answered, start = known.asked, known.answered, len(known.prefix)
        _tally(messages[start:], asked, answered)
        with self._lock:
            if len(self._tallies) >= CONVERSATIONS_REMEMBERED:
                self._tallies.pop(next(iter(self._tallies)))
            self._tallies[key] = _Tally(list(messages), asked, answered)
        return not asked <= answered


def patch_dangling(messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
    """The history with cancelled ToolMessages inserted, or None when nothing dangles."""
    if not has_dangling(messages):
        return None
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    patched: list[AnyMessage] = []
    for message in messages:
        patched.append(message)
        for call in getattr(message, "tool_calls", None) or () if message.type == "ai" else ():
            if call["id"] not in answered:
                patched.append(cancelled_message(call["name"], call["id"]))
    return patched


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
