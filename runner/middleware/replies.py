"""Check every model reply before the agent acts on it, and every request before it is sent.

Real models, weak ones and lax servers especially, send replies a LangChain agent loop takes at
face value:

- a reply cut off by the output token limit (`finish_reason: length`, Anthropic's
  `stop_reason: max_tokens`) whose last tool call was "repaired" from partial JSON into a
  valid-looking call: run as is, `write_file` writes half a file and reports success;
- tool calls whose arguments are not a JSON object (not JSON at all, or an array): they land in
  `invalid_tool_calls`, which the loop ignores, so the run ends as if the model had answered,
  and the next request carries the raw arguments back to a server that rejects them;
- tool calls with a missing or repeated id, which breaks the pairing of calls and results;
- an empty reply (no text, no tool call), which ends the turn with nothing to show.

So, inside the model call (this is a `wrap_model_call`, not an `after_model` node: the reply
must be repaired before it reaches the state, the event stream and the tool node, and a node
hook would cost a graph step per model call):

- every call of a cut-off reply, and every call with unreadable arguments, is kept in the
  AI message with readable arguments (`{}` for unreadable ones) and answered at once by an error
  ToolMessage that tells the model what went wrong and what to do; the loop then goes back to
  the model (`create_agent` does so when every call of the last reply is answered);
- missing and repeated ids (within the reply or with the history) are replaced by fresh ones;
- a call whose arguments cannot be stored in the thread (an integer outside 64 bits, NaN, an
  unknown object: `runner.middleware.storable`) gets `{}` arguments and an error result;
- a cut-off or empty reply is reported as a `warning` event (`truncated_reply`, `empty_reply`);
- a reply whose whole text is a tool call written out (`<tool_call>{"name": "write_file",
  "arguments": {...}}</tool_call>`, `<tools>...</tools>`, or a fenced JSON block) naming one of
  the agent's tools, which the server did not turn into a call (small local models do this when
  the server's chat template does not parse their calls), is reported as a `text_tool_call`
  warning; with the model's `parse_text_tool_calls` it becomes that call and runs.

Before the call, the history is checked as a strict provider would (a thread saved before this
middleware existed may hold an invalid call, and was unusable): an invalid call becomes a
readable one paired with an error result, and an empty AI message gets a placeholder text
(Anthropic refuses empty assistant messages). The repaired history is what the model sees; the
thread keeps what it had. Each call reads only the messages added since the previous call of the
same conversation, across turns too (`runner.middleware.tallies`: known by message ids), so the
check stays O(new messages) on long runs, and copies nothing unless something needs repair.
Answered calls never run, and the approvals middleware does not put them to a person
(`runner.middleware.approvals`).

In the chain it sits after the harness tools and before Summarization, limits, retries,
fallbacks, prompt caching and the spec's own middleware (innermost, see `runner.middleware`):
outer to everything that calls a model or wraps the call, so a summarizer, a fallback model or
a user's hook never sees a broken history, and a retried or fallback reply is checked too. Next
to LargeInputs and Summarization its hook is fused with theirs (`runner.middleware.fused`), so it
adds no wrap hook of its own to a run.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from runner.events import emit_warning
from runner.middleware.storable import unstorable, unstorable_call_message
from runner.middleware.tallies import Tallies

__all__ = [
    "EMPTY_REPLY_PLACEHOLDER",
    "ReplyCheckMiddleware",
    "finish_reason",
    "repaired_history",
    "truncated",
]

RAW_SHOWN = 160
"""Characters of unreadable arguments quoted back to the model."""

EMPTY_REPLY_PLACEHOLDER = "(empty reply)"
"""What the model sees in place of one of its empty replies (providers refuse empty messages)."""

# Where providers put why a reply stopped, and the values meaning "the output limit was hit".
_STOP_KEYS = ("finish_reason", "stop_reason", "done_reason")
_LIMIT_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})


def finish_reason(message: Any) -> str | None:
    """Why the provider says the reply stopped (`stop`, `length`, `tool_calls`, `end_turn`,
    `max_tokens`, ...), whatever key it uses; None when it says nothing."""
    meta = getattr(message, "response_metadata", None) or {}
    for key in _STOP_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def truncated(message: Any) -> bool:
    """The reply stopped on the output token limit."""
    return finish_reason(message) in _LIMIT_REASONS


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        return any(
            (isinstance(block, str) and block.strip())
            or (
                isinstance(block, dict)
                and block.get("type") == "text"
                and str(block.get("text") or "").strip()
            )
            for block in content
        )
    return bool(content)


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _stable_id(message: AnyMessage, index: int) -> str:
    """An id for the `index`-th id-less invalid call of `message`, the same on every request."""
    return f"call_{uuid.uuid5(uuid.NAMESPACE_OID, f'{message.id}:{index}').hex[:24]}"


def _unreadable(raw: Any) -> str:
    """Why arguments could not be used, in a few words."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return "there were none"
    if not isinstance(raw, str):
        return f"they were a JSON {type(raw).__name__}, not an object"
    try:
        value = json.loads(raw)
    except ValueError as exc:
        reason = getattr(exc, "msg", str(exc))
        position = getattr(exc, "pos", None)
        return f"not valid JSON: {reason}" + (f" at character {position}" if position else "")
    kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
    return f"they are {kind} in JSON, not an object"


def _quoted(raw: Any) -> str:
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)
    return text[:RAW_SHOWN] + ("…" if len(text) > RAW_SHOWN else "")


def invalid_call_message(name: str, call_id: str, raw: Any) -> ToolMessage:
    return ToolMessage(
        content=(
            f"Error: the arguments of this {name} call could not be read ({_unreadable(raw)}), "
            f"so it was not run. They began: {_quoted(raw)!s}\n"
            f"Call {name} again with its arguments as one JSON object, "
            "with every required argument."
        ),
        name=name,
        tool_call_id=call_id,
        status="error",
    )


def truncated_call_message(name: str, call_id: str) -> ToolMessage:
    return ToolMessage(
        content=(
            f"Error: your reply was cut off by the output token limit while this {name} call "
            "was being written, so it was not run: its arguments may be incomplete. Retry in "
            "smaller pieces: split long content over several calls (write the first part, "
            "then add the rest with further calls), and keep the text around tool calls short."
        ),
        name=name,
        tool_call_id=call_id,
        status="error",
    )


# --------------------------------------------------------------------------- calls as text

_TAGGED = re.compile(r"<(tool_call|tools)>\s*(.*?)\s*</\1>", re.S)
_FENCED = re.compile(r"```[A-Za-z]*\s*\n(.*?)\n?\s*```", re.S)


def _call_of(text: str, tools: set[str]) -> dict[str, Any] | None:
    """`{"name": ..., "arguments": {...}}` (or `parameters`, `args`; arguments also as a JSON
    string) naming one of `tools`, as a tool call; None for anything else."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict) or value.get("name") not in tools:
        return None
    args: Any = next((value[k] for k in ("arguments", "parameters", "args") if k in value), {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return {"name": value["name"], "args": args, "id": _new_id(), "type": "tool_call"}


def text_tool_calls(text: str, tools: set[str]) -> list[dict[str, Any]]:
    """The tool calls a reply's text consists of, when it is nothing but calls written out in
    `<tool_call>` / `<tools>` tags, one fenced JSON block, or bare JSON, each naming one of
    `tools`; empty when there is anything else (prose around a call is an answer that shows
    one, not a call)."""
    text = text.strip()
    if not text or not tools:
        return []
    tagged = list(_TAGGED.finditer(text))
    if tagged:
        if _TAGGED.sub("", text).strip():
            return []
        bodies = [m.group(2) for m in tagged]
    elif (fenced := _FENCED.fullmatch(text)) is not None:
        bodies = [fenced.group(1)]
    else:
        bodies = [text]
    calls = [_call_of(body, tools) for body in bodies]
    return [c for c in calls if c is not None] if all(calls) else []


def _tool_names(request: ModelRequest) -> set[str]:
    names = set()
    for tool in request.tools:
        name = tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", None)
        if isinstance(name, str):
            names.add(name)
    return names


# --------------------------------------------------------------------------- repair


def _without_tool_blocks(content: Any) -> Any:
    """Content without its `tool_use` blocks: Anthropic's client rebuilds them from
    `tool_calls`, so a repaired call (new id, readable arguments) is not sent twice."""
    if not isinstance(content, list):
        return content
    return [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_use")]


def _rebuilt(message: AIMessage, calls: Sequence[Any]) -> AIMessage:
    extra = {
        k: v
        for k, v in message.additional_kwargs.items()
        if k not in ("tool_calls", "function_call")
    }
    update: dict[str, Any] = {
        "tool_calls": calls,
        "invalid_tool_calls": [],
        "additional_kwargs": extra,
        "content": _without_tool_blocks(message.content),
    }
    if getattr(message, "tool_call_chunks", None):
        update["tool_call_chunks"] = []
    return message.model_copy(update=update)


def _readable_calls(
    message: AIMessage, taken: set[str], *, cut_off: bool
) -> tuple[list[dict[str, Any]], list[ToolMessage], bool]:
    """The message's calls, all readable and with ids unique among themselves and not in
    `taken` (the history's), the error results for the ones that must not run, and whether
    anything changed."""
    calls: list[Any] = []
    answers: list[ToolMessage] = []
    changed = False
    mine: set[str] = set()
    for call in message.tool_calls:
        call_id = call.get("id")
        if not call_id or call_id in taken or call_id in mine:
            call_id, changed = _new_id(), True
        mine.add(call_id)
        problem = unstorable(call.get("args"), json_only=True)
        if problem is not None:  # kept as is, the call would end the run at the next checkpoint
            changed = True
            calls.append({**call, "id": call_id, "args": {}})
        else:
            calls.append({**call, "id": call_id} if call_id != call.get("id") else call)
        if cut_off:
            answers.append(truncated_call_message(call["name"], call_id))
        elif problem is not None:
            answers.append(unstorable_call_message(call["name"], call_id, problem))
    for bad in message.invalid_tool_calls:
        changed = True
        call_id = bad.get("id")
        if not call_id or call_id in taken or call_id in mine:
            call_id = _new_id()
        mine.add(call_id)
        name = bad.get("name") or "unknown_tool"
        calls.append({"name": name, "args": {}, "id": call_id, "type": "tool_call"})
        answers.append(
            truncated_call_message(name, call_id)
            if cut_off
            else invalid_call_message(name, call_id, bad.get("args"))
        )
    return calls, answers, changed


def _needs_repair(message: AnyMessage) -> bool:
    return message.type == "ai" and bool(
        message.invalid_tool_calls or not (message.content or message.tool_calls)
    )


def repaired_history(messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
    """`messages` as a strict provider accepts them, or None when they already are.

    An AI message's invalid calls become readable calls (`{}` arguments) answered by an error
    result placed after the results it already has (a result LangChain added for it is kept);
    an empty AI message gets a placeholder text. Ids are made deterministic from the message id,
    so every request of a run sends the same history.
    """
    if not any(_needs_repair(m) for m in messages):
        return None
    repaired: list[AnyMessage] = []
    pending: dict[str, ToolMessage] = {}  # answers due after the current AI message's results
    for message in messages:
        if message.type == "tool":
            pending.pop(message.tool_call_id, None)
            repaired.append(message)
            continue
        repaired.extend(pending.values())
        pending = {}
        if not (isinstance(message, AIMessage) and _needs_repair(message)):
            repaired.append(message)
            continue
        if not message.invalid_tool_calls:
            repaired.append(message.model_copy(update={"content": EMPTY_REPLY_PLACEHOLDER}))
            continue
        calls = list(message.tool_calls)
        for index, bad in enumerate(message.invalid_tool_calls):
            call_id = bad.get("id") or _stable_id(message, index)
            name = bad.get("name") or "unknown_tool"
            calls.append({"name": name, "args": {}, "id": call_id, "type": "tool_call"})
            pending[call_id] = invalid_call_message(name, call_id, bad.get("args"))
        repaired.append(_rebuilt(message, calls))
    repaired.extend(pending.values())
    return repaired


# --------------------------------------------------------------------------- the middleware


class _Checked:
    """What a history was found to hold: whether a reply in it needs repair, and its tool call
    ids."""

    __slots__ = ("broken", "ids")

    def __init__(self) -> None:
        self.broken = False
        self.ids: set[str] = set()


def _check_history(checked: _Checked, messages: Sequence[AnyMessage]) -> None:
    for message in messages:
        if message.type == "ai":
            if message.invalid_tool_calls or not (message.content or message.tool_calls):
                checked.broken = True
            for call in message.tool_calls:
                checked.ids.add(call["id"] or "")


def _limit_message(reason: str | None, skipped: int) -> str:
    why = f"its output token limit (finish reason `{reason}`)"
    if skipped:
        calls = f"{skipped} tool call{'s' if skipped != 1 else ''}"
        verb = "were" if skipped != 1 else "was"
        outcome = f"{calls} in it {verb} not run, and the model was told to retry in smaller pieces"
    else:
        outcome = "the answer may be incomplete"
    return (
        f"the model's reply was cut off by {why}: {outcome}. Raise `max_tokens` in the "
        "model's params if this keeps happening."
    )


class ReplyCheckMiddleware(AgentMiddleware):
    """Repairs the history before each model call and checks each reply (see the module)."""

    @property
    def name(self) -> str:
        return "ReplyCheckMiddleware"

    def __init__(self, *, parse_text_tool_calls: bool = False) -> None:
        """`parse_text_tool_calls`: run calls written out as a reply's text (see the module)."""
        super().__init__()
        self.parse_text_tool_calls = parse_text_tool_calls
        # Each conversation is read once (runner.middleware.tallies): a model call reads the
        # messages added since the previous one.
        self._checked: Tallies[_Checked] = Tallies(_Checked, _check_history)

    def _scan(self, messages: Sequence[AnyMessage]) -> tuple[bool, set[str]]:
        """Whether the history needs repair, and the tool call ids it holds."""
        checked = self._checked(messages)
        return checked.broken, checked.ids

    def _prepare(self, request: ModelRequest) -> tuple[ModelRequest, set[str]]:
        broken, ids = self._scan(request.messages)
        if not broken:
            return request, ids
        repaired = repaired_history(request.messages) or list(request.messages)
        ids = {c["id"] or "" for m in repaired if isinstance(m, AIMessage) for c in m.tool_calls}
        return request.override(messages=repaired), ids

    def _check(self, request: ModelRequest, result: Any, taken: set[str]) -> Any:
        response, messages, position = last_reply(result)
        if position is None:
            return result
        reply = messages[position]
        assert isinstance(reply, AIMessage)
        cut_off = truncated(reply)
        writer = getattr(request.runtime, "stream_writer", None)
        if not (reply.tool_calls or reply.invalid_tool_calls):
            written = [] if cut_off else text_tool_calls(reply.text, _tool_names(request))
            if written:
                result = self._text_calls(result, response, messages, position, written, writer)
                if self.parse_text_tool_calls:  # the calls now met, checked as any call is
                    return self._check(request, result, taken)
                return result
            if cut_off:
                emit_warning(writer, "truncated_reply", _limit_message(finish_reason(reply), 0))
            elif not _has_text(reply.content) and response.structured_response is None:
                reason = finish_reason(reply)
                emit_warning(
                    writer,
                    "empty_reply",
                    "the model returned an empty reply (no text and no tool call"
                    + (f"; finish reason `{reason}`" if reason else "")
                    + "); send another message to continue the thread",
                )
            return result
        calls, answers, changed = _readable_calls(reply, taken, cut_off=cut_off)
        if answers:  # drop those the reply's own results already give
            answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
            answers = [a for a in answers if a.tool_call_id not in answered]
        if not changed and not answers:
            return result
        if cut_off:
            emit_warning(
                writer, "truncated_reply", _limit_message(finish_reason(reply), len(answers))
            )
        if changed:
            messages[position] = _rebuilt(reply, calls)
        messages[position + 1 : position + 1] = answers
        return with_messages(result, response, messages)

    def _text_calls(
        self,
        result: Any,
        response: ModelResponse,
        messages: list[Any],
        position: int,
        calls: list[dict[str, Any]],
        writer: Any,
    ) -> Any:
        """A reply that is only tool calls written out: warn, and make them calls when asked."""
        names = ", ".join(f"`{c['name']}`" for c in calls)
        if not self.parse_text_tool_calls:
            emit_warning(
                writer,
                "text_tool_call",
                f"the model wrote a call to {names} as text, and the server did not turn it "
                "into a tool call, so it was taken as the final answer; set `model: "
                "{parse_text_tool_calls: true}` to run such calls (or use a server or chat "
                "template that parses this model's tool calls)",
            )
            return result
        emit_warning(
            writer,
            "text_tool_call",
            f"the model wrote a call to {names} as text; it was read as a tool call and run "
            "(`parse_text_tool_calls`)",
        )
        messages[position] = messages[position].model_copy(
            update={"content": "", "tool_calls": calls, "invalid_tool_calls": []}
        )
        return with_messages(result, response, messages)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        request, taken = self._prepare(request)
        return self._check(request, handler(request), taken)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        request, taken = self._prepare(request)
        return self._check(request, await handler(request), taken)


def last_reply(result: Any) -> tuple[ModelResponse, list[Any], int | None]:
    """A model call's result (a message, a `ModelResponse` or an `ExtendedModelResponse`) as its
    response, a copy of its messages, and the position of the model's reply among them (the
    last AI message; None when there is none)."""
    if type(result) is ModelResponse:  # the usual result, without `isinstance` on a pydantic
        response = result  # class (about a microsecond when the answer is no)
    else:
        response = result.model_response if isinstance(result, ExtendedModelResponse) else result
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
    messages = list(response.result)
    if messages and type(messages[-1]) is AIMessage:  # the usual place of the reply
        return response, messages, len(messages) - 1
    position = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)),
        None,
    )
    return response, messages, position


def with_messages(result: Any, response: ModelResponse, messages: list[Any]) -> Any:
    """`result` (as `last_reply` read it) with `messages` in place of its own."""
    fixed = ModelResponse(result=messages, structured_response=response.structured_response)
    if isinstance(result, ExtendedModelResponse):
        return ExtendedModelResponse(model_response=fixed, command=result.command)
    return fixed
