"""The example workflows in workflows/: valid, their cassettes hold a reply for every call the
steps make, and each runs offline through `agentctl run` (JSON lines): the steps that ran, in
which order, and what the run left in the state.

Each run works in a copy of workflows/, on a thread database of its own (`AGENTCTL_HOME`).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.check.workflow import load_checked_workflow
from runner.load import load_spec
from runner.spec.workflow import WorkflowAgent, WorkflowSpec
from tests.conftest import ROOT, run_cli

WORKFLOWS = ROOT / "workflows"
EXAMPLES = ["release-notes", "triage", "research"]

# How often each agent key answers in the recorded run (the cassette's reply count).
CALLS = {
    "release-notes": {"writer": 2, "reviewer": 2},  # one loop back: the first review rejects
    "triage": {"classifier": 3, "fixer": 2, "answerer": 1},  # 3 tickets: 2 bugs, 1 question
    "research": {"researcher": 1, "internals": 1, "risks": 1, "writer": 1},
}


def _spec(name: str) -> WorkflowSpec:
    """The example, loaded and passed through every check `agentctl validate` makes."""
    return load_checked_workflow(WORKFLOWS / f"{name}.yaml", require_inputs=False)


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_example_reads_as_a_workflow(name: str) -> None:
    spec = _spec(name)
    assert spec.name == name
    assert spec.workflow.output in spec.state
    for key, agent in spec.agent_specs().items():
        assert agent.name == key
        assert agent.description, f"{key}: an agent says what it does (inspect shows it)"
        assert agent.model is not None and agent.model.id == "openai:gpt-4.1-mini"
    assert all(not isinstance(a, WorkflowAgent) or a.model is None for a in spec.agents.values())


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_cassette_has_the_replies_of_every_agent_key(name: str) -> None:
    cassette = yaml.safe_load((WORKFLOWS / f"{name}.cassette.yaml").read_text())
    replies = {key: len(value) for key, value in cassette["agents"].items()}
    assert replies == CALLS[name]
    assert set(replies) == set(_spec(name).agent_specs())


def test_the_first_example_of_the_docs_passes_the_checks(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "workflows.md").read_text()
    first = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    shutil.copytree(WORKFLOWS / "agents", tmp_path / "agents")  # its writer is a `ref:`
    (tmp_path / "release-notes.yaml").write_text(first)
    spec = load_checked_workflow(tmp_path / "release-notes.yaml", require_inputs=False)
    assert [step.id for step in spec.workflow.steps] == [
        "draft",
        "review",
        "again",
        "approve",
        "publish",
    ]


def test_every_example_has_a_test_file_that_passes_offline(tmp_path: Path) -> None:
    """`agentctl test workflows/`: each example's `*.test.yaml` (expect.steps) passes."""
    from runner.testing.suite import run_suite

    files = sorted(WORKFLOWS.glob("*.test.yaml"))
    assert [p.name.removesuffix(".test.yaml") for p in files] == sorted(EXAMPLES)
    suite = run_suite(files, workdir=tmp_path)
    assert not suite.problems, suite.problems
    assert len(suite.results) == len(EXAMPLES)
    for result in suite.results:
        assert result.status == "passed", (result.name, result.failures, result.problems)
    for path in files:
        first = path.read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=../schemas/test.schema.json", path


def test_the_release_notes_writer_is_an_agent_file_of_its_own() -> None:
    spec = load_spec(WORKFLOWS / "agents" / "writer.yaml", env=dict(os.environ))
    assert spec.name == "writer"
    assert spec.response_format is None  # its answer is the draft's text (state.draft: string)


# --------------------------------------------------------------------------- runs, offline


@dataclass
class NotesServer:
    """A loopback server that records what is POSTed to it (the release notes' publisher)."""

    url: str
    posts: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def notes_server() -> Iterator[NotesServer]:
    posts: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            posts.append({"path": self.path, "json": json.loads(body)})
            reply = json.dumps({"published": f"{self.path}/{len(posts)}"}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield NotesServer(f"http://127.0.0.1:{server.server_port}/notes", posts)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def workflows(tmp_path: Path) -> Path:
    """A copy of workflows/, so a run writes nothing in the repository."""
    shutil.copytree(WORKFLOWS, tmp_path / "workflows", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """`agentctl run ARGS --output jsonl` in `cwd`; its events."""
    done = run_cli("run", *args, "--output", "jsonl", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def started(events: list[dict[str, Any]]) -> list[str]:
    return [e["step"] for e in events if e["type"] == "step_start"]


def ended(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Step id -> the output of its last `step_end`."""
    return {e["step"]: e.get("output") for e in events if e["type"] == "step_end"}


def replies(name: str, agent: str) -> list[str]:
    """The texts of `agent`'s replies in the example's cassette."""
    cassette = yaml.safe_load((WORKFLOWS / f"{name}.cassette.yaml").read_text())
    return [reply["content"] for reply in cassette["agents"][agent]]


def test_research_runs_the_researchers_at_once_then_the_writer(workflows: Path) -> None:
    events = run(
        workflows,
        "workflows/research.yaml",
        *("--model", "replay:workflows/research.cassette.yaml"),
        "--var=topic=SQLite or DuckDB for a desktop app",
    )
    steps = started(events)
    assert steps[0] == "research" and steps[-1] == "write"
    assert sorted(steps[1:-1]) == ["internals", "risks", "usage"]
    # the writer starts after every researcher has finished
    ends = [e["step"] for e in events if e["type"] == "step_end"]
    assert ends.index("write") > max(ends.index(s) for s in ("usage", "internals", "risks"))
    outputs = ended(events)
    assert outputs["usage"] == replies("research", "researcher")[0]
    assert outputs["internals"] == replies("research", "internals")[0]
    assert outputs["risks"] == replies("research", "risks")[0]
    [final] = [e for e in events if e["type"] == "final"]
    assert final["content"] == outputs["write"] == replies("research", "writer")[0]
    # what an agent did is tagged with its step, and its agent key
    texts = {(e["step"], e["agent"]) for e in events if e["type"] == "model_call"}
    assert texts == {
        ("usage", "researcher"),
        ("internals", "internals"),
        ("risks", "risks"),
        ("write", "writer"),
    }


def _release_notes(workflows: Path, server: NotesServer) -> tuple[str, list[dict[str, Any]]]:
    """Run release-notes.yaml up to its approval step: the thread and the events."""
    events = run(
        workflows,
        "workflows/release-notes.yaml",
        *("--model", "replay:workflows/release-notes.cassette.yaml"),
        "--var=version=1.4.0",
        env={"NOTES_URL": server.url},
    )
    assert started(events) == ["draft", "review", "again", "draft", "review", "again", "approve"]
    reviews = [e["output"] for e in events if e["type"] == "step_end" and e["step"] == "review"]
    assert [r["approved"] for r in reviews] == [False, True]
    [waiting] = [e for e in events if e["type"] == "interrupt"]
    [action] = waiting["actions"]
    second = replies("release-notes", "writer")[1]
    assert action["args"] == {"draft": second}  # the reviewed draft, shown to the person
    assert not server.posts  # nothing is published before the person answers
    return waiting["thread_id"], events


def test_release_notes_loops_until_approved_and_publishes_after_the_approval(
    workflows: Path, notes_server: NotesServer
) -> None:
    thread, _ = _release_notes(workflows, notes_server)
    events = run(
        workflows,
        *("workflows/release-notes.yaml", "--thread", thread, "--approve"),
        env={"NOTES_URL": notes_server.url},
    )
    assert started(events) == ["approve", "publish"]
    draft = replies("release-notes", "writer")[1]
    assert notes_server.posts == [{"path": "/notes", "json": {"version": "1.4.0", "notes": draft}}]
    assert ended(events)["publish"] == {"published": "/notes/1"}
    [final] = [e for e in events if e["type"] == "final"]
    assert final["content"] == draft


def test_release_notes_publishes_what_the_person_edited(
    workflows: Path, notes_server: NotesServer
) -> None:
    thread, _ = _release_notes(workflows, notes_server)
    edited = "# agentctl 1.4.0\n\nEdited by hand."
    run(
        workflows,
        *("workflows/release-notes.yaml", "--thread", thread),
        *("--edit", json.dumps({"draft": edited})),
        env={"NOTES_URL": notes_server.url},
    )
    assert [post["json"]["notes"] for post in notes_server.posts] == [edited]


def test_release_notes_rejected_ends_without_publishing(
    workflows: Path, notes_server: NotesServer
) -> None:
    thread, _ = _release_notes(workflows, notes_server)
    events = run(
        workflows,
        *("workflows/release-notes.yaml", "--thread", thread, "--reject"),
        *("--reason", "not before Monday"),
        env={"NOTES_URL": notes_server.url},
    )
    assert started(events) == ["approve"]  # on_reject: end
    assert not notes_server.posts


def _triage(workflows: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    events = run(
        workflows, "workflows/triage.yaml", "--model", "replay:workflows/triage.cassette.yaml"
    )
    [final] = [e for e in events if e["type"] == "final"]
    return events, final["structured_response"]


def test_triage_classifies_every_ticket_and_routes_it_by_kind(workflows: Path) -> None:
    events, results = _triage(workflows)
    steps = started(events)
    assert steps[0] == "each-ticket"
    assert sorted(steps[1:]) == sorted(
        ["classify"] * 3 + ["by-kind"] * 3 + ["fix"] * 2 + ["answer"]
    )
    routes = [e["output"] for e in events if e["type"] == "step_end" and e["step"] == "by-kind"]
    assert sorted(routes) == ["answer", "fix", "fix"]
    # one result per ticket, in the tickets' order (101 bug, 102 question, 103 bug)
    assert [r["kind"] for r in results] == ["bug", "question", "bug"]
    assert results[1]["reply"] == replies("triage", "answerer")[0]
    assert {results[0]["reply"], results[2]["reply"]} <= set(replies("triage", "fixer"))
    assert ended(events)["each-ticket"] == "3 items"


def test_triage_gives_each_bug_its_own_fixer_reply(workflows: Path) -> None:
    _, results = _triage(workflows)
    assert sorted([results[0]["reply"], results[2]["reply"]]) == sorted(replies("triage", "fixer"))


def test_research_resumes_at_the_step_that_failed(workflows: Path) -> None:
    """A run stopped at `write` (its replies missing) continues with `--thread ID` at `write`:
    the researchers, finished, do not run again."""
    cassette = workflows / "workflows" / "research.cassette.yaml"
    whole = cassette.read_text()
    partial = yaml.safe_load(whole)
    del partial["agents"]["writer"]
    cassette.write_text(yaml.safe_dump(partial))
    args = ["run", "workflows/research.yaml", "--model", f"replay:{cassette}"]
    done = run_cli(*args, "--var=topic=SQLite", "--output", "jsonl", cwd=workflows)
    assert done.returncode == 1, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert ended(events)["write"] is None
    assert [e["status"] for e in events if e["type"] == "step_end"][-1] == "failed"
    thread = events[0]["thread_id"]
    cassette.write_text(whole)
    events = run(workflows, "workflows/research.yaml", "--thread", thread)
    assert started(events) == ["write"]
    [final] = [e for e in events if e["type"] == "final"]
    assert final["content"] == replies("research", "writer")[0]


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_schema_editors_read_accepts_the_example(name: str) -> None:
    import jsonschema

    path = WORKFLOWS / f"{name}.yaml"
    first = path.read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../schemas/agent.schema.json"
    schema = json.loads((ROOT / "schemas" / "agent.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    assert not [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]


def test_release_notes_forked_after_the_review_with_another_draft(
    workflows: Path, notes_server: NotesServer
) -> None:
    """`threads fork --at again --set draft=...`: the new thread goes on at the step after
    `again` (the approval) with the edited draft; the original thread keeps its own."""
    thread, _ = _release_notes(workflows, notes_server)
    env = {"NOTES_URL": notes_server.url}
    forked = run_cli(
        *("threads", "fork", thread, "--at", "again", "--set", "draft=Notes of 1.4.0, forked"),
        cwd=workflows,
        env=env,
    )
    assert forked.returncode == 0, forked.stderr
    new = forked.stdout.strip()
    assert new and new != thread
    events = run(workflows, "workflows/release-notes.yaml", "--thread", new, env=env)
    assert started(events) == ["approve"]  # the steps up to `again` are not run again
    [waiting] = [e for e in events if e["type"] == "interrupt"]
    assert waiting["actions"][0]["args"] == {"draft": "Notes of 1.4.0, forked"}
    run(workflows, "workflows/release-notes.yaml", "--thread", new, "--approve", env=env)
    run(workflows, "workflows/release-notes.yaml", "--thread", thread, "--approve", env=env)
    original = replies("release-notes", "writer")[1]
    notes = [post["json"]["notes"] for post in notes_server.posts]
    assert notes == ["Notes of 1.4.0, forked", original]
