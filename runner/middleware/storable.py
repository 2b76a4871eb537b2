"""Values that cannot be stored become errors the model reads, never the end of a run.

A thread's checkpoints are written with LangGraph's serializer (msgpack). A model reply whose
tool-call arguments hold an integer outside 64 bits (`2**64`, which JSON allows and Python parses
as is), an object the serializer does not know, or a value nested deeper than it recurses, makes
the checkpoint write raise after the model node, and the whole run ends on a `TypeError`; the
same goes for a tool whose result holds such a value (the journal stores it first). So:

- `ReplyCheckMiddleware` (`runner.middleware.replies`) reads the tool calls of each new reply
  and answers a call whose arguments cannot be stored with an error result, its arguments
  replaced by `{}`: the call never runs, and the model is told which value to change. NaN and
  infinities are refused there too: they are not JSON, so a provider would refuse the history
  that carries them back.
- `ToolJournalMiddleware` (`runner.middleware.journal`), the outermost tool wrapper, replaces a
  result that cannot be stored by an error result before it records it.

Only the new reply and the new result are read, never the history: the cost is O(size of the
arguments or the result) per call, and a JSON value (what every provider sends) is checked
without serializing it; any other object is tried on the serializer itself.
"""

from __future__ import annotations

import math
from typing import Any

from langchain_core.messages import ToolMessage

__all__ = ["MAX_DEPTH", "storable_result", "unstorable", "unstorable_call_message"]

MAX_DEPTH = 100
"""Nesting accepted in arguments and results (the serializer stops at about 250 levels, and a
value sits a few levels down in a checkpoint)."""

_LOWEST, _HIGHEST = -(2**63), 2**64 - 1
_SHOWN = 40


def _serde() -> Any:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    global _SERDE
    if _SERDE is None:
        _SERDE = JsonPlusSerializer()
    return _SERDE


_SERDE: Any = None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN // 2]}…{text[-_SHOWN // 2 :]}"


def _plain(value: Any, depth: int, json_only: bool) -> bool:
    """The fast path: `value` is plain JSON data that can be stored (exact types only; anything
    else, and any problem, is left to `unstorable`'s slower walk, which says where)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return _LOWEST <= value <= _HIGHEST
    if kind is float:
        return not json_only or math.isfinite(value)
    if depth >= MAX_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            # Text, the usual argument, without a call (a loop, not a generator: this runs
            # on every reply's arguments and every tool's result).
            if type(item) is not str and not _plain(item, depth + 1, json_only):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:
            if type(item) is not str and not _plain(item, depth + 1, json_only):
                return False
        return True
    return False


def unstorable(value: Any, *, at: str = "", json_only: bool = False) -> str | None:
    """Why `value` cannot be stored in a checkpoint, naming where it sits below `at`
    (`"n: the integer 18446744073709551616 is outside 64 bits"`); None when it can. With
    `json_only`, NaN and infinities are refused too (they are not JSON)."""
    if _plain(value, 0, json_only):
        return None
    stack: list[tuple[str, Any, int]] = [(at, value, 0)]
    while stack:
        where, item, depth = stack.pop()
        place = where or "the value"
        if depth > MAX_DEPTH:
            return f"{place}: nested more than {MAX_DEPTH} levels deep"
        if item is None or isinstance(item, str | bool):
            continue
        if isinstance(item, int):
            if not _LOWEST <= item <= _HIGHEST:
                return f"{place}: the integer {_short(item)} is outside 64 bits"
        elif isinstance(item, float):
            if json_only and not math.isfinite(item):
                return f"{place}: {item} is not a JSON number"
        elif isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str) and (
                    problem := unstorable(key, at=f"{place} (a key)", json_only=json_only)
                ):
                    return problem
                stack.append((f"{where}.{key}" if where else str(key), inner, depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}[{i}]", inner, depth + 1) for i, inner in enumerate(item))
        else:
            try:
                _serde().dumps_typed(item)
            except Exception:  # the serializer's own verdict, whatever it raises
                return f"{place}: a value of type {type(item).__name__} cannot be stored"
    return None


def unstorable_call_message(name: str, call_id: str, problem: str) -> ToolMessage:
    """The answer to a call whose arguments cannot be stored: it was not run."""
    return ToolMessage(
        content=(
            f"Error: this {name} call was not run: its arguments hold a value that cannot be "
            f"kept in the thread ({problem}). Call {name} again with plain JSON values: "
            "integers within 64 bits, finite numbers, text."
        ),
        name=name,
        tool_call_id=call_id,
        status="error",
    )


def storable_result(result: Any, name: str, call_id: str) -> Any:
    """`result` (a tool call's `ToolMessage`, or a `Command` updating the state), or an error
    `ToolMessage` in its place when what it would store cannot be stored."""
    if isinstance(result, ToolMessage):
        problem = unstorable(result.content, at="content")
        if problem is None and result.artifact is not None:
            problem = unstorable(result.artifact, at="artifact")
    else:
        problem = unstorable(getattr(result, "update", None), at="update")
    if problem is None:
        return result
    return ToolMessage(
        content=(
            f"Error: {name} returned a value that cannot be kept in the thread ({problem}), "
            "so its result was dropped. The tool ran; do not assume it did nothing."
        ),
        name=name,
        tool_call_id=call_id,
        status="error",
    )
