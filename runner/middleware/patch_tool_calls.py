"""Answer dangling tool calls before the model sees them.

A thread can stop between the model asking for a tool and the tool answering: the process was
killed, or the user sent a new message instead of answering an approval. Providers reject a
history where an AI tool call has no ToolMessage, so each such call gets a ToolMessage saying it
was cancelled, placed right after the AI message that made it.

This is a model-call hook, not a `before_agent` node: a node is a graph step, and every step
writes a checkpoint holding the whole conversation, so a node that almost never changes anything
cost one full checkpoint per turn. The hook checks the messages it is about to send (one pass,
no copy) and patches only the request when something dangles. `runner.run.Session` also writes
the answers into the thread when a new message arrives (`patch_dangling` on the state it reads
for that turn anyway), so a saved conversation shows what the model was told.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

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


def has_dangling(messages: Sequence[Any]) -> bool:
    """Whether some AI tool call in `messages` has no ToolMessage."""
    asked: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        kind = message.type
        if kind == "ai":
            for call in message.tool_calls or ():
                asked.add(call["id"])
        elif kind == "tool":
            answered.add(message.tool_call_id)
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
    def _patched(self, request: ModelRequest) -> ModelRequest:
        patched = patch_dangling(request.messages)
        return request if patched is None else request.override(messages=patched)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._patched(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        return await handler(self._patched(request))
