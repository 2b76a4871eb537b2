"""`agentctl test --model`: cases run live on a model, here a small scripted OpenAI-compatible
server on 127.0.0.1 (kept local to these tests), graded by a live judge, recorded with --record."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.testing.conftest import agentctl

AGENT = """\
version: 1
name: live
model: replay:./never-used.cassette.yaml
prompt: You help.
backend: state
general_purpose_agent: false
"""

TEST = """\
version: 1
agent: ./live.yaml
cases:
  - name: answers live
    input: Write the file, then answer.
    expect:
      final: {contains: live answer}
      files: {/live.md: {contains: written live}}
      tool_calls: [{name: write_file, args: {file_path: /live.md}}]
      limits: {model_calls: 2}
      judge: {rubric: Says it wrote the file, threshold: 0.5}
"""

JUDGE_REPLY = {"reasoning": "It says so. Thus, the score should be: 0.8.", "score": 0.8}


class ScriptedOpenAI:
    """Chat completions: the agent's replies by the number of assistant messages so far; a
    request asking for a JSON schema (the judge) gets JUDGE_REPLY. Streams when asked to."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                message = server.reply(body)
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for chunk in server.chunks(message):
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                payload = json.dumps(
                    {
                        "id": "c1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        if "response_format" in body:
            return {"role": "assistant", "content": json.dumps(JUDGE_REPLY)}
        answered = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if answered == 0:
            args = json.dumps({"file_path": "/live.md", "content": "written live\n"})
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "write_file", "arguments": args},
            }
            return {"role": "assistant", "content": "", "tool_calls": [call]}
        return {"role": "assistant", "content": "I wrote /live.md; that is my live answer."}

    @staticmethod
    def chunks(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        yield chunk({"role": "assistant", "content": message.get("content") or ""})
        for index, call in enumerate(message.get("tool_calls", [])):
            yield chunk({"tool_calls": [{"index": index, **call}]})
        yield chunk({}, "tool_calls" if message.get("tool_calls") else "stop")

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    fake = ScriptedOpenAI()
    yield fake
    fake.close()


def test_live_run_judged_and_recorded_then_replayed(tmp_path: Path, server: ScriptedOpenAI) -> None:
    (tmp_path / "live.yaml").write_text(AGENT)
    (tmp_path / "live.test.yaml").write_text(TEST)
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test-key"}
    done = agentctl(
        "test",
        "--model",
        "openai:agent-model",
        "--judge-model",
        "openai:judge-model",
        "--record",
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cassette = tmp_path / "cassettes" / "live" / "answers-live.yaml"
    assert done.stdout.startswith(
        f"PASS  live.test.yaml::answers live  (recorded {cassette})\n"
        "      judge: score 0.80 (threshold 0.50): It says so. Thus, the score should be: 0.8.\n"
    )
    models = [r["model"] for r in server.requests]
    assert models == ["agent-model", "agent-model", "judge-model"]
    assert server.requests[-1]["response_format"]["type"] == "json_schema"
    assert "Says it wrote the file" in server.requests[-1]["messages"][0]["content"]

    # The recorded cassette replays the case offline (the judge is skipped without a model).
    (tmp_path / "live.test.yaml").write_text(
        TEST.replace(
            "    input:", "    model: replay:./cassettes/live/answers-live.yaml\n    input:"
        )
    )
    server.requests.clear()
    offline = agentctl("test", cwd=tmp_path)
    assert offline.returncode == 0, offline.stdout
    assert offline.stdout.startswith("SKIP  live.test.yaml::answers live  (expect.judge skipped")
    assert server.requests == []


def test_a_failing_live_case(tmp_path: Path, server: ScriptedOpenAI) -> None:
    (tmp_path / "live.yaml").write_text(AGENT)
    (tmp_path / "live.test.yaml").write_text(
        TEST.replace("contains: live answer", "contains: dead answer")
    )
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test-key"}
    done = agentctl("test", "--model", "openai:agent-model", cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert "  x expect.final.contains: the answer does not contain 'dead answer'\n" in done.stdout
