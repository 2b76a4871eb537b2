"""`messages` in agentctl's state: `MessagesChannel` updates exactly as LangGraph's `DeltaChannel`
with `_messages_delta_reducer` does, taking its shortcut only when messages are just added
(runner.agent.state)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph._internal._typing import MISSING
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import REMOVE_ALL_MESSAGES, _messages_delta_reducer
from langgraph.types import Overwrite

import runner
from runner.agent.state import MessagesChannel, appended
from runner.backends.state import merge_file_writes
from tests.fakes import ScriptedChatModel, ai


def channels(value: Any) -> tuple[DeltaChannel[Any], MessagesChannel]:
    plain = DeltaChannel(_messages_delta_reducer, list)
    fast = MessagesChannel(_messages_delta_reducer, list)
    if value is not None:
        plain.value, fast.value = list(value), list(value)
    return plain, fast


def dumped(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [m.model_dump() if isinstance(m, BaseMessage) else m for m in value]


def same_update(state: Any, values: list[Any]) -> bool:
    """Update both channels from `state` with `values`; assert they agree. Whether the
    shortcut was taken."""
    plain, fast = channels(state)
    took = appended(fast.value, values) is not None
    try:
        updated = plain.update(values)
    except Exception as exc:  # the same error, from the same reducer
        with pytest.raises(type(exc)):
            fast.update(values)
        assert not took
        return took
    assert fast.update(values) == updated
    assert dumped(fast.value) == dumped(plain.value)
    assert [type(m) for m in fast.value] == [type(m) for m in plain.value]
    return took


def test_adding_messages_takes_the_shortcut_and_gives_what_the_reducer_gives() -> None:
    history = [HumanMessage("go", id="h"), AIMessage("", id="a")]
    assert same_update(history, [[ToolMessage("1", tool_call_id="c", id="t")]])
    assert same_update(history, [AIMessage("x", id="b"), [HumanMessage("y", id="c")]])
    # A tool's result before LangGraph gives it an id: appended, as the reducer does.
    assert same_update(
        history, [[ToolMessage("1", tool_call_id="c"), ToolMessage("2", tool_call_id="d")]]
    )


@pytest.mark.parametrize(
    "values",
    [
        [],  # no update: the channel's version must not move
        [[AIMessage("again", id="a")]],  # replaces a message under its id
        [[AIMessage("new", id="b"), AIMessage("twice", id="b")]],  # two writes share an id
        [[RemoveMessage(id="h")]],
        [[RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("fresh", id="f")]],
        [{"role": "user", "content": "a dict"}],
        [[("user", "a tuple")]],
        ["a string"],
        [Overwrite([HumanMessage("only", id="o")])],
        [{"__overwrite__": [HumanMessage("only", id="o")]}],
    ],
)
def test_anything_but_adding_goes_to_the_reducer(values: list[Any]) -> None:
    assert not same_update([HumanMessage("go", id="h"), AIMessage("", id="a")], values)


@pytest.mark.parametrize("state", [None, [], [{"role": "user", "content": "raw", "id": "r"}]])
def test_an_empty_or_raw_history_goes_to_the_reducer(state: Any) -> None:
    assert not same_update(state, [[AIMessage("x", id="b")]])


def test_random_updates_agree_with_the_reducer() -> None:
    """2,000 random histories and writes: adds, replacements, removals, id-less messages,
    dicts, resets and overwrites, alone and mixed."""
    rng = random.Random(31)
    ids = [f"m{i}" for i in range(12)]

    def message() -> Any:
        kind = rng.random()
        mid = rng.choice([*ids, None]) if rng.random() < 0.3 else f"n{rng.random()}"
        if kind < 0.4:
            return AIMessage(str(kind), id=mid)
        if kind < 0.7:
            return ToolMessage(str(kind), tool_call_id="c", id=mid)
        if kind < 0.8:
            return HumanMessage(str(kind), id=mid)
        if kind < 0.87:
            return RemoveMessage(id=rng.choice([*ids, REMOVE_ALL_MESSAGES]))
        return {"role": "assistant", "content": str(kind), "id": mid}

    shortcuts = 0
    for _ in range(2000):
        history = [
            HumanMessage(str(i), id=rng.choice([*ids, None]) if rng.random() < 0.2 else ids[i])
            for i in range(rng.randrange(0, 10))
        ]
        writes: list[Any] = [
            [message() for _ in range(rng.randrange(0, 4))] if rng.random() < 0.7 else message()
            for _ in range(rng.randrange(0, 3))
        ]
        if rng.random() < 0.05:
            writes.insert(rng.randrange(len(writes) + 1), Overwrite([HumanMessage("o", id="z")]))
        shortcuts += same_update(history, writes)
    assert shortcuts > 200  # the shortcut was taken often enough to be tested


def test_an_agent_keeps_its_messages_in_the_channel(tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    spec = tmp_path / "a.yaml"
    spec.write_text("version: 1\nname: a\nmodel: openai:gpt-4.1\n")
    model = ScriptedChatModel(script=[ai("", ("ls", {"path": "/"})), ai("done")])
    agent = runner.build_agent(spec, model=model, checkpointer=InMemorySaver())
    assert isinstance(agent.channels["messages"], MessagesChannel)
    config = {"configurable": {"thread_id": "t"}}
    result = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai"]
    assert all(m.id for m in result["messages"])
    assert agent.get_state(config).values["messages"] == result["messages"]


@pytest.mark.parametrize(
    "value",
    [MISSING, [], [HumanMessage("go", id="h")], {"/a.txt": {"content": "x"}}, "a string", (1, 2)],
)
def test_a_copy_is_langgraphs_copy(value: Any) -> None:
    """`QuickCopyDeltaChannel.copy` (no constructor run again) gives what `DeltaChannel.copy`
    gives: the same fields, and a value of its own where LangGraph copies it."""
    from runner.backends.files_channel import FilesChannel, QuickCopyDeltaChannel

    for quick in (
        MessagesChannel(_messages_delta_reducer, list, snapshot_frequency=7),
        FilesChannel(merge_file_writes, dict, snapshot_frequency=9),
    ):
        assert isinstance(quick, QuickCopyDeltaChannel)
        quick.key, quick.value = "k", value
        plain = DeltaChannel.copy(quick)
        copied = quick.copy()
        assert type(copied) is type(plain) is type(quick)
        for field in ("key", "typ", "reducer", "snapshot_frequency", "value"):
            assert getattr(copied, field) == getattr(plain, field), field
        mutable = isinstance(value, list | dict)
        assert (copied.value is value) is (plain.value is value) is (not mutable)


def test_random_update_sequences_with_copies_agree_with_the_reducer() -> None:
    """The channel's record of its ids (`SeenIds`) over long sequences: 300 runs of 40 random
    steps each update the channel (adds, replacements, removals, id-less messages stamped
    later in place, as LangGraph stamps them), take a copy and carry on with the copy or the
    original (the other is updated too, so the two share a record and both change it), or
    reset it with an `Overwrite`; after every step both channels hold what LangGraph's
    `DeltaChannel` holds after the same updates."""
    rng = random.Random(5)
    ids = [f"m{i}" for i in range(30)]

    def message(history: list[Any]) -> Any:
        """Often an id the history has (a stamped one too): a replacement or a removal."""
        roll = rng.random()
        taken = [m.id for m in history if m.id is not None]
        if taken and rng.random() < 0.25:
            mid = rng.choice(taken)
        else:
            mid = rng.choice([*ids, None, None]) if roll < 0.5 else f"n{rng.random()}"
        if roll < 0.05:
            return RemoveMessage(id=mid or rng.choice(ids))
        if roll < 0.6:
            return AIMessage(str(roll), id=mid)
        if roll < 0.9:
            return ToolMessage(str(roll), tool_call_id="c", id=mid)
        return HumanMessage(str(roll), id=mid)

    def stamp(*values: Any) -> None:
        """LangGraph's stamping: an id on each id-less message, in place (the same objects
        sit in every channel's history, as they do in a graph)."""
        for value in values:
            for m in value if isinstance(value, list) else ():
                if m.id is None and rng.random() < 0.5:
                    m.id = f"s{rng.random()}"

    shortcuts = 0
    for _ in range(300):
        start = [HumanMessage("go", id="h")]
        pairs = [
            (
                DeltaChannel(_messages_delta_reducer, list),
                MessagesChannel(_messages_delta_reducer, list),
            )
        ]
        pairs[0][0].value, pairs[0][1].value = list(start), list(start)
        for _ in range(40):
            plain, fast = pairs[-1]
            roll = rng.random()
            if roll < 0.15:
                pairs.append((plain.copy(), fast.copy()))
                continue
            if roll < 0.2 and len(pairs) > 1:
                plain, fast = pairs[-2]  # the original, updated after its copy was
            if roll < 0.22:
                writes: list[Any] = [Overwrite([HumanMessage("o", id=rng.choice(ids))])]
            else:
                writes = [[message(fast.value) for _ in range(rng.randrange(1, 3))]]
            seen_before = fast.seen
            plain.update(writes)
            fast.update(writes)
            shortcuts += fast.seen is not None and fast.seen is seen_before
            stamp(plain.value, fast.value)
            for p, f in pairs:
                assert dumped(f.value) == dumped(p.value)
    assert shortcuts > 2000


def test_a_run_sends_only_its_first_update_to_the_reducer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a run of tool calls every update but the first (the input, on an empty history)
    takes the shortcut: a copy of the channel (each edge reads one) that adds the reply first
    does not make the channel itself think the reply's id is taken."""
    sent: list[Any] = []
    reducer_update = DeltaChannel.update

    def counted(self: DeltaChannel[Any], values: Any) -> bool:
        if values and isinstance(self, MessagesChannel):
            sent.append(values)
        return reducer_update(self, values)

    monkeypatch.setattr(DeltaChannel, "update", counted)
    spec = tmp_path / "a.yaml"
    spec.write_text("version: 1\nname: a\nmodel: openai:gpt-4.1\n")
    script = [ai("", ("ls", {"path": "/"})) for _ in range(5)] + [ai("done")]
    agent = runner.build_agent(spec, model=ScriptedChatModel(script=script))
    result = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert len(result["messages"]) == 12
    assert len(sent) == 1
