"""Harness tools (file tools, `task`): their argument models declared once, and no copy of the
graph state on every call.

Two costs of `StructuredTool.from_function` that a harness would pay again and again:

- Inferring the argument model from the function's signature (langchain-core's
  `create_schema_from_function`) takes tens of milliseconds per tool, and was the largest piece of
  `agentctl run`'s start-up. The arguments are declared instead, once, in
  `runner.check.tool_args` (which also checks cassettes against them); a tool's model is that
  model plus the injected `runtime` argument, made once per process and reused by every agent.
  pydantic takes the `runtime` as given (`_Injected`): it comes from LangGraph, never from the
  model, and a validator of the `ToolRuntime` dataclass cost about 2 ms per tool to build.
- langchain-core validates a call's arguments with that model and then `model_dump()`s it, only
  to learn which arguments were given. With a `runtime: ToolRuntime` field, the dump would walk
  the runtime's `state`: every message of the conversation and every file of a state backend,
  converted to dicts and thrown away, on every call, so a file tool would cost more the longer
  the conversation. The `runtime` field is marked `exclude=True`, so the dump skips it. The
  runtime is still injected (langchain-core passes injected arguments from the call, not from
  the dump), and the schema the model sees never has the field.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.tools import InjectedToolArg, StructuredTool
from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, create_model
from pydantic_core import CoreSchema, core_schema

from runner.check.tool_args import TOOL_ARGS
from runner.replay.calls import TASK_CALL, TaskCall

__all__ = ["TASK_CALL", "TaskCall", "harness_tool", "task_call"]

_SCHEMAS: dict[str, type[BaseModel]] = {}


class _Lenient(BaseModel):
    """What the inferred models were: extra arguments ignored (the declared ones refuse them, for
    cassettes), any type allowed (`ToolRuntime`)."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)


class _Injected(InjectedToolArg):
    """The mark of the `runtime` field: an injected argument, so LangChain leaves it out of the
    schema the model sees (as it does a bare `ToolRuntime`), and any value, so pydantic builds
    no validator for the `ToolRuntime` dataclass and its fields (it passed the runtime through
    unchanged anyway)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.any_schema()


def harness_tool(
    name: str,
    description: str,
    func: Callable[..., Any],
    coroutine: Callable[..., Awaitable[Any]],
) -> StructuredTool:
    """`StructuredTool.from_function(...)` with the declared arguments of the harness tool `name`
    (`runner.check.tool_args`) and an injected `runtime` left out of `model_dump`; `func` and
    `coroutine` take those arguments and `runtime`."""
    schema = _SCHEMAS.get(name)
    if schema is None:
        fields: Any = {"runtime": (Annotated[ToolRuntime, _Injected()], Field(exclude=True))}
        schema = _SCHEMAS[name] = create_model(
            name, __base__=(TOOL_ARGS[name], _Lenient), __module__=__name__, **fields
        )
    return StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=name,
        description=description,
        args_schema=schema,
        infer_schema=False,
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
