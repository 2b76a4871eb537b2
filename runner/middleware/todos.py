"""Planning with `write_todos` (pending / in_progress / completed), LangChain's TodoListMiddleware.

Its system-prompt text joins the statically assembled prompt (see `runner.middleware.prompt`)
instead of being appended on every model call, so this subclass drops the per-call wrap hook.
It also drops the `after_model` node, which cost a graph superstep on every model call only to
reject parallel `write_todos` calls: the tool itself does that check, from the AI message that
asked for it (the last one in the state it runs on), and answers each of the parallel calls
with the same error as before. The `todos` state key is unchanged.

A todo item may carry an `id` beside LangChain's `content` and `status` (a model that tracks
items across updates, a cassette that names them): the tool's argument model keeps it, so it
reaches the state and the `todos` events instead of being dropped when the arguments are read.
"""

from __future__ import annotations

from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, TodoListMiddleware
from langchain.agents.middleware.todo import Todo as LangChainTodo
from langchain.agents.middleware.todo import _write_todos
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.types import Command
from pydantic import BaseModel

from runner.middleware.prompt import PromptSection

PARALLEL_ERROR = (
    "Error: The `write_todos` tool should never be called multiple times "
    "in parallel. Please call it only once per model invocation to update "
    "the todo list."
)


class Todo(LangChainTodo):
    """A todo item: its content, its status and, optionally, an id."""

    id: NotRequired[str]
    """An id the item keeps across updates of the list (optional)."""


class WriteTodosInput(BaseModel):
    """Input schema for the `write_todos` tool."""

    todos: list[Todo]


def parallel_calls_error(runtime: ToolRuntime) -> ToolMessage | None:
    """The error for this call when its AI message asks for `write_todos` more than once."""
    messages = (runtime.state or {}).get("messages") or []
    asked = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if asked is None or sum(c["name"] == "write_todos" for c in asked.tool_calls) < 2:
        return None
    return ToolMessage(
        content=PARALLEL_ERROR, tool_call_id=runtime.tool_call_id or "", status="error"
    )


def write_todos(runtime: ToolRuntime[Any, Any], todos: list[Any]) -> Command | ToolMessage:
    """Create and manage a structured task list for your current work session."""
    return parallel_calls_error(runtime) or _write_todos(runtime, todos)


async def awrite_todos(runtime: ToolRuntime[Any, Any], todos: list[Any]) -> Command | ToolMessage:
    """Create and manage a structured task list for your current work session."""
    return write_todos(runtime, todos)


class TodosMiddleware(TodoListMiddleware):
    # Restoring the base hooks tells create_agent this middleware has no wrap or node hooks.
    wrap_model_call = AgentMiddleware.wrap_model_call  # type: ignore[assignment]
    awrap_model_call = AgentMiddleware.awrap_model_call  # type: ignore[assignment]
    after_model = AgentMiddleware.after_model
    aafter_model = AgentMiddleware.aafter_model

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tools = [
            StructuredTool.from_function(
                name="write_todos",
                description=self.tool_description,
                func=write_todos,
                coroutine=awrite_todos,
                args_schema=WriteTodosInput,
                infer_schema=False,
            )
        ]

    def prompt_section(self) -> PromptSection:
        return PromptSection("todos", text=self.system_prompt)
