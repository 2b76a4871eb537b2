"""Summarization counts only the new messages of a conversation that grew, and recounts when it
changed in any other way."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from runner.middleware.summarization import SummarizationMiddleware, approx_tokens


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
