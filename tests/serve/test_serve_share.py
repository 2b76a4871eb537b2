"""Threads shared between `agentctl run/threads --db URL` and `agentctl serve --db URL` (Aegra) on
one real Postgres database: a thread started from the CLI is found, read and resumed through the
server with `langgraph-sdk`, then continued from the CLI; a thread started through the server is
listed and continued by the CLI."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import run_cli
from tests.serve import servers
from tests.services import fresh_database

pytest.importorskip("aegra_api")
sdk = pytest.importorskip("langgraph_sdk")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.version_info < (3, 12), reason="Aegra needs Python 3.12 or newer"),
]

SCRIBE = """\
name: scribe
description: Writes a note, after approval
model: replay:scribe.cassette.yaml
prompt: You write notes.
backend: {kind: filesystem, root_dir: "./ws/{thread_id}"}
interrupt_on: {write_file: true}
"""
REPLIES = """\
- content: Writing the note.
  tool_calls:
    - {name: write_file, args: {file_path: /note.md, content: draft}}
- content: Done.
- content: Still here.
"""


def _write_spec(folder: Path) -> Path:
    (folder / "scribe.yaml").write_text(SCRIBE, encoding="utf-8")
    (folder / "scribe.cassette.yaml").write_text(REPLIES, encoding="utf-8")
    return folder / "scribe.yaml"


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    return _write_spec(tmp_path)


@contextlib.contextmanager
def _serving(spec: Path, db: str) -> Iterator[Any]:
    """A langgraph-sdk client of `agentctl serve --db DB` serving `spec`."""
    log = spec.parent / "serve.log"
    with servers.serving([spec], cwd=spec.parent, args=["--db", db], log=log) as server:
        yield sdk.get_sync_client(url=server.url)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: str
) -> Iterator[tuple[Path, str, Any]]:
    """The agent file, the database URL and a langgraph-sdk client of a server on it: one for
    the module (each test works on threads of its own)."""
    spec = _write_spec(tmp_path_factory.mktemp("shared"))
    with fresh_database(postgres_server) as database, _serving(spec, database) as client:
        yield spec, database, client


def _events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def _cli(spec: Path, db: str, *args: str) -> list[dict[str, Any]]:
    done = run_cli("run", str(spec), *args, "--output", "jsonl", "--db", db, cwd=spec.parent)
    assert done.returncode == 0, done.stderr
    return _events(done.stdout)


def _text(state: dict[str, Any]) -> str:
    content = state["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def _status(client: Any, thread: str) -> str:
    found = {t["thread_id"]: t for t in client.threads.search(limit=100)}
    assert thread in found, f"{thread} not in the server's thread search"
    assert found[thread]["metadata"]["graph_id"] == "scribe"
    return str(found[thread]["status"])


def test_a_cli_thread_resumes_through_the_server_and_back(
    served: tuple[Path, str, Any],
) -> None:
    spec, db, client = served
    asked = _cli(spec, db, "note")
    thread = asked[0]["thread_id"]
    assert asked[-1]["type"] == "interrupt"

    assert _status(client, thread) == "interrupted"
    state = client.threads.get_state(thread)
    assert state["next"], state
    [request] = state["tasks"][0]["interrupts"][0]["value"]["action_requests"]
    assert (request["name"], request["args"]["file_path"]) == ("write_file", "/note.md")

    answered = client.runs.wait(
        thread, "scribe", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert _text(answered) == "Done."
    assert (spec.parent / "ws" / thread / "note.md").read_text(encoding="utf-8") == "draft"
    assert _status(client, thread) == "idle"

    with psycopg.connect(db, autocommit=True) as conn:  # as while a server run is under way
        conn.execute(
            "INSERT INTO runs (run_id, thread_id, status, user_id) "
            "VALUES ('r-busy', %s, 'running', 'anonymous')",
            (thread,),
        )
        busy = run_cli("run", str(spec), "hi", "--thread", thread, "--db", db, cwd=spec.parent)
        assert busy.returncode == 1
        assert f"thread {thread} has a run running on the server (run r-busy)" in busy.stderr
        conn.execute("DELETE FROM runs WHERE run_id = 'r-busy'")

    again = _cli(spec, db, "still there?", "--thread", thread)
    assert again[-1]["content"] == "Still here."
    assert _text(client.threads.get_state(thread)["values"]) == "Still here."
    assert _status(client, thread) == "idle"

    removed = run_cli("threads", "--db", db, "rm", thread, "--yes", cwd=spec.parent)
    assert removed.returncode == 0, removed.stderr
    assert thread not in {t["thread_id"] for t in client.threads.search(limit=100)}


def test_a_server_thread_is_listed_and_continued_by_the_cli(
    served: tuple[Path, str, Any],
) -> None:
    spec, db, client = served
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "scribe", input={"messages": [{"role": "user", "content": "note"}]})
    assert _status(client, thread) == "interrupted"

    listed = run_cli("threads", "--db", db, cwd=spec.parent)
    assert listed.returncode == 0, listed.stderr
    assert thread in listed.stdout and "scribe" in listed.stdout

    approved = _cli(spec, db, "--thread", thread, "--approve")
    assert approved[-1]["content"] == "Done."
    assert (spec.parent / "ws" / thread / "note.md").read_text(encoding="utf-8") == "draft"
    assert _status(client, thread) == "idle"

    again = _cli(spec, db, "still there?", "--thread", thread)
    assert again[-1]["content"] == "Still here."
    assert _text(client.threads.get_state(thread)["values"]) == "Still here."

    removed = run_cli("threads", "--db", db, "rm", thread, "--yes", cwd=spec.parent)
    assert removed.returncode == 0, removed.stderr
    assert thread not in {t["thread_id"] for t in client.threads.search(limit=100)}


def test_cli_threads_from_before_the_first_server_are_served(spec: Path, postgres_url: str) -> None:
    """The CLI's threads on a database no server has run on yet (no server tables) are the
    server's once it starts."""
    waiting = _cli(spec, postgres_url, "note")[0]["thread_id"]
    with _serving(spec, postgres_url) as client:
        assert _status(client, waiting) == "interrupted"
        answered = client.runs.wait(
            waiting, "scribe", command={"resume": {"decisions": [{"type": "approve"}]}}
        )
        assert _text(answered) == "Done."
