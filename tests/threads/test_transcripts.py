"""`threads show` reads a saved thread without LangChain, and shows what LangGraph's own decoding
shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.events import Interrupt
from runner.run import Session
from runner.threads.export import latest_transcript
from runner.threads.transcripts import Unreadable, decode
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import call, reply, spec_file


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_light_reading_matches_langgraphs(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    db = request.getfixturevalue("postgres_url") if engine == "postgres" else tmp_path / "db"
    spec = spec_file(tmp_path, interrupt_on={"write_file": True})
    model = ScriptedChatModel(
        script=[
            reply("Looking.", call("ls", path="/"), call("read_file", file_path="/missing.md")),
            reply([{"type": "text", "text": "Nothing "}, {"type": "text", "text": "there."}]),
            reply("", call("write_file", file_path="/a.md", content="x")),
        ]
    )
    with Session(spec, model=model, db=db) as session:
        thread = session.run("look").thread_id
        paused = session.run("write it", thread_id=thread)
        assert isinstance(paused.events[-1], Interrupt)
        home = session.home
        light = home.saved_transcript(thread)
        full = home.transcript(thread)
        assert home.saved_transcript("nope") is None
    assert light is not None and full is not None
    messages, pending = light
    assert [(m.type, m.text, m.tool_calls, m.status) for m in messages] == [
        (
            m.type,
            m.text,
            [{k: c[k] for k in ("name", "args", "id")} for c in m.tool_calls]
            if m.type == "ai"
            else [],
            getattr(m, "status", "success") if m.type == "tool" else "success",
        )
        for m in full.messages
    ]
    assert any(m.status == "error" for m in messages)  # the missing file
    assert pending == full.pending and [a.name for a in pending] == ["write_file"]


def test_the_light_reading_replays_deltas_as_langgraph_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages kept as deltas (`runner.agent.state`): a snapshot every 3 updates, a
    replacement by id and a `RemoveMessage` of everything (what summarization writes) between."""
    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    monkeypatch.setattr("runner.agent.state.SNAPSHOT_EVERY", 3)
    model = ScriptedChatModel(script=lambda messages: {"content": f"seen {len(messages)}"})
    with Session(spec_file(tmp_path), model=model, db=tmp_path / "db") as session:
        thread = session.run("one").thread_id
        config = {"configurable": {"thread_id": thread}}
        for text in ("two", "three"):
            session.run(text, thread_id=thread)
        first = session.values(thread)["messages"][0]
        session.graph.update_state(config, {"messages": [HumanMessage("ONE", id=first.id)]})
        session.run("four", thread_id=thread)
        kept = session.values(thread)["messages"][-2:]
        session.graph.update_state(
            config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]}
        )
        shown, deltas = [], []
        for text in ("five", "six", "seven", "eight"):
            session.run(text, thread_id=thread)
            home = session.home
            light = home.saved_transcript(thread)
            full = home.transcript(thread)
            assert light is not None and full is not None
            shown.append(
                ([(m.type, m.text) for m in light[0]], [(m.type, m.text) for m in full.messages])
            )
            latest = home.checkpointer.get_tuple(config).checkpoint["channel_values"]
            deltas.append("messages" not in latest)
    assert any(deltas)  # some were replayed from writes, not read from a snapshot
    for light_messages, full_messages in shown:
        assert light_messages == full_messages
        assert light_messages[-2][0] == "human" and light_messages[-1][0] == "ai"
    assert [text for _, text in shown[0][0]][:1] == ["four"]  # what the removal kept
    assert isinstance(full.messages[-1], AIMessage)


def test_another_format_falls_back_to_langgraph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Unreadable):
        decode("pickle", b"...")
    model = ScriptedChatModel(script=[reply("Hello there.")])
    with Session(spec_file(tmp_path), model=model, db=tmp_path / "db") as session:
        thread = session.run("hi").thread_id

        def unreadable(*args: object) -> None:
            raise Unreadable("test")

        monkeypatch.setattr(session.home, "saved_transcript", unreadable)
        transcript = latest_transcript(session.home, thread)
    assert transcript is not None and transcript.messages[-1].text == "Hello there."
    assert type(transcript.messages[-1]).__name__ == "AIMessage"  # read through LangGraph
