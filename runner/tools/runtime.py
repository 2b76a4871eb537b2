"""Harness tools (file tools, `task`): their argument models built once, and no copy of the graph
state on every call.

Two costs of `StructuredTool.from_function` that a harness pays again and again:

- Inferring the argument model from the function's signature takes tens of milliseconds per
  tool, and every agent (the main one, each subagent) makes its own file tools from the same
  functions. The model depends only on the function's code and the tool's name, so it is made
  once per process and reused.
- langchain-core validates a call's arguments with that model and then `model_dump()`s it, only
  to learn which arguments were given. With a `runtime: ToolRuntime` field, the dump walks the
  runtime's `state`: every message of the conversation and every file of a state backend,
  converted to dicts and thrown away, on every call, so a file tool costs more the longer the
  conversation. The `runtime` field is marked `exclude=True`, so the dump skips it. The runtime
  is still injected (langchain-core passes injected arguments from the call, not from the
  dump), and the schema the model sees never had the field.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import CodeType
from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field, create_model

from runner.replay.calls import TASK_CALL, TaskCall

__all__ = ["TASK_CALL", "TaskCall", "harness_tool", "task_call"]

_SCHEMAS: dict[tuple[CodeType, str, bool], type[BaseModel]] = {}


def harness_tool(
    name: str,
    description: str,
    func: Callable[..., Any],
    coroutine: Callable[..., Awaitable[Any]],
    *,
    parse_docstring: bool = False,
) -> StructuredTool:
    """`StructuredTool.from_function(...)` with the argument model of `func` built once and
    its `runtime` argument left out of `model_dump`."""
    key = (func.__code__, name, parse_docstring)
    schema = _SCHEMAS.get(key)
    if schema is None:
        inferred = StructuredTool.from_function(
            func=func, name=name, description=description, parse_docstring=parse_docstring
        ).args_schema
        assert isinstance(inferred, type) and issubclass(inferred, BaseModel)
        schema = _SCHEMAS[key] = _lean(inferred)
    return StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=name,
        description=description,
        args_schema=schema,
        infer_schema=False,
    )


def _lean(schema: type[BaseModel]) -> type[BaseModel]:
    field = schema.model_fields.get("runtime")
    if field is None:
        return schema
    fields: Any = {"runtime": (field.annotation, Field(exclude=True))}
    return create_model(
        schema.__name__,
        __base__=schema,
        __module__=schema.__module__,
        __doc__=schema.__doc__,
        **fields,
    )


def calling_message(runtime: Any) -> Any | None:
    """The AI message in the tool runtime's state that made the runtime's tool call (None
    without a call id or such a message): what parallel calls of one model reply share."""
    call_id = runtime.tool_call_id
    if call_id is None:
        return None
    for message in reversed((runtime.state or {}).get("messages") or []):
        calls = getattr(message, "tool_calls", None) or ()
        if message.type == "ai" and any(c.get("id") == call_id for c in calls):
            return message
    return None


def task_call(runtime: Any, subagent: str, description: str) -> TaskCall:
    """The `TaskCall` of the runtime's `task` call to `subagent`."""
    calling = calling_message(runtime)
    siblings = tuple(
        (c.get("id"), str((c.get("args") or {}).get("description", "")))
        for c in (calling.tool_calls if calling is not None else ())
        if c.get("name") == "task" and (c.get("args") or {}).get("subagent_type") == subagent
    )
    own = (runtime.tool_call_id, description)
    return TaskCall(subagent, runtime.tool_call_id, description, siblings or (own,))
