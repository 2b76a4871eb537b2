"""Evict large tool INPUTS from the conversation once the tool has used them.

A `write_file` with 200 KB of content sits in the AI message that asked for it, and is sent to
the model again on every later turn. Once the call has run, the content is on the backend (the
file itself, or `/large_tool_inputs/<call id>.<argument>` for other tools), so the argument can be
replaced by a short reference the model can follow with `read_file`.

Two hooks, because parallel tool calls finish independently: after a call, `wrap_tool_call`
records which of its arguments are now stored (in a state key whose reducer merges, so parallel
calls do not overwrite each other); at the next model call, `wrap_model_call` rewrites those AI
messages once and returns the rewritten copies as a state update (same ids: they replace the
originals), so the saving persists and is not recomputed on every turn. When nothing is pending
the hook only checks one empty key.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired, Self, TypedDict, cast

from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.types import Command

from runner.backends import BackendError, BackendProvider
from runner.middleware.filesystem import CHARS_PER_TOKEN, sanitize_id

LARGE_INPUTS_DIR = "/large_tool_inputs"
CLEAR = "__clear__"
# Tools whose large argument ends up, whole, in the file they name.
STORED_BY_TOOL = {"write_file": ("content", "file_path"), "edit_file": ("new_string", "file_path")}

Pending = dict[str, dict[str, dict[str, str]]]  # ai message id -> tool call id -> arg -> text


def merge_pending(left: Pending | None, right: Pending | None) -> Pending:
    if right is None:
        return dict(left or {})
    if CLEAR in right:
        return {}
    merged = {key: dict(calls) for key, calls in (left or {}).items()}
    for message_id, calls in right.items():
        merged.setdefault(message_id, {}).update(calls)
    return merged


class PendingChannel(BinaryOperatorAggregate[Pending]):
    """The channel LangGraph makes for a `merge_pending` reducer, copied without running its
    constructor again: LangGraph copies every channel at each edge it reads, twice a step, and
    `BinaryOperatorAggregate.copy` re-runs `__init__` (which normalizes the type and makes an
    empty value it then replaces)."""

    __slots__ = ()

    def copy(self) -> Self:
        new = object.__new__(type(self))
        new.key, new.typ, new.operator, new.value = self.key, self.typ, self.operator, self.value
        return new


class LargeInputsState(TypedDict):
    # The channel must be the LAST annotation (as a reducer must: LangGraph takes only
    # `metadata[-1]` as one, and with anything after it parallel tool calls fail with "Can
    # receive only one value").
    evicted_inputs: NotRequired[
        Annotated[Pending, PrivateStateAttr, PendingChannel(Pending, merge_pending)]
    ]


def reference(size: int, path: str, *, whole_file: bool) -> str:
    where = f"it is the content of {path}" if whole_file else f"it is saved in {path}"
    return f"[{size:,} characters, removed from the conversation to save context; {where}]"


class LargeInputsMiddleware(AgentMiddleware):
    state_schema = LargeInputsState  # type: ignore[assignment]

    def __init__(self, provider: BackendProvider, *, evict_inputs_over_tokens: int) -> None:
        super().__init__()
        self.provider = provider
        self.max_chars = CHARS_PER_TOKEN * evict_inputs_over_tokens

    # ----------------------------------------------------------------------- recording

    def _large_args(self, call: Mapping[str, Any]) -> dict[str, str]:
        return {
            name: value
            for name, value in (call.get("args") or {}).items()
            if isinstance(value, str) and len(value) > self.max_chars
        }

    def _ai_message_id(self, request: Any) -> str | None:
        call_id = request.tool_call.get("id")
        for message in reversed(request.state.get("messages") or []):
            if isinstance(message, AIMessage) and any(
                c.get("id") == call_id for c in message.tool_calls
            ):
                return message.id
        return None

    def _plan(self, request: Any, result: Any) -> tuple[dict[str, str], dict[str, str]]:
        """(references for the call's large args, args that still need saving to a file)."""
        call = request.tool_call
        large = self._large_args(call)
        if not large:
            return {}, {}
        succeeded = _status(result) != "error"
        references: dict[str, str] = {}
        to_save: dict[str, str] = {}
        stored = STORED_BY_TOOL.get(call["name"])
        for name, value in large.items():
            if stored and succeeded and name == stored[0]:
                target = str(call["args"].get(stored[1], ""))
                references[name] = reference(
                    len(value), target, whole_file=call["name"] == "write_file"
                )
            else:
                path = f"{LARGE_INPUTS_DIR}/{sanitize_id(call.get('id') or 'call')}.{name}"
                to_save[path] = value
                references[name] = reference(len(value), path, whole_file=True)
        return references, to_save

    def _record(
        self, request: Any, result: Any, references: dict[str, str], files: dict[str, Any]
    ) -> Any:
        if not references:
            return result
        message_id = self._ai_message_id(request)
        if message_id is None:
            return result
        update: dict[str, Any] = {
            "evicted_inputs": {message_id: {request.tool_call["id"]: references}}
        }
        if files:
            update["files"] = files
        if isinstance(result, ToolMessage):
            return Command(update={**update, "messages": [result]})
        if isinstance(result, Command) and isinstance(result.update, dict):
            merged = dict(result.update)
            if files:
                merged["files"] = {**(merged.get("files") or {}), **files}
            merged["evicted_inputs"] = update["evicted_inputs"]
            return Command(
                graph=result.graph, update=merged, resume=result.resume, goto=result.goto
            )
        return result

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        references, to_save = self._plan(request, result)
        files: dict[str, Any] = {}
        for path, content in to_save.items():
            try:
                written = self.provider.get(request.state, request.runtime.store).write(
                    path, content
                )
            except (BackendError, OSError):
                references = {k: v for k, v in references.items() if path not in v}
                continue
            files.update(written.files_update or {})
        return self._record(request, result, references, files)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await handler(request)
        references, to_save = self._plan(request, result)
        files: dict[str, Any] = {}
        for path, content in to_save.items():
            try:
                backend = await self.provider.aget(request.state, request.runtime.store)
                written = await backend.awrite(path, content)
            except (BackendError, OSError):
                references = {k: v for k, v in references.items() if path not in v}
                continue
            files.update(written.files_update or {})
        return self._record(request, result, references, files)

    # ----------------------------------------------------------------------- rewriting

    def _rewrite(self, request: ModelRequest) -> tuple[ModelRequest, list[BaseMessage]]:
        pending = cast("Pending", request.state.get("evicted_inputs") or {})
        if not pending:
            return request, []
        rewritten: list[BaseMessage] = []
        messages: list[Any] = []
        for message in request.messages:
            calls = pending.get(message.id or "")
            if calls and isinstance(message, AIMessage):
                replaced = _replace_args(message, calls)
                rewritten.append(replaced)
                messages.append(replaced)
            else:
                messages.append(message)
        return request.override(messages=messages), rewritten

    @staticmethod
    def _persist(response: Any, rewritten: list[BaseMessage]) -> Any:
        update: dict[str, Any] = {"messages": rewritten, "evicted_inputs": {CLEAR: {}}}
        if isinstance(response, ExtendedModelResponse):
            inner = response.command
            if inner is None:
                return ExtendedModelResponse(response.model_response, Command(update=update))
            if not isinstance(inner.update, dict):
                return response  # cannot combine: the rewrite is redone next call
            merged = dict(inner.update)
            merged["messages"] = [*(merged.get("messages") or []), *rewritten]
            merged["evicted_inputs"] = update["evicted_inputs"]
            command = Command(
                graph=inner.graph, update=merged, resume=inner.resume, goto=inner.goto
            )
            return ExtendedModelResponse(response.model_response, command)
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        request, rewritten = self._rewrite(request)
        response = handler(request)
        return self._persist(response, rewritten) if rewritten else response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        request, rewritten = self._rewrite(request)
        response = await handler(request)
        return self._persist(response, rewritten) if rewritten else response


def _status(result: Any) -> str:
    if isinstance(result, ToolMessage):
        return result.status
    if isinstance(result, Command) and isinstance(result.update, dict):
        for message in result.update.get("messages") or ():
            if isinstance(message, ToolMessage):
                return message.status
    return "success"


def _replace_args(message: AIMessage, calls: Mapping[str, Mapping[str, str]]) -> AIMessage:
    """A copy of `message` whose listed tool-call arguments are replaced, in every place a
    provider may read them from (tool_calls, content blocks, OpenAI-style additional_kwargs)."""
    tool_calls = [
        {**call, "args": {**call["args"], **calls[call["id"] or ""]}}
        if (call.get("id") or "") in calls
        else call
        for call in message.tool_calls
    ]
    content: Any = message.content
    if isinstance(content, list):
        content = [
            {**block, "input": {**(block.get("input") or {}), **calls[block["id"]]}}
            if isinstance(block, dict)
            and block.get("id") in calls
            and isinstance(block.get("input"), dict)
            else block
            for block in content
        ]
    extra = dict(message.additional_kwargs)
    if isinstance(extra.get("tool_calls"), list):
        extra["tool_calls"] = [
            {
                **raw,
                "function": {
                    **raw["function"],
                    "arguments": json.dumps(
                        {**json.loads(raw["function"].get("arguments") or "{}"), **calls[raw["id"]]}
                    ),
                },
            }
            if isinstance(raw, dict)
            and raw.get("id") in calls
            and isinstance(raw.get("function"), dict)
            else raw
            for raw in extra["tool_calls"]
        ]
    return message.model_copy(
        update={"tool_calls": tool_calls, "content": content, "additional_kwargs": extra}
    )
