"""Summarization counts only the new messages of a conversation that grew, and recounts when it
changed in any other way."""

from __future__ import annotations

import json
import random
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)

from runner.middleware.summarization import SummarizationMiddleware, approx_tokens, json_text


def middleware() -> SummarizationMiddleware:
    return SummarizationMiddleware(
        model=None,
        provider=None,  # type: ignore[arg-type]
        trigger=("tokens", 1_000_000),
        keep=("messages", 6),
        context_window=None,
    )


def turn(i: int) -> list[BaseMessage]:
    call = {"name": "step", "args": {"i": i}, "id": f"c{i}"}
    return [
        AIMessage("x" * i, tool_calls=[call], id=f"a{i}"),
        ToolMessage("y" * (3 * i), tool_call_id=f"c{i}", id=f"t{i}"),
    ]


def full(messages: list[BaseMessage]) -> int:
    return sum(approx_tokens(m) for m in messages)


def test_a_growing_conversation_counts_only_its_new_messages() -> None:
    counter = middleware()
    messages: list[BaseMessage] = [HumanMessage("go", id="h")]
    for i in range(50):
        messages += turn(i)
        assert counter.conversation_tokens(messages) == full(messages)
    counted = []
    counter.count = lambda m: counted.append(m) or approx_tokens(m)  # type: ignore[method-assign]
    messages += turn(50)
    assert counter.conversation_tokens(messages) == full(messages)
    assert counted == messages[-2:]


def test_a_conversation_that_changed_otherwise_is_counted_again() -> None:
    counter = middleware()
    messages: list[BaseMessage] = [HumanMessage("go", id="h"), *turn(1), *turn(2), *turn(3)]
    counter.conversation_tokens(messages)
    summarized = [HumanMessage("summary", id="s"), *messages[-2:]]
    assert counter.conversation_tokens(summarized) == full(summarized)
    removed = [m for m in messages if m.id != "t2"]
    assert counter.conversation_tokens(messages) == full(messages)
    assert counter.conversation_tokens(removed) == full(removed)
    other = [HumanMessage("another thread", id="h2"), *turn(7)]
    assert counter.conversation_tokens(other) == full(other)
    unnamed = [*other, HumanMessage("no id yet")]
    assert counter.conversation_tokens(unnamed) == full(unnamed)
    assert counter.conversation_tokens(other) == full(other)


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    """Mostly JSON data; now and then a value `json` cannot encode as is (an object, which
    `default=str` turns into text; NaN; a tuple key, which fails) or one nested past its
    recursion limit."""
    roll = rng.random()
    if (depth > 3 and roll < 0.6) or roll < 0.3:
        return rng.choice(
            ["text", "ünï ☃", "", 7, 2**70, -1.25, float("nan"), True, None, object(), 1e300]
        )
    size = rng.randrange(4)
    if roll < 0.65:
        keys = [rng.choice(["a", "b", 1, 2.5, None, True, ("t",)]) for _ in range(size)]
        return {key: _random_json(rng, depth + 1) for key in keys}
    return [_random_json(rng, depth + 1) for _ in range(size)]


def _dumped(value: Any) -> tuple[str, Any]:
    try:
        return "text", json.dumps(value, default=str)
    except Exception as exc:
        return "error", type(exc)


def test_json_text_is_json_dumps_on_random_values() -> None:
    """`json_text` (its encoder made once, without the circular check) gives what
    `json.dumps(..., default=str)` gives, text or error, circular and deep values included."""
    rng = random.Random(31)
    circular: list[Any] = [1]
    circular.append({"again": circular})
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    values = [_random_json(rng) for _ in range(3000)] + [circular, deep]
    for value in values:
        try:
            got: tuple[str, Any] = ("text", json_text(value))
        except Exception as exc:
            got = ("error", type(exc))
        expected = _dumped(value)
        if expected[0] == "text":  # an object's str names its address: the same object
            assert got == expected, value
        else:
            assert got == expected
    assert sum(_dumped(v)[0] == "error" for v in values) > 100


def test_an_ai_message_of_any_class_counts_its_calls() -> None:
    """Whether a message's tool calls count is decided by its class (memoized): an AI message
    or chunk counts them, a tool result has none to count."""
    call = {"name": "step", "args": {"text": "x" * 400}, "id": "c"}
    plain = AIMessage("", tool_calls=[call], id="a")
    chunk = AIMessageChunk(content="", tool_calls=[call], id="a")
    for message in (plain, chunk, plain):
        assert approx_tokens(message) == len(json.dumps([call["args"]])) // 4 + 4
    assert approx_tokens(ToolMessage("y" * 40, tool_call_id="c")) == 10 + 4
