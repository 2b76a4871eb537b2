"""The journal's lookup not sent for a call the model made in this process while it held the
thread (`PostgresToolJournal.made`, `runner.middleware.journal._new`): only then, once, and
not for an id the conversation has twice."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage


def asking(*ids: str) -> Any:
    """A tool call request whose conversation has a message asking for each id."""
    messages = [
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": i, "type": "tool_call"}])
        for i in ids
    ]
    return SimpleNamespace(state={"messages": [*messages, ToolMessage("x", tool_call_id="a")]})


def test_a_call_made_while_the_lease_is_held_is_new_once(postgres_url: str) -> None:
    from collections import Counter

    from runner.middleware import journal as journaled
    from runner.middleware.tallies import Tallies
    from runner.threads import open_home

    call_ids = Tallies(Counter, journaled._count_call_ids)

    def _new(*args: Any) -> bool:
        return journaled._new(*args, call_ids)

    home: Any = open_home(postgres_url)
    try:
        journal = home.journal
        journal.made("t1", ["a"])  # no lease held: nothing known
        assert not _new(journal, asking("a"), "t1", "", "a")
        lease = home.lease.acquire("t1")
        journal.made("t1", ["a", "b"])
        assert not _new(journal, asking("a"), "t1", "task-1", "a")  # a subagent's scope
        assert _new(journal, asking("a"), "t1", "", "a")
        assert not _new(journal, asking("a"), "t1", "", "a")  # asked once: looked up after
        assert not _new(journal, asking("b", "b"), "t1", "", "b")  # an id used twice
        journal.made("t1", ["c"])
        lease.release()  # another process may take the thread and run the call
        assert not _new(journal, asking("c"), "t1", "", "c")
    finally:
        home.close()


def test_a_turns_call_is_recorded_and_found_by_the_next_lookup(
    tmp_path: Any, postgres_url: str
) -> None:
    """The lookup skipped, the result is still recorded: a lookup after (a resumed run) finds
    it."""
    from runner.run import Session
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import spec_file
    from tests.threads.test_retention import answers, turns

    with Session(
        spec_file(tmp_path), model=ScriptedChatModel(script=answers), db=postgres_url
    ) as s:
        thread = turns(s, 2)
        calls = [
            c["id"]
            for m in s.state(thread).values["messages"]
            for c in getattr(m, "tool_calls", None) or ()
        ]
        assert len(calls) == 2
        for call_id in calls:
            assert s.home.journal.lookup(thread, "", call_id) is not None
