"""Model options and limits end to end: `params`, `fallbacks`, `limits.*`, `retries.*`,
per-tool overrides, and `response_format`, through sessions and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from runner.events import Error, ToolResult
from runner.run import Session
from tests.conftest import ROOT, run_cli
from tests.fakes import FakeOpenAI, ScriptedChatModel, ai

TOOLS = ROOT / "tests" / "data" / "tools" / "sample_tools.py"


def write_spec(tmp_path: Path, data: dict[str, Any], replies: list[Any] | None = None) -> Path:
    """agent.yaml in tmp_path (and its cassette `agent.cassette.yaml` when `replies` are given)."""
    if replies is not None:
        (tmp_path / "agent.cassette.yaml").write_text(yaml.safe_dump(replies), encoding="utf-8")
        data = {"model": "replay:agent.cassette.yaml", **data}
    path = tmp_path / "agent.yaml"
    path.write_text(
        yaml.safe_dump({"name": "opts", "todos": False, **data}, sort_keys=False), encoding="utf-8"
    )
    return path


def add_call(a: int = 1, b: int = 1) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "add", "args": {"a": a, "b": b}}]}


def run(path: Path, tmp_path: Path, **options: Any) -> Any:
    with Session(path, db=tmp_path / "db.sqlite", **options) as session:
        return session.run("go")


# --------------------------------------------------------------------------- the provider


def test_params_and_tool_overrides_reach_the_provider(tmp_path: Path) -> None:
    with FakeOpenAI([ai("Shouting.", ("yell", {"text": "hi"})), ai("unused")]) as server:
        path = write_spec(
            tmp_path,
            {
                "model": {
                    "id": "openai:test-model",
                    "params": {
                        "base_url": server.base_url,
                        "api_key": "sk-local",
                        "temperature": 0.3,
                        "max_tokens": 77,
                    },
                },
                "tools": [
                    {
                        "import": f"{TOOLS}:shout",
                        "name": "yell",
                        "description": "Say it loudly.",
                        "return_direct": True,
                    }
                ],
            },
        )
        result = run(path, tmp_path)
    [request] = [r["body"] for r in server.requests]  # return_direct: no second model call
    assert request["temperature"] == 0.3
    assert request.get("max_completion_tokens", request.get("max_tokens")) == 77
    [tool] = [t for t in request["tools"] if t["function"]["name"] == "yell"]
    assert (tool["function"]["name"], tool["function"]["description"]) == (
        "yell",
        "Say it loudly.",
    )
    assert result.content == "HI"


def test_a_fallback_model_answers_when_the_first_fails(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if body["model"] == "broken-model":
            return {"status": 500, "content": "the model is down"}
        return ai("From the fallback.")

    with FakeOpenAI(reply) as server:
        params = {"base_url": server.base_url, "api_key": "sk-local", "max_retries": 0}
        path = write_spec(
            tmp_path,
            {
                "model": {
                    "id": "openai:broken-model",
                    "params": params,
                    "fallbacks": [{"id": "openai:good-model", "params": params}],
                }
            },
        )
        result = run(path, tmp_path)
    assert [r["body"]["model"] for r in server.requests] == ["broken-model", "good-model"]
    assert result.error is None and result.content.strip() == "From the fallback."


# --------------------------------------------------------------------------- limits


def test_a_model_call_limit_stops_a_loop_with_a_clear_message(tmp_path: Path) -> None:
    path = write_spec(
        tmp_path,
        {"tools": [f"{TOOLS}:add"], "limits": {"model_calls": 2}},
        [add_call(), add_call(), add_call(), {"content": "never reached"}],
    )
    done = run_cli("run", str(path), "loop", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "error: the run stopped at its limit of 2 model calls; raise `limits.model_calls` "
        "(agent.yaml:7:16) if the agent needs more"
    )
    with Session(path, db=tmp_path / "db.sqlite") as session:
        result = session.run("loop")
        assert result.error is not None and result.error.kind == "ModelCallLimit"
        history = session.values(result.thread_id)["messages"]
    assert [m.type for m in history] == ["human", "ai", "tool", "ai", "tool"]


def test_a_tool_call_limit_tells_the_model_and_the_run_goes_on(tmp_path: Path) -> None:
    path = write_spec(
        tmp_path,
        {"tools": [f"{TOOLS}:add"], "limits": {"tool_calls": 1}},
        [add_call(2, 3), add_call(4, 5), {"content": "Stopped adding."}],
    )
    result = run(path, tmp_path)
    results = [(e.content, e.status) for e in result.events if isinstance(e, ToolResult)]
    assert results == [
        ("5", "success"),
        ("Tool call limit exceeded. Do not make additional tool calls.", "error"),
    ]
    assert result.error is None and result.content == "Stopped adding."


def test_the_recursion_limit_names_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_spec(
        tmp_path,
        {"tools": [f"{TOOLS}:add"], "limits": {"recursion": 4}},
        [add_call()] * 5,
    )
    result = run(path, tmp_path)
    assert isinstance(result.events[-1], Error)
    assert result.events[-1].message == (
        "the agent took more than 4 steps in one run; raise `limits.recursion` "
        "(agent.yaml:7:14) if it needs more"
    )


# --------------------------------------------------------------------------- retries


class FlakyChatModel(ScriptedChatModel):
    """Raises a connection error on its first `failures` calls, then follows its script."""

    failures: int = 1
    attempts: int = 0

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise ConnectionError("connection reset by peer")
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])


@pytest.mark.parametrize("retries", [None, {"model": {"max_retries": 2, "initial_delay": 0}}])
def test_model_retries_survive_a_transient_failure(
    tmp_path: Path, retries: dict[str, Any] | None
) -> None:
    path = write_spec(tmp_path, {"retries": retries} if retries else {})
    model = FlakyChatModel(script=[ai("Recovered.")])
    result = run(path, tmp_path, model=model)
    if retries is None:
        assert result.error is not None and "connection reset by peer" in result.error.message
    else:
        assert (result.error, result.content, model.attempts) == (None, "Recovered.", 2)


FLAKY_TOOL = '''
"""A tool next to the spec that fails on its first call."""

calls = []


def fetch(url: str) -> str:
    """Fetch a page."""
    calls.append(url)
    if len(calls) == 1:
        raise TimeoutError("the site did not answer")
    return f"page at {url}"
'''


@pytest.mark.parametrize("retries", [None, {"tools": {"max_retries": 1, "initial_delay": 0}}])
def test_tool_retries_survive_a_transient_failure(
    tmp_path: Path, retries: dict[str, Any] | None
) -> None:
    # A unique file name per case: the module of a file ref is cached per path.
    (tmp_path / "flaky_tools.py").write_text(FLAKY_TOOL, encoding="utf-8")
    path = write_spec(
        tmp_path,
        {"tools": ["./flaky_tools.py:fetch"], **({"retries": retries} if retries else {})},
    )
    model = ScriptedChatModel(script=[ai("", ("fetch", {"url": "x.org"})), ai("Fetched.")])
    result = run(path, tmp_path, model=model)
    if retries is None:
        assert result.error is not None and "the site did not answer" in result.error.message
    else:
        assert [e.content for e in result.events if isinstance(e, ToolResult)] == ["page at x.org"]
        assert result.content == "Fetched."


# --------------------------------------------------------------------------- response_format

REPORT_SCHEMA = {
    "type": "object",
    "title": "Report",
    "description": "The final report.",
    "properties": {"verdict": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["verdict", "score"],
}


@pytest.fixture
def reporter(tmp_path: Path) -> Path:
    return write_spec(
        tmp_path,
        {"response_format": REPORT_SCHEMA},
        [
            {
                "content": "",
                "tool_calls": [{"name": "Report", "args": {"verdict": "good", "score": 8}}],
            }
        ],
    )


def test_structured_output_prints_as_json(reporter: Path, tmp_path: Path) -> None:
    done = run_cli("run", str(reporter), "rate it", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = done.stdout[done.stdout.index("\n{") :]  # after the lines of the tool call
    assert json.loads(printed) == {"verdict": "good", "score": 8}
    quiet = run_cli("run", str(reporter), "rate it", "--quiet", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout) == {"verdict": "good", "score": 8}


def test_structured_output_is_in_the_final_event(reporter: Path, tmp_path: Path) -> None:
    done = run_cli("run", str(reporter), "rate it", "--output", "jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["type"] == "final"
    assert final["structured_response"] == {"verdict": "good", "score": 8}


def test_flaky_model_is_a_real_chat_model() -> None:
    """The retry test's double fails the way a provider does: by raising from `invoke`."""
    model = FlakyChatModel(script=[ai("ok")])
    with pytest.raises(ConnectionError):
        model.invoke("hi")
    assert isinstance(model.invoke("hi"), AIMessage)
