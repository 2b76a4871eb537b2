"""Large tool INPUTS leave the conversation once used: the AI message keeps a reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

import runner
from tests.fakes import FakeOpenAI, ScriptedChatModel
from tests.middleware.helpers import MODES, call, reply, run, spec_file, tool_texts

# 100 tokens = 400 characters: anything longer is evicted once the tool has run
LIMIT = {"evict_inputs_over_tokens": 100}
DRAFT = "".join(f"Paragraph {i}: the draft goes on.\n" for i in range(40))  # 1,310 characters
NOTES = "n" * 401
THREAD = {"configurable": {"thread_id": "t1"}}


def reference(size: str, path: str) -> str:
    return f"[{size} characters, removed from the conversation to save context; it is the content of {path}]"


def write_args(message: Any) -> list[dict[str, Any]]:
    return [c["args"] for c in message.tool_calls if c["name"] == "write_file"]


def ai_write_args(messages: list[Any]) -> list[dict[str, Any]]:
    return [args for m in messages if m.type == "ai" for args in write_args(m)]


@pytest.mark.parametrize("mode", MODES)
def test_a_large_write_file_content_becomes_a_reference_that_persists(
    tmp_path: Path, mode: str
) -> None:
    model = ScriptedChatModel(
        script=[
            reply("Saving the draft.", call("write_file", file_path="/draft.md", content=DRAFT)),
            reply("Saved."),
            reply("It is in /draft.md."),
        ]
    )
    agent = runner.build_agent(
        spec_file(tmp_path, filesystem=LIMIT), model=model, checkpointer=InMemorySaver()
    )
    run(agent, "write the draft", mode, THREAD)
    expected = {"file_path": "/draft.md", "content": reference("1,310", "/draft.md")}
    # the model's next call already sees the reference, not the 1,310 characters
    assert ai_write_args(model.calls[1]) == [expected]
    state = agent.get_state(THREAD).values
    assert ai_write_args(state["messages"]) == [expected]
    assert state["files"]["/draft.md"]["content"] == DRAFT
    assert not state.get("evicted_inputs")  # applied once, not recomputed every turn
    run(agent, "where is it?", mode, THREAD)
    assert ai_write_args(model.calls[2]) == [expected]
    assert tool_texts(state["messages"]) == ["Updated file /draft.md"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", ["state", "filesystem"])
def test_two_large_writes_in_one_message_are_both_evicted(
    tmp_path: Path, backend: str, mode: str
) -> None:
    kinds = {"state": "state", "filesystem": {"kind": "filesystem", "root_dir": "ws"}}
    model = ScriptedChatModel(
        script=[
            reply(
                "Two files at once.",
                call("write_file", file_path="/a.md", content=DRAFT),
                call("write_file", file_path="/b.md", content=NOTES),
            ),
            reply("Both saved."),
        ]
    )
    spec = spec_file(tmp_path, backend=kinds[backend], filesystem=LIMIT)
    agent = runner.build_agent(spec, model=model, checkpointer=InMemorySaver())
    result = run(agent, "write both", mode, THREAD)
    assert ai_write_args(model.calls[1]) == [
        {"file_path": "/a.md", "content": reference("1,310", "/a.md")},
        {"file_path": "/b.md", "content": reference("401", "/b.md")},
    ]
    assert ai_write_args(agent.get_state(THREAD).values["messages"]) == ai_write_args(
        model.calls[1]
    )
    if backend == "state":
        assert {p: f["content"] for p, f in result["files"].items()} == {
            "/a.md": DRAFT,
            "/b.md": NOTES,
        }
    else:
        assert (tmp_path / "ws" / "a.md").read_text() == DRAFT
        assert (tmp_path / "ws" / "b.md").read_text() == NOTES


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_write_keeps_a_reference_to_a_saved_copy(tmp_path: Path, mode: str) -> None:
    model = ScriptedChatModel(
        script=[
            reply("", call("write_file", file_path="/draft.md", content="v1")),
            reply("", call("write_file", "call_v2", file_path="/draft.md", content=DRAFT)),
            reply("It exists; I will edit it instead."),
        ]
    )
    agent = runner.build_agent(spec_file(tmp_path, filesystem=LIMIT), model=model)
    result = run(agent, "go", mode)
    saved = "/large_tool_inputs/call_v2.content"
    assert tool_texts(result["messages"])[1] == (
        "Error: File '/draft.md' already exists; read it and use edit_file to change it"
    )
    assert ai_write_args(model.calls[2])[1] == {
        "file_path": "/draft.md",
        "content": reference("1,310", saved),
    }
    assert result["files"]["/draft.md"]["content"] == "v1"
    assert result["files"][saved]["content"] == DRAFT


def test_null_keeps_large_inputs(tmp_path: Path) -> None:
    model = ScriptedChatModel(
        script=[reply("", call("write_file", file_path="/draft.md", content=DRAFT)), reply("ok")]
    )
    spec = spec_file(tmp_path, filesystem={"evict_inputs_over_tokens": None})
    agent = runner.build_agent(spec, model=model, checkpointer=InMemorySaver())
    run(agent, "go", config=THREAD)
    assert ai_write_args(model.calls[1]) == [{"file_path": "/draft.md", "content": DRAFT}]
    assert ai_write_args(agent.get_state(THREAD).values["messages"]) == ai_write_args(
        model.calls[1]
    )


def test_a_real_provider_receives_the_reference(tmp_path: Path) -> None:
    # Through langchain-openai to a local server: the request itself carries the reference.
    replies = [
        reply("", call("write_file", file_path="/draft.md", content=DRAFT)),
        reply("Saved."),
    ]
    with FakeOpenAI(replies) as server:
        model = {"id": "openai:test-model", "params": {"base_url": server.base_url, "api_key": "k"}}
        agent = runner.build_agent(spec_file(tmp_path, model=model, filesystem=LIMIT))
        run(agent, "write the draft")
    assistant = next(m for m in server.requests[1]["body"]["messages"] if m["role"] == "assistant")
    [tool_call] = assistant["tool_calls"]
    assert json.loads(tool_call["function"]["arguments"]) == {
        "file_path": "/draft.md",
        "content": reference("1,310", "/draft.md"),
    }
    assert DRAFT not in json.dumps(server.requests[1]["body"])


def test_the_pending_channel_copies_as_langgraphs_channel_does() -> None:
    """`PendingChannel.copy` (no constructor run again) gives what
    `BinaryOperatorAggregate.copy` gives: the same fields and the same value object, which an
    update of the copy leaves as it was."""
    from langgraph.channels.binop import BinaryOperatorAggregate

    from runner.middleware.large_inputs import Pending, PendingChannel, merge_pending

    channel = PendingChannel(Pending, merge_pending)
    channel.key = "evicted_inputs"
    for value in ({}, {"m": {"c": {"content": "[ref]"}}}):
        channel.value = value
        plain, quick = BinaryOperatorAggregate.copy(channel), channel.copy()
        assert type(quick) is type(plain) is PendingChannel
        for field in ("key", "typ", "operator", "value"):
            assert getattr(quick, field) is getattr(plain, field), field
        quick.update([{"n": {"d": {"x": "y"}}}])
        assert channel.value is value and quick.value == {**value, "n": {"d": {"x": "y"}}}
