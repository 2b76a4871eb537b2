"""`agentctl threads` export, fork, search, prune, --json and --checkpoints.

The showcase example (offline, from its cassette) makes a thread with an approval in it; the
commands run as separate processes on its database, as a user runs them."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runner.run import Decision, Session
from runner.threads import export as thread_tools
from runner.threads import history, open_home
from tests.conftest import AGENTS, ROOT, run_cli
from tests.fakes import ScriptedChatModel, ai

NOTES = "Write the release notes for agentctl 0.1.0"


@pytest.fixture(scope="module")
def showcase(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A copy of agents/ with two showcase threads: one answered (approved), one waiting for
    the approval of its write_file call."""
    home = tmp_path_factory.mktemp("showcase")
    shutil.copytree(AGENTS, home / "agents", ignore=shutil.ignore_patterns("workspace"))
    shutil.copytree(ROOT / "skills", home / "skills")
    with Session(home / "agents" / "showcase.yaml", db=home / "agentctl.db") as session:
        approved = session.run(NOTES)
        assert approved.interrupt is not None
        done = session.run(thread_id=approved.thread_id, decisions=[Decision("approve")])
        assert done.error is None and done.final is not None
        waiting = session.run(NOTES)
        assert [a.name for a in waiting.interrupt.actions] == ["write_file"]  # type: ignore[union-attr]
    return home, approved.thread_id, waiting.thread_id


def lines_of(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_export_jsonl_has_messages_tool_calls_and_the_approval_with_its_decision(
    showcase: tuple[Path, str, str],
) -> None:
    home, approved, waiting = showcase
    exported = run_cli("threads", "export", approved, cwd=home)
    assert exported.returncode == 0, exported.stderr
    records = lines_of(exported.stdout)
    header = records[0]
    assert header["type"] == "thread" and header["thread_id"] == approved
    assert header["agent"] == "showcase" and header["format"] == 1
    assert header["first_message"] == NOTES
    messages = [r for r in records if r["type"] == "message"]
    assert messages[0]["role"] == "user" and messages[0]["content"] == NOTES
    assert [m["index"] for m in messages] == list(range(len(messages)))
    calls = [r for r in records if r["type"] == "tool_call"]
    written = next(c for c in calls if c["name"] == "write_file")
    assert written["args"]["file_path"] == "/RELEASE_NOTES.md"
    assert written["result"] == "Updated file /RELEASE_NOTES.md" and written["status"] == "success"
    assert any(c["name"] == "task" and c["args"]["subagent_type"] == "reviewer" for c in calls)
    (approval,) = [r for r in records if r["type"] == "approval"]
    assert approval["status"] == "answered"
    assert approval["decisions"] == [{"type": "approve"}] and approval["summary"] == "approve"
    assert [a["name"] for a in approval["actions"]] == ["write_file"]
    assert approval["actions"][0]["args"]["file_path"] == "/RELEASE_NOTES.md"

    pending = lines_of(run_cli("threads", "export", waiting, cwd=home).stdout)
    (open_approval,) = [r for r in pending if r["type"] == "approval"]
    assert open_approval["status"] == "pending" and open_approval["decisions"] is None
    unanswered = [r for r in pending if r["type"] == "tool_call" and r["result"] is None]
    assert [c["name"] for c in unanswered] == ["write_file"]


def test_export_markdown_to_a_file(showcase: tuple[Path, str, str], tmp_path: Path) -> None:
    home, approved, _ = showcase
    target = tmp_path / "thread.md"
    done = run_cli(
        "threads", "export", approved, "--format", "markdown", "-o", str(target), cwd=home
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"exported thread {approved} to {target}\n"
    text = target.read_text()
    assert text.startswith(f"# Thread {approved}\n\n- Agent: `showcase`\n")
    assert f"### User\n\n{NOTES}\n" in text
    assert "**Tool call** `write_file`" in text and "Updated file /RELEASE_NOTES.md" in text
    assert "## Approvals\n\n- `write_file`: answered: approve (" in text
    assert '→ {"type": "approve"}' in text


def test_fork_at_the_approval_answers_it_again_on_a_new_thread(
    showcase: tuple[Path, str, str],
) -> None:
    home, approved, _ = showcase
    listed = run_cli("threads", "show", approved, "--checkpoints", "--json", cwd=home)
    assert listed.returncode == 0, listed.stderr
    points = json.loads(listed.stdout)
    assert [p["checkpoint_id"] for p in points] == sorted(
        (p["checkpoint_id"] for p in points), reverse=True
    )
    asked = next(p for p in points if p["waiting"] == ["write_file"])
    table = run_cli("threads", "show", approved, "--checkpoints", cwd=home)
    assert table.stdout.splitlines()[0].split() == [
        "CHECKPOINT",
        "STEP",
        "CREATED",
        "MSGS",
        "LAST",
        "MESSAGE",
    ]
    assert any(
        line.startswith(asked["checkpoint_id"]) and "waits for write_file" in line
        for line in table.stdout.splitlines()
    )

    forked = run_cli("threads", "fork", approved, "--at", asked["checkpoint_id"][:20], cwd=home)
    assert forked.returncode == 0, forked.stderr
    new = forked.stdout.strip()
    assert new != approved
    spec = str(home / "agents" / "showcase.yaml")
    assert forked.stderr == (
        f"forked thread {approved} at checkpoint {asked['checkpoint_id']}; continue it with: "
        f"agentctl run {spec} --thread {new}\n"
    )
    shown = json.loads(run_cli("threads", "show", new, "--json", cwd=home).stdout)
    assert shown["agent"] == "showcase" and shown["spec"] == spec
    assert shown["first_message"] == NOTES
    assert [p["name"] for p in shown["pending"]] == ["write_file"]
    assert len(shown["messages"]) == asked["messages"]

    # the fork waits where the original did; another answer there goes its own way
    answered = run_cli(
        "run", spec, "--thread", new, "--reject", "--reason", "not yet", "-q", cwd=home
    )
    assert answered.returncode == 0, answered.stderr
    fork_records = lines_of(run_cli("threads", "export", new, cwd=home).stdout)
    (approval,) = [r for r in fork_records if r["type"] == "approval"]
    assert approval["decisions"] == [{"type": "reject", "message": "not yet"}]
    rejected = next(
        r for r in fork_records if r["type"] == "tool_call" and r["name"] == "write_file"
    )
    assert rejected["status"] == "error" and "not yet" in rejected["result"]
    original = lines_of(run_cli("threads", "export", approved, cwd=home).stdout)
    (kept,) = [r for r in original if r["type"] == "approval"]
    assert kept["decisions"] == [{"type": "approve"}]


def test_fork_errors_name_the_checkpoint_and_the_fix(showcase: tuple[Path, str, str]) -> None:
    home, approved, _ = showcase
    missing = run_cli("threads", "fork", approved, "--at", "nope", cwd=home)
    assert missing.returncode == 1
    assert missing.stderr == (
        f"error: thread {approved} has no checkpoint 'nope' (old ones are pruned unless runs "
        "keep them with --keep-checkpoints all); list those it has with "
        f"`agentctl threads show {approved} --checkpoints`\n"
    )
    ambiguous = run_cli("threads", "fork", approved, "--at", "1", cwd=home)
    assert ambiguous.returncode == 1 and "starts" in ambiguous.stderr
    unknown = run_cli("threads", "fork", "no-such-thread", cwd=home)
    assert unknown.returncode == 1
    assert unknown.stderr == f"error: no thread 'no-such-thread' in {home / 'agentctl.db'}\n"


def test_fork_then_continue_with_a_new_message(tmp_path: Path) -> None:
    """Forked before the approval was asked: a new message on the fork is a new path."""
    shutil.copytree(ROOT / "tests" / "data" / "spine", tmp_path / "spine")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    db = tmp_path / "agentctl.db"
    with Session(tmp_path / "spine" / "agent.yaml", db=db) as session:
        source = session.run("add two and three").thread_id
        earliest = history.checkpoints(session.home, source)[-1]
        assert earliest.messages == 0 and earliest.source == "input"
        after_answer = next(
            c
            for c in history.checkpoints(session.home, source)
            if c.last == "assistant: The sum is 5."
        )
        fork = history.fork_thread(session.home, source, at=after_answer.checkpoint_id)
        result = session.run("now shout", thread_id=fork.thread_id)
        assert [a.name for a in result.interrupt.actions] == ["shout"]  # type: ignore[union-attr]
        assert len(session.values(source)["messages"]) == 4  # the source did not move
        assert session.home.settings(fork.thread_id) == session.home.settings(source)


def test_export_has_the_state_files(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "tests" / "data" / "spine", tmp_path / "spine")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    model = ScriptedChatModel(
        script=[
            ai("Writing.", ("write_file", {"file_path": "/notes.md", "content": "# Notes\n"})),
            ai("Written."),
        ]
    )
    with Session(tmp_path / "spine" / "agent.yaml", db=tmp_path / "a.db", model=model) as session:
        thread = session.run("keep a note").thread_id
        records = thread_tools.export_records(session.home, thread)
        markdown = thread_tools.export_markdown(session.home, thread)
    (file,) = [r for r in records if r["type"] == "file"]
    assert (file["path"], file["content"], file["encoding"]) == ("/notes.md", "# Notes\n", "utf-8")
    assert "## Files\n\n### /notes.md\n\n```\n# Notes\n\n```" in markdown


def test_list_and_show_json(showcase: tuple[Path, str, str]) -> None:
    home, approved, waiting = showcase
    listed = json.loads(run_cli("threads", "list", "--json", cwd=home).stdout)
    mine = [t for t in listed if t["thread_id"] in (approved, waiting)]
    assert len(mine) == 2
    assert set(mine[0]) == {
        "thread_id",
        "agent",
        "spec",
        "created_at",
        "updated_at",
        "first_message",
        "model",
        "vars",
    }
    shown = json.loads(run_cli("threads", "show", waiting, "--json", cwd=home).stdout)
    assert shown["thread_id"] == waiting and shown["messages"][0]["content"] == NOTES
    (pending,) = shown["pending"]
    assert pending["name"] == "write_file" and pending["allowed_decisions"] == [
        "approve",
        "edit",
        "reject",
    ]


def test_search_finds_messages_and_says_when_nothing_matches(
    showcase: tuple[Path, str, str],
) -> None:
    home, approved, waiting = showcase
    found = run_cli("threads", "search", "RELEASE-NOTES skill", cwd=home)
    assert found.returncode == 0, found.stderr
    threads = {line.split()[0] for line in found.stdout.splitlines()}
    assert {approved, waiting} <= threads
    as_json = json.loads(
        run_cli("threads", "search", "second pair of eyes", "--json", cwd=home).stdout
    )
    found_in = {m["thread_id"] for m in as_json}  # (a fork of `approved` may have it too)
    assert approved in found_in and waiting not in found_in
    assert {m["role"] for m in as_json} == {"assistant"}
    assert "second pair of eyes" in as_json[0]["snippet"]
    none = run_cli("threads", "search", "zebra crossing", cwd=home)
    assert (none.returncode, none.stdout) == (1, "")
    assert none.stderr == "no messages contain 'zebra crossing'\n"


def test_prune_deletes_old_threads_but_never_a_running_one(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "tests" / "data" / "spine", tmp_path / "spine")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    db = tmp_path / "agentctl.db"
    with Session(tmp_path / "spine" / "agent.yaml", db=db) as session:
        old = session.run("add two and three").thread_id
        running = session.run("add two and three").thread_id
    home = open_home(db)
    try:
        later = datetime.now(UTC) + timedelta(days=31)
        lease = home.lease.acquire(running)  # as a run in progress holds it
        dry = history.prune_threads(home, timedelta(days=30), dry_run=True, now=later)
        assert [t.thread_id for t in dry.deleted] == [old]
        assert [t.thread_id for t, _ in dry.running] == [running]
        assert home.thread(old) is not None  # a dry run deletes nothing
        assert history.prune_threads(home, timedelta(days=30)).deleted == []  # not old yet
        done = history.prune_threads(home, timedelta(days=30), now=later)
        assert [t.thread_id for t in done.deleted] == [old]
        assert [t.thread_id for t, _ in done.running] == [running]
        assert home.thread(old) is None and home.transcript(old) is None
        assert home.thread(running) is not None
        lease.release()
    finally:
        home.close()

    kept = run_cli("threads", "prune", "--older-than", "30d", "--dry-run", cwd=tmp_path)
    assert (kept.returncode, kept.stdout) == (0, "")
    assert kept.stderr == "would delete 0 threads not used for 30d\n"
    bad = run_cli("threads", "prune", "--older-than", "soon", cwd=tmp_path)
    assert bad.returncode == 2
    assert "expected a number and a unit (s, m, h, d or w), like 30d or 12h" in bad.stderr


def test_parse_age() -> None:
    assert history.parse_age("30d") == timedelta(days=30)
    assert history.parse_age(" 12H ") == timedelta(hours=12)
    assert history.parse_age("1.5w") == timedelta(weeks=1.5)
    with pytest.raises(ValueError):
        history.parse_age("30")


def test_fork_of_a_thread_waiting_inside_a_subagent(tmp_path: Path) -> None:
    """The subagent's own checkpoint is copied with the main one: the fork waits for the same
    approval inside the subagent, and each thread takes its own answer."""
    shutil.copytree(ROOT / "tests" / "data" / "subagents", tmp_path / "subagents")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    cassette = tmp_path / "subagents" / "sub.cassette.yaml"
    cassette.write_text(
        "agents:\n"
        "  lead:\n"
        "    - content: Asking the adder.\n"
        "      tool_calls: [{name: task, args: {description: shout hi, subagent_type: adder}}]\n"
        "    - content: Done.\n"
        "  adder:\n"
        "    - content: shouting\n"
        "      tool_calls: [{name: shout, args: {text: hi}}]\n"
        "    - content: Shouted.\n",
        encoding="utf-8",
    )
    with Session(
        tmp_path / "subagents" / "team.yaml", db=tmp_path / "a.db", model=f"replay:{cassette}"
    ) as session:
        source = session.run("go")
        assert [a.agent for a in source.interrupt.actions] == ["adder"]  # type: ignore[union-attr]
        fork = history.fork_thread(session.home, source.thread_id)
        assert [a.name for _, group in session.pending(fork.thread_id) for a in group] == ["shout"]
        approved = session.run(thread_id=fork.thread_id, decisions=[Decision("approve")])
        rejected = session.run(thread_id=source.thread_id, decisions=[Decision("reject")])
        assert approved.content == rejected.content == "Done."
        answers = {
            thread: [
                (a["status"], a["agent_namespace"].startswith("tools:"), a["decisions"])
                for a in thread_tools.approval_records(session.home, thread)
            ]
            for thread in (fork.thread_id, source.thread_id)
        }
    assert answers == {
        fork.thread_id: [("answered", True, [{"type": "approve"}])],
        source.thread_id: [("answered", True, [{"type": "reject"}])],
    }


def test_fork_of_a_thread_without_checkpoints(tmp_path: Path) -> None:
    from runner.errors import RunError

    home = open_home(tmp_path / "a.db")
    try:
        home.register("t-1", agent="calc", spec=None, first_message="hi")
        with pytest.raises(RunError, match="thread t-1 has no checkpoint yet: nothing to fork"):
            history.fork_thread(home, "t-1")
        with pytest.raises(RunError, match="no thread 't-2'"):
            history.fork_thread(home, "t-2")
    finally:
        home.close()


def test_a_fork_from_a_checkpoint_kept_as_deltas_stands_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint holds only its step's messages (a snapshot every 3 updates here): the
    fork gets the conversation rebuilt as a snapshot, and needs nothing of the source after."""
    from tests.middleware.helpers import spec_file

    monkeypatch.setattr("runner.agent.state.SNAPSHOT_EVERY", 3)
    model = ScriptedChatModel(script=lambda messages: {"content": f"seen {len(messages)}"})
    with Session(spec_file(tmp_path), model=model, db=tmp_path / "db") as session:
        source = session.run("one").thread_id
        for text in ("two", "three", "four"):
            session.run(text, thread_id=source)
        home = session.home
        saved = {
            c.checkpoint["id"]: c
            for c in home.checkpointer.list({"configurable": {"thread_id": source}})
        }
        deltas = [
            c
            for c in history.checkpoints(home, source)
            if "messages" not in saved[c.checkpoint_id].checkpoint["channel_values"]
            and c.messages
            # a fork takes the checkpoint's pending writes too: none here, to compare values
            and not any(w[1] == "messages" for w in saved[c.checkpoint_id].pending_writes or ())
        ]
        at = deltas[len(deltas) // 2]
        config = {"configurable": {"thread_id": source, "checkpoint_id": at.checkpoint_id}}
        then = [m.text for m in session.graph.get_state(config).values["messages"]]
        fork = history.fork_thread(home, source, at=at.checkpoint_id)
        home.delete(source)
        values = session.values(fork.thread_id)["messages"]
        assert [m.text for m in values] == then and len(then) > 2
        assert session.run("five", thread_id=fork.thread_id).error is None
        assert [m.text for m in session.values(fork.thread_id)["messages"]][: len(then)] == then
