"""scripts/live (opt-in runs of the examples on a live endpoint): its argument handling, and one
example end to end against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT
from tests.wire import OpenAIServer, Turn, call

LIVE = ROOT / "scripts" / "live"


def live(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCTL_LIVE_")}
    return subprocess.run(
        [sys.executable, str(LIVE), *args],
        env={**full, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_it_needs_the_endpoint_and_known_examples(tmp_path: Path) -> None:
    done = live()
    assert done.returncode == 2
    assert "set AGENTCTL_LIVE_BASE_URL and AGENTCTL_LIVE_MODEL" in done.stdout
    env = {"AGENTCTL_LIVE_BASE_URL": "http://127.0.0.1:9/v1", "AGENTCTL_LIVE_MODEL": "m"}
    unknown = live("--only", "nobody", env=env)
    assert unknown.returncode == 2 and "no example named nobody" in unknown.stdout
    dry = live("--dry-run", "--out", str(tmp_path / "out"), env=env)
    assert dry.returncode == 0, dry.stderr
    assert "12 examples against openai:m at http://127.0.0.1:9/v1" in dry.stdout
    assert "  librarian: 'What did I think of The Dispossessed?' -> librarian.lookup" in dry.stdout
    assert not (tmp_path / "out").exists()


def test_an_example_runs_on_the_endpoint_and_its_cassette_is_recorded(tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> Turn:
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Turn(calls=[call("write_file", {"file_path": "/n.md", "content": "shed"})])
        return Turn(text="Filed.")

    with OpenAIServer(answer) as server:
        env = {"AGENTCTL_LIVE_BASE_URL": server.base_url, "AGENTCTL_LIVE_MODEL": "small"}
        done = live(
            "--only", "notes", "--out", str(tmp_path / "out"), "--max-tokens", "99", env=env
        )
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith("passed  notes ") and "2 model calls, 1 tool calls" in last
    assert all(r["model"] == "small" for r in server.requests)
    assert all(r.get("max_completion_tokens", r.get("max_tokens")) == 99 for r in server.requests)
    cassette = yaml.safe_load((tmp_path / "out" / "notes.cassette.yaml").read_text())
    assert [r["content"] for r in cassette["agents"]["notes"]][-1].strip() == "Filed."
    events = (tmp_path / "out" / "notes.events.jsonl").read_text().splitlines()
    assert json.loads(events[-1])["type"] == "final"


def test_a_failing_example_says_why(tmp_path: Path) -> None:
    crashed = Turn(status=500, error="out of memory", headers={"retry-after-ms": "1"})
    with OpenAIServer(lambda body: crashed) as server:  # the client retries twice
        env = {"AGENTCTL_LIVE_BASE_URL": server.base_url, "AGENTCTL_LIVE_MODEL": "small"}
        done = live("--only", "notes", "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1].startswith(
        f"FAILED  notes              the openai server at {server.base_url} (model 'small') "
        "answered HTTP 500: out of memory"
    )


def test_an_agents_question_is_answered_and_the_run_goes_on(tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> Turn:
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Turn(
                calls=[call("ask_user", {"question": "Where?", "choices": ["Porto", "Oslo"]})]
            )
        return Turn(text="Planned.")

    with OpenAIServer(answer) as server:
        env = {"AGENTCTL_LIVE_BASE_URL": server.base_url, "AGENTCTL_LIVE_MODEL": "small"}
        done = live("--only", "planner", "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("passed  planner ")
    tool = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "Porto" in json.dumps(tool[0])  # the first choice answered the question
    cassette = yaml.safe_load((tmp_path / "out" / "planner.cassette.yaml").read_text())
    replies = cassette["agents"]["planner"]  # both runs' replies: the question, the answer
    assert [r.get("content", "").strip() for r in replies] == ["", "Planned."]
    assert replies[0]["tool_calls"][0]["name"] == "ask_user"
