"""A conversation's history is read once across model calls and turns (`runner.middleware.tallies`),
and read whole again whenever it was rewritten where the earlier read ended."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from runner.middleware.patch_tool_calls import DanglingCheck, has_dangling, patch_dangling
from runner.middleware.tallies import Tallies


def ids_of(tally: list[str], messages: Sequence[Any]) -> None:
    tally.extend(m.id for m in messages)


def human(text: str = "hi") -> HumanMessage:
    return HumanMessage(text, id=uuid.uuid4().hex)


def asked(call_id: str) -> AIMessage:
    calls = [{"name": "ls", "args": {}, "id": call_id}]
    return AIMessage("", tool_calls=calls, id=uuid.uuid4().hex)


def answer(call_id: str) -> ToolMessage:
    return ToolMessage("ok", tool_call_id=call_id, id=uuid.uuid4().hex)


def decoded(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The history as a new turn gets it: the same messages as new objects (LangGraph decodes
    the checkpoint), so no object of an earlier call is there to recognise."""
    return [m.model_copy(deep=True) for m in messages]


def turns(count: int) -> list[BaseMessage]:
    history: list[BaseMessage] = []
    for turn in range(count):
        history += [human(f"turn {turn}"), asked(f"c{turn}"), answer(f"c{turn}")]
    return history


def test_each_message_is_read_once_though_every_call_brings_new_objects() -> None:
    tallies: Tallies[list[str]] = Tallies(list, ids_of)
    history: list[BaseMessage] = []
    for turn in range(50):
        history += [human(f"turn {turn}"), asked(f"c{turn}"), answer(f"c{turn}")]
        assert tallies(decoded(history)) == [m.id for m in history]
    assert tallies.messages_read == len(history)  # not 3 + 6 + ... + 150


def test_the_dangling_check_reads_only_the_new_messages_of_a_long_thread() -> None:
    check = DanglingCheck()
    history = turns(200)
    assert check(decoded(history)) is False
    before = check.tallies.messages_read
    history += [human("more"), asked("late")]
    assert check(decoded(history)) is True
    assert check.tallies.messages_read - before == 2
    history.append(answer("late"))
    assert check(decoded(history)) is False
    assert check.tallies.messages_read - before == 3


def test_a_rewritten_history_is_read_whole() -> None:
    """Each rewrite LangGraph and agentctl make where the earlier read ended: the tally is not
    used, and the answer is a full read's."""
    base = turns(5)
    pending = asked("pending")
    read = [*base, pending]
    rewrites: dict[str, tuple[list[BaseMessage], list[BaseMessage]]] = {
        # summarization: every message removed, a summary first, the latest kept
        "summary": (read, [human("summary of the earlier turns"), *base[-3:], pending]),
        # the thread resumed from an older checkpoint, shorter than what was read
        "older checkpoint": (read, base[:7]),
        # ... and continued from there: another message where the earlier read ended
        "fork continued": (read, [*base[:7], asked("f1"), human("x"), *turns(3)]),
        # a message removed by id before the end of what was read
        "removed": (read, [*base[:4], *base[5:], pending, human("y")]),
        # a call left dangling answered in place (Session's history with REMOVE_ALL)
        "answered in place": (
            [*base[:10], pending, *base[10:]],
            [*base[:10], pending, answer("pending"), *base[10:], human("z")],
        ),
    }
    for name, (first, rewritten) in rewrites.items():
        check = DanglingCheck()
        assert check(decoded(first)) is True, name
        before = check.tallies.messages_read
        assert check(decoded(rewritten)) is has_dangling(rewritten), name
        assert check.tallies.messages_read - before == len(rewritten), name


def test_a_history_that_only_grew_is_not_read_again() -> None:
    base = turns(5)
    pending = asked("pending")
    check = DanglingCheck()
    assert check(decoded([*base, pending])) is True
    # the dangling call answered after it (Session's cancelled answer) and a new message
    assert check(decoded([*base, pending, answer("pending"), human("next")])) is False
    assert check.tallies.messages_read == 16 + 2


def test_a_history_without_ids_is_read_whole_every_time() -> None:
    check = DanglingCheck()
    calls = [{"name": "ls", "args": {}, "id": "c1"}]
    history: list[BaseMessage] = [HumanMessage("hi"), AIMessage("", tool_calls=calls)]
    assert check(history) is True
    history[1] = AIMessage("done")  # replaced in place: no id to tell it by
    assert check(history) is False
    assert check.tallies.messages_read == 4


def test_conversations_are_told_apart_and_the_oldest_forgotten() -> None:
    tallies: Tallies[list[str]] = Tallies(list, ids_of, remembered=2)
    a, b, c = turns(3), turns(3), turns(3)
    for history in (a, b, a, b):
        tallies(decoded(history))
    assert tallies.messages_read == 18  # a and b read once each
    tallies(decoded(c))  # a third: the oldest (a) forgotten
    tallies(decoded(b))
    assert tallies.messages_read == 27
    tallies(decoded(a))
    assert tallies.messages_read == 36


def test_patch_dangling_confirms_what_the_check_says() -> None:
    """A check that says something dangles when nothing does changes nothing."""
    history = turns(3)
    assert patch_dangling(history, dangling=lambda messages: True) is None
    history.append(asked("open"))
    patched = patch_dangling(history, dangling=DanglingCheck())
    assert patched is not None and patched[-1].type == "tool"
    assert patched[-1].tool_call_id == "open"  # type: ignore[attr-defined]


def test_turns_on_a_thread_read_each_message_once(tmp_path: Path, monkeypatch: Any) -> None:
    """The per-turn checks of a thread (dangling calls in the model hook and in the session,
    repairs, the calls already shown) each read a message once over all turns, not the
    history on every turn; a new session on the thread (a new process) reads it once more."""
    from runner.run import Session
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import call, reply, spec_file

    read: Counter[str] = Counter()
    add = Tallies._add

    def counted(self: Tallies[Any], value: Any, messages: Sequence[Any]) -> None:
        read[getattr(self._read, "__name__", "?")] += len(messages)
        add(self, value, messages)

    monkeypatch.setattr(Tallies, "_add", counted)

    def script(messages: list[BaseMessage]) -> dict[str, Any]:
        return reply("done") if messages[-1].type == "tool" else reply("", call("ls", path="/"))

    def once(messages: int) -> dict[str, int]:
        hook, session = messages - 1, messages - 4
        return {"_tally": hook + session, "_check_history": hook, "read_shown": session}

    spec = spec_file(tmp_path)
    turns = 12
    with Session(spec, model=ScriptedChatModel(script=script), db=tmp_path / "db") as session:
        thread = None
        for turn in range(turns):
            result = session.run(f"turn {turn}", thread_id=thread)
            assert result.error is None, result.error
            thread = result.thread_id
        stored = len(session.values(thread)["messages"])
    assert stored == 4 * turns
    # each message once: the model hooks all but the last reply (no call was sent it), the
    # session's checks all but the last turn's four (no turn started after them)
    assert read == once(stored)
    read.clear()
    with Session(spec, model=ScriptedChatModel(script=script), db=tmp_path / "db") as session:
        for turn in range(3):
            assert session.run(f"again {turn}", thread_id=thread).error is None
    grown = stored + 3 * 4
    assert read == once(grown)


def test_a_fork_from_an_older_checkpoint_and_its_thread_take_turns(
    tmp_path: Path,
) -> None:
    """A fork copies the messages, ids included, so both threads start with the same message:
    a turn on either after the other reads whole a history that changed where the tally ends,
    and shows its own calls and results, not the other thread's."""
    from runner.events import ToolCall, ToolResult
    from runner.run import Session
    from runner.threads.history import checkpoints, fork_thread
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import call, reply, spec_file

    def script(messages: list[BaseMessage]) -> dict[str, Any]:
        return reply("done") if messages[-1].type == "tool" else reply("", call("ls", path="/"))

    with Session(
        spec_file(tmp_path),
        model=ScriptedChatModel(script=script),
        db=tmp_path / "db",
        keep_checkpoints="all",
    ) as session:
        thread = None
        for turn in range(3):
            thread = session.run(f"turn {turn}", thread_id=thread).thread_id
        assert thread is not None
        older = next(c for c in checkpoints(session.home, thread) if c.messages == 4)
        fork = fork_thread(session.home, thread, at=older.checkpoint_id).thread_id
        shown = session._shown
        read, lengths = [], []
        for on in (fork, thread, fork):
            before = shown.messages_read
            lengths.append(len(session.values(on)["messages"]))
            events = session.run("go on", thread_id=on).events
            read.append(shown.messages_read - before)
            assert [type(e) for e in events if isinstance(e, ToolCall | ToolResult)] == [
                ToolCall,
                ToolResult,
            ]
        # the fork's first turn and its next read whole: the tally left by the other thread
        # covers more messages than the fork has; the thread's turn reads at most its history
        # (less when the fork's tally covers a start the two still share)
        assert lengths[0] < 8 and read[0] == lengths[0]
        assert lengths[2] < 12 and read[2] == lengths[2]
        assert 0 < read[1] <= lengths[1] == 12
        assert [m.text for m in session.values(thread)["messages"] if m.type == "human"] == [
            "turn 0",
            "turn 1",
            "turn 2",
            "go on",
        ]
        assert [m.text for m in session.values(fork)["messages"] if m.type == "human"][-2:] == [
            "go on",
            "go on",
        ]
