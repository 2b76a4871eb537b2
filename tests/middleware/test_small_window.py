"""A local model with a small context window, over a real socket: the summarization request
itself must fit the window (`model.context_window`), or the server refuses it, as llama.cpp and
vLLM refuse a prompt longer than their context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from langgraph.checkpoint.memory import InMemorySaver

import runner
from runner.middleware.summarization import MAX_SUMMARIZER_INPUT_TOKENS, summarizer_input_tokens
from tests.wire import OpenAIServer, Turn, call

WINDOW = 4_000
"""The server's context, in tokens of 4 characters (what it counts: the messages' text)."""
PAGE = "".join(f"{n:03d} " + "x" * 116 + "\n" for n in range(100))
"""A file of 100 lines, 12,000 characters: one read_file page of ~3,000 tokens."""


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIRE_KEY", "sk-wire")


def request_tokens(body: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in body["messages"]) // 4


def small_server() -> OpenAIServer:
    """Reads two pages in parallel, then answers; refuses any request over the window."""

    def reply(body: dict[str, Any]) -> Turn:
        if request_tokens(body) > WINDOW:
            return Turn(status=400, error="the request exceeds the context window")
        first = str(body["messages"][0].get("content") or "")
        if "<conversation>" in first:
            return Turn(text="## Intent\nRead two pages.\n\n## Done and produced\nRead them.")
        if not any(m["role"] == "tool" for m in body["messages"]) and "Summary" not in first:
            read = {"file_path": "/page.txt"}
            return Turn(calls=[call("read_file", read), call("read_file", read)])
        return Turn(text="Both pages read.")

    return OpenAIServer(reply)


def test_the_summarizer_input_is_capped_from_the_window(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "page.txt").write_text(PAGE)
    spec = tmp_path / "agent.yaml"
    with small_server() as server:
        params = {"base_url": server.base_url, "api_key": "${WIRE_KEY}", "max_retries": 0}
        data = {
            "name": "small",
            "prompt": "You read files.",
            "todos": False,
            "general_purpose_agent": False,
            "backend": {"kind": "filesystem", "root_dir": "./ws"},
            "model": {"id": "openai:test-model", "params": params, "context_window": WINDOW},
        }
        spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        agent = runner.build_agent(spec, checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "t"}}
        state = agent.invoke({"messages": [{"role": "user", "content": "read it"}]}, config)
    assert state["messages"][-1].text == "Both pages read."
    summarizer = [b for b in server.requests if "<conversation>" in str(b["messages"][0])]
    assert len(summarizer) == 1
    # the two pages (~6,000 tokens) did not fit: the middle was left out, within the window
    assert "middle of the conversation omitted" in summarizer[0]["messages"][0]["content"]
    assert all(request_tokens(b) <= WINDOW for b in server.requests)


def test_the_cap_follows_the_window() -> None:
    assert summarizer_input_tokens(None) == MAX_SUMMARIZER_INPUT_TOKENS
    assert 9_000 < summarizer_input_tokens(16_384) < 10_000
    assert summarizer_input_tokens(1_000_000) > MAX_SUMMARIZER_INPUT_TOKENS
