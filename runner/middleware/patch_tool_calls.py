"""Answer dangling tool calls before a run starts.

A thread can stop between the model asking for a tool and the tool answering: the process was
killed, or the user sent a new message instead of answering an approval. Providers reject a
history where an AI tool call has no ToolMessage, so before the agent runs, each such call gets
a ToolMessage saying it was cancelled, placed right after the AI message that made it.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AnyMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES


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


def patch_dangling(messages: list[AnyMessage]) -> list[AnyMessage] | None:
    """The history with cancelled ToolMessages inserted, or None when nothing dangles."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    if not any(
        call["id"] not in answered
        for m in messages
        if m.type == "ai"
        for call in getattr(m, "tool_calls", None) or ()
    ):
        return None
    patched: list[AnyMessage] = []
    for message in messages:
        patched.append(message)
        for call in getattr(message, "tool_calls", None) or () if message.type == "ai" else ():
            if call["id"] not in answered:
                patched.append(cancelled_message(call["name"], call["id"]))
    return patched


class PatchToolCallsMiddleware(AgentMiddleware):
    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        patched = patch_dangling(state.get("messages") or [])
        if patched is None:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *patched]}
