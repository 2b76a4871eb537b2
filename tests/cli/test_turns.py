"""Cancelling a turn (what Ctrl-C does in a session) leaves the thread consistent."""

from __future__ import annotations

import shutil
from pathlib import Path

from runner.cli.session import TurnRunner
from runner.events import Final, ToolCall
from runner.run import Session
from tests.conftest import ROOT


def test_a_turn_cancelled_while_its_tool_runs_leaves_a_usable_thread(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "tests" / "data" / "terminal", tmp_path / "terminal")
    with Session(tmp_path / "terminal" / "napper.yaml", db=tmp_path / "db.sqlite") as session:
        turns = TurnRunner(session)
        events = turns.stream("nap")
        thread = None
        for event in events:
            thread = getattr(event, "thread_id", thread)
            if isinstance(event, ToolCall):
                break  # the tool is sleeping now
        events.close()  # cancel, as Ctrl-C does
        assert turns.busy  # the step in flight finishes in the background...
        turns.wait()
        assert not turns.busy
        assert thread is not None
        # ...and the next message goes on: the call left without a result is answered first
        last = list(turns.stream("wake up", thread_id=thread))[-1]
        assert isinstance(last, Final) and last.content == "Awake again."
        history = session.values(thread)["messages"]
    assert [m.type for m in history] == ["human", "ai", "tool", "human", "ai"]
    assert history[2].status == "error" and "was cancelled" in history[2].text
