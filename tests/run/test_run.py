"""Sessions: events of a turn, threads across sessions, approvals, continuation, recording."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.events import Error, Final, Interrupt, Start, TextDelta, ToolCall, ToolResult, Usage
from runner.run import Decision, RunOptions, Session
from runner.threads import open_home
from tests.conftest import ROOT

SPINE = ROOT / "tests" / "data" / "spine"


@pytest.fixture
def spine(tmp_path: Path) -> Path:
    folder = tmp_path / "spine"
    shutil.copytree(SPINE, folder)
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    return folder / "agent.yaml"


def test_a_turn_yields_typed_events_naming_the_agent(spine: Path, tmp_path: Path) -> None:
    with Session(spine, db=tmp_path / "db.sqlite") as session:
        events = list(session.stream("add 2 and 3"))
    kinds = [type(e) for e in events]
    assert kinds[0] is Start and kinds[1] is TextDelta and kinds[-1] is Final
    call = next(e for e in events if isinstance(e, ToolCall))
    result = next(e for e in events if isinstance(e, ToolResult))
    assert (call.name, call.args, result.id, result.content) == (
        "add",
        {"a": 2, "b": 3},
        call.id,
        "5",
    )
    assert all(e.agent == "calc" for e in events)
    assert any(isinstance(e, Usage) for e in events)
    final = events[-1]
    assert isinstance(final, Final) and final.content == "The sum is 5."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Adding.The sum is 5."


def test_a_thread_continues_in_a_new_session(spine: Path, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with Session(spine, db=db) as session:
        thread = session.run("add").thread_id
    with Session(spine, db=db) as session:
        result = session.run("now shout", thread_id=thread)
        assert isinstance(result.interrupt, Interrupt)
        messages = session.values(thread)["messages"]
    assert [m.type for m in messages][:5] == ["human", "ai", "tool", "ai", "human"]
    info = open_home(db).thread(thread)
    assert info is not None and info.agent == "calc" and info.first_message == "add"


@pytest.mark.parametrize(
    ("decision", "tool_output", "final"),
    [
        (Decision("approve"), "HELLO", "I shouted."),
        (Decision("edit", args={"text": "quiet"}), "QUIET", "I shouted."),
        (Decision("reject", message="no shouting"), "no shouting", "I shouted."),
    ],
)
def test_approvals_change_what_the_tool_does(
    spine: Path, tmp_path: Path, decision: Decision, tool_output: str, final: str
) -> None:
    db = tmp_path / "db.sqlite"
    with Session(spine, db=db) as session:
        thread = session.run("add").thread_id
        paused = session.run("shout", thread_id=thread)
    assert paused.interrupt is not None
    action = paused.interrupt.actions[0]
    assert (action.name, action.args, action.description) == (
        "shout",
        {"text": "hello"},
        "Shouting needs a yes",
    )
    with Session(spine, db=db) as session:  # answered from a fresh session, as a new process would
        result = session.run(thread_id=thread, decisions=[decision])
    outcome = next(e for e in result.events if isinstance(e, ToolResult))
    assert tool_output in outcome.content
    assert result.final is not None and result.final.content == final


def test_decisions_outside_the_allowed_set_are_refused(spine: Path, tmp_path: Path) -> None:
    spec_text = spine.read_text().replace("[approve, edit, reject]", "[approve, reject]")
    spine.write_text(spec_text)
    with Session(spine, db=tmp_path / "db.sqlite") as session:
        thread = session.run("add").thread_id
        session.run("shout", thread_id=thread)
        result = session.run(thread_id=thread, decisions=[Decision("edit", args={"text": "x"})])
    assert result.error is not None
    assert result.error.message == "shout: 'edit' is not allowed here; allowed: approve, reject"


def test_errors_become_events(spine: Path, tmp_path: Path) -> None:
    with Session(spine, db=tmp_path / "db.sqlite") as session:
        result = session.run(thread_id="does-not-exist")
        assert result.error is not None and "no thread 'does-not-exist'" in result.error.message
        thread = session.run("add").thread_id
        result = session.run(thread_id=thread)
        assert result.error is not None
        assert result.error.message == f"thread {thread} has nothing to continue; send a message"


def test_running_out_of_replies_is_an_error_event(spine: Path, tmp_path: Path) -> None:
    with Session(spine, db=tmp_path / "db.sqlite") as session:
        thread = session.run("add").thread_id
        session.run("shout", thread_id=thread)
        session.run(thread_id=thread, decisions=[Decision("approve")])
        result = session.run("again", thread_id=thread)
    assert isinstance(result.events[-1], Error)
    assert "has 4 replies for agent 'calc'" in result.events[-1].message


def test_record_writes_a_cassette_that_replays(spine: Path, tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.cassette.yaml"
    with Session(spine, db=tmp_path / "a.sqlite", record=recorded) as session:
        first = session.run("add")
    with Session(spine, db=tmp_path / "b.sqlite", model=f"replay:{recorded}") as session:
        again = session.run("add")
    assert first.content == again.content == "The sum is 5."
    calls = [(e.name, e.args) for e in again.events if isinstance(e, ToolCall)]
    assert calls == [("add", {"a": 2, "b": 3})]


def test_options_carry_what_the_keywords_do(spine: Path, tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.cassette.yaml"
    options = RunOptions(db=tmp_path / "a.sqlite", record=recorded, keep_checkpoints=3, wait=2.0)
    with Session(spine, options=options) as session:
        assert session.run("add").content == "The sum is 5."
        assert (session.keep_checkpoints, session.wait) == (3, 2.0)
    replay = RunOptions(db=tmp_path / "b.sqlite", model=f"replay:{recorded}")
    with Session(spine, options=replay) as session:
        assert session.run("add").content == "The sum is 5."
        assert session.settings.model == f"replay:{recorded}"


def test_options_and_keywords_together_are_refused(spine: Path, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"options= or the keywords \(wait\)"):
        Session(spine, options=RunOptions(db=tmp_path / "db.sqlite"), wait=1.0)


def test_transcript_reads_a_thread_without_building_its_agent(spine: Path, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with Session(spine, db=db) as session:
        thread = session.run("add").thread_id
        session.run("now shout", thread_id=thread)
    spine.unlink()  # the spec is gone; the thread is still readable
    home = open_home(db)
    transcript = home.transcript(thread)
    assert transcript is not None
    assert [(m.type, m.text) for m in transcript.messages] == [
        ("human", "add"),
        ("ai", "Adding."),
        ("tool", "5"),
        ("ai", "The sum is 5."),
        ("human", "now shout"),
        ("ai", "Now shouting."),
    ]
    [action] = transcript.pending
    assert (action.name, action.args, action.description) == (
        "shout",
        {"text": "hello"},
        "Shouting needs a yes",
    )
    assert home.transcript("no-such-thread") is None


def test_files_lists_what_the_agent_sees_on_its_backend(tmp_path: Path) -> None:
    spec = tmp_path / "writer.yaml"
    spec.write_text(
        "name: writer\nmodel: replay:writer.cassette.yaml\nbackend: state\n", encoding="utf-8"
    )
    (tmp_path / "writer.cassette.yaml").write_text(
        "- tool_calls: [{name: write_file, args: {file_path: /notes/a.md, content: hi}}]\n"
        "- content: Written.\n",
        encoding="utf-8",
    )
    with Session(spec, db=tmp_path / "db.sqlite") as session:
        assert session.files(None) == []
        thread = session.run("write").thread_id
        assert [(f.path, f.size) for f in session.files(thread)] == [("/notes/a.md", 2)]
        assert session.files(None) == []  # state files belong to a thread
