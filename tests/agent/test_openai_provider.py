"""The real provider path: langchain-openai against a local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import runner
from tests.conftest import ROOT, run_cli
from tests.fakes import FakeOpenAI, ai

TOOLS = ROOT / "tests" / "data" / "tools" / "sample_tools.py"
REPLIES = [ai("Adding.", ("add", {"a": 20, "b": 22})), ai("It is 42.")]


def spec(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "oai",
                "prompt": "You add numbers.",
                "model": {
                    "id": "openai:test-model",
                    "params": {"base_url": base_url, "api_key": "${FAKE_KEY}"},
                },
                "tools": [f"{TOOLS}:add"],
            }
        ),
        encoding="utf-8",
    )
    return path


def test_build_agent_invoke_through_langchain_openai(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-local")
    with FakeOpenAI(REPLIES) as server:
        agent = runner.build_agent(spec(tmp_path, server.base_url))
        result = agent.invoke({"messages": [{"role": "user", "content": "20+22?"}]})
    assert [m.text for m in result["messages"]][-2:] == ["42", "It is 42."]
    first = server.requests[0]
    headers = {k.lower(): v for k, v in first["headers"].items()}
    assert headers["authorization"] == "Bearer sk-local"
    body = first["body"]
    assert body["model"] == "test-model"
    assert body["messages"][0]["role"] in ("system", "developer")
    assert body["messages"][0]["content"].startswith("You add numbers.")
    assert {t["function"]["name"] for t in body["tools"]} == {
        "add",
        "write_todos",
        "task",
        "ls",
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "grep",
    }
    tool_reply = server.requests[1]["body"]["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["content"] == "42"


def test_cli_streams_through_langchain_openai(tmp_path: Path) -> None:
    with FakeOpenAI(REPLIES) as server:
        done = run_cli(
            "run",
            str(spec(tmp_path, server.base_url)),
            "20+22?",
            "--output",
            "jsonl",
            cwd=tmp_path,
            env={"FAKE_KEY": "sk-local"},
        )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(r["body"].get("stream") for r in server.requests)
    texts = [e["text"] for e in events if e["type"] == "text"]
    assert len(texts) > 2 and "".join(texts).split() == ["Adding.", "It", "is", "42."]
    assert [e["args"] for e in events if e["type"] == "tool_call"] == [{"a": 20, "b": 22}]
    assert events[-1]["type"] == "final" and events[-1]["content"].strip() == "It is 42."
