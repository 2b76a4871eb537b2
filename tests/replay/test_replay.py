"""The replay provider: cassette format, reply selection, streaming, delays, running out."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from runner.agent.models import init_model
from runner.errors import RunError, SpecError
from runner.replay.cassette import load_cassette
from runner.replay.model import ReplayChatModel


def write(tmp_path: Path, text: str, name: str = "c.cassette.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_plain_list_is_the_main_agents_replies(tmp_path: Path) -> None:
    cassette = load_cassette(write(tmp_path, "- content: hi\n- content: bye\n"))
    assert [r.content for r in cassette.replies_for("anyone", is_main=True)] == ["hi", "bye"]
    assert cassette.replies_for("critic", is_main=False) == []


def test_agents_mapping(tmp_path: Path) -> None:
    cassette = load_cassette(
        write(tmp_path, "version: 1\nagents:\n  main: [{content: a}]\n  critic: [{content: b}]\n")
    )
    assert cassette.replies_for("critic", is_main=False)[0].content == "b"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "- content: hi\n  tool_call: []\n",
            "c.cassette.yaml:2:3: [0].tool_call: unknown key; did you mean 'tool_calls'?",
        ),
        (
            "agents:\n  main:\n    - delay: -1\n",
            "c.cassette.yaml:3:14: agents.main[0].delay: must be at least 0, found the number -1",
        ),
        (
            "version: 2\nagents: {}\n",
            "c.cassette.yaml:1:10: version: expected 1, found the number 2",
        ),
        (
            "agents:\n  main:\n    - tool_calls: [{args: {}}]\n",
            "c.cassette.yaml:3:20: agents.main[0].tool_calls[0].name: missing required key",
        ),
        (
            "just text\n",
            "c.cassette.yaml:1:1: expected a list of replies, or a mapping with `agents:`",
        ),
    ],
)
def test_bad_cassettes_are_located(
    tmp_path: Path, text: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as caught:
        load_cassette(write(tmp_path, text))
    assert str(caught.value) == expected


def test_missing_cassette(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match=r"^nope.yaml: cassette not found$"):
        load_cassette(tmp_path / "nope.yaml")


def model(
    tmp_path: Path, text: str, agent: str = "main", *, is_main: bool = True
) -> ReplayChatModel:
    path = write(tmp_path, text)
    made = init_model(f"replay:{path}", agent=agent, is_main=is_main)
    assert isinstance(made, ReplayChatModel)
    return made


def test_main_agent_continues_after_the_replies_in_its_history(tmp_path: Path) -> None:
    replay = model(tmp_path, "- content: one\n- content: two\n- content: three\n")
    first = replay.invoke([HumanMessage("go")])
    assert first.text == "one"
    second = replay.invoke([HumanMessage("go"), first, HumanMessage("again")])
    assert second.text == "two"
    # A new process sees only the history: the tag on the reply decides what comes next.
    fresh = model(tmp_path, "- content: one\n- content: two\n- content: three\n")
    assert fresh.invoke([HumanMessage("go"), first, HumanMessage("again"), second]).text == "three"


def test_a_new_thread_starts_at_the_first_reply(tmp_path: Path) -> None:
    replay = model(tmp_path, "- content: one\n- content: two\n")
    assert replay.invoke([HumanMessage("a")]).text == "one"
    assert replay.invoke([HumanMessage("b")]).text == "one"


def test_subagent_calls_take_successive_replies(tmp_path: Path) -> None:
    text = "agents:\n  critic: [{content: first review}, {content: second review}]\n"
    replay = model(tmp_path, text, "critic", is_main=False)
    assert replay.invoke([HumanMessage("review A")]).text == "first review"
    assert replay.invoke([HumanMessage("review B")]).text == "second review"


def test_ids_are_generated_unless_given(tmp_path: Path) -> None:
    replay = model(
        tmp_path,
        "- tool_calls: [{name: ls, args: {path: /}}, {name: ls, id: fixed}]\n",
    )
    reply = replay.invoke([HumanMessage("go")])
    assert isinstance(reply, AIMessage)
    ids = [c["id"] for c in reply.tool_calls]
    assert ids[1] == "fixed" and ids[0].startswith("call_") and ids[0] != "fixed"
    again = model(tmp_path, "- tool_calls: [{name: ls, args: {path: /}}]\n").invoke(
        [HumanMessage("x")]
    )
    assert again.tool_calls[0]["id"] != ids[0]


def test_running_out_names_the_agent_and_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    replay = model(tmp_path, "- content: only\n", "writer")
    first = replay.invoke([HumanMessage("go")])
    with pytest.raises(RunError) as caught:
        replay.invoke([HumanMessage("go"), first, HumanMessage("more")])
    assert str(caught.value) == (
        "replay cassette c.cassette.yaml has 1 reply for agent 'writer', and the run asked for "
        "reply 2; record more replies (agentctl run --record) or shorten the run"
    )


def test_running_out_reads_no_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message is made from the path worked out when the model was: on a server's event
    loop (`serve --dev`), reading the working directory is a blocking call that fails the run."""
    import os

    monkeypatch.chdir(tmp_path)
    replay = model(tmp_path, "- content: only\n", "writer")
    first = replay.invoke([HumanMessage("go")])

    def blocked() -> str:
        raise AssertionError("os.getcwd called while replying")

    monkeypatch.setattr(os, "getcwd", blocked)
    with pytest.raises(RunError, match=r"replay cassette c\.cassette\.yaml has 1 reply"):
        replay.invoke([HumanMessage("go"), first, HumanMessage("more")])


def test_streams_in_chunks_with_tool_calls_last(tmp_path: Path) -> None:
    replay = model(
        tmp_path, "- content: three word reply\n  tool_calls: [{name: ls, args: {path: /}}]\n"
    )
    chunks = list(replay.stream([HumanMessage("go")]))
    assert [c.content for c in chunks[:-1]] == ["three ", "word ", "reply"]
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.tool_calls[0]["name"] == "ls" and total.tool_calls[0]["args"] == {"path": "/"}


def test_delay_is_applied_sync_and_async(tmp_path: Path) -> None:
    replay = model(tmp_path, "- content: slow\n  delay: 0.2\n")
    start = time.perf_counter()
    replay.invoke([HumanMessage("go")])
    assert time.perf_counter() - start >= 0.2
    start = time.perf_counter()
    asyncio.run(replay.ainvoke([HumanMessage("again")]))
    assert time.perf_counter() - start >= 0.2


def test_usage_is_reported(tmp_path: Path) -> None:
    replay = model(
        tmp_path, "- content: x\n  usage: {input_tokens: 5, output_tokens: 2}\n- content: y\n"
    )
    first = replay.invoke([HumanMessage("go")])
    assert first.usage_metadata == {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    second = replay.invoke([HumanMessage("go"), first, HumanMessage("and")])
    assert second.usage_metadata is not None and second.usage_metadata["input_tokens"] > 0


def test_each_thread_replays_its_subagents_from_the_first_reply(tmp_path: Path) -> None:
    """A long-lived process (a server) runs many threads: the second thread's subagent calls
    must not continue where the first thread's left off."""
    import shutil

    from runner.run import Session

    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "tests" / "data" / "subagents", tmp_path / "subagents")
    shutil.copytree(root / "tests" / "data" / "tools", tmp_path / "tools")
    with Session(tmp_path / "subagents" / "team.yaml", db=tmp_path / "db") as session:
        first = session.run("go")
        second = session.run("go")
        assert first.thread_id != second.thread_id
        for thread in (first.thread_id, second.thread_id):
            results = {m.text for m in session.values(thread)["messages"] if m.type == "tool"}
            assert {"The sum is 5.", "hello (softly)"} <= results


def test_cursors_outside_a_thread_are_process_wide(tmp_path: Path) -> None:
    from langchain_core.runnables.config import var_child_runnable_config

    text = "agents:\n  critic: [{content: first}, {content: second}, {content: third}]\n"
    replay = model(tmp_path, text, "critic", is_main=False)
    assert replay.invoke([HumanMessage("a")]).text == "first"
    for thread, expected in (("t1", "first"), ("t2", "first"), ("t1", "second")):
        token = var_child_runnable_config.set({"configurable": {"thread_id": thread}})
        try:
            assert replay.invoke([HumanMessage("x")]).text == expected
        finally:
            var_child_runnable_config.reset(token)
    assert replay.invoke([HumanMessage("b")]).text == "second"
