"""What real models and lax servers send, over a real socket, through `agentctl run --output
jsonl` (streamed replies) and `build_agent(...).invoke/ainvoke` (whole replies).

Each case checks the events, the exit code, the files on disk (nothing written from a cut-off
call) and that the thread takes another message, on servers that refuse (HTTP 500 / 400) any
request whose history holds an invalid call, as strict servers do (`tests/wire.py`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

import runner
from tests.wire import AnthropicServer, Call, OpenAIServer, Turn, call, refused_url

CUT = '{"file_path": "/notes.md", "content": "line one\\nline tw'
"""write_file's arguments, cut off by the output limit in the middle of `content`."""


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WIRE_KEY", "sk-wire")
    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path / "home"))


def write_spec(tmp_path: Path, provider: str, base_url: str, **params: Any) -> Path:
    path = tmp_path / "agent.yaml"
    model_params = {"base_url": base_url, "api_key": "${WIRE_KEY}", "max_retries": 0, **params}
    data = {
        "name": "wire",
        "prompt": "You keep notes in files.",
        "todos": False,
        "general_purpose_agent": False,
        "summarization": False,
        "backend": {"kind": "filesystem", "root_dir": "./ws"},
        "model": {"id": f"{provider}:test-model", "params": model_params},
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@dataclass
class Cli:
    code: int
    events: list[dict[str, Any]]
    err: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def thread(self) -> str:
        return str(self.events[0]["thread_id"])


def agentctl(capsys: pytest.CaptureFixture[str], spec: Path, *args: str) -> Cli:
    """`agentctl run SPEC ARGS --output jsonl`, in this process (the same code as the program,
    without its start-up cost)."""
    from runner.cli import main

    capsys.readouterr()
    try:
        code = main(["run", str(spec), *args, "--output", "jsonl"])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return Cli(int(code or 0), [json.loads(line) for line in out.splitlines()], err)


Server = Callable[[list[Turn]], Any]
SERVERS = {"openai": OpenAIServer, "anthropic": AnthropicServer}
LIMIT = {"openai": "length", "anthropic": "max_tokens"}


def talk(agent: Any, *messages: str, mode: str = "invoke") -> list[dict[str, Any]]:
    """Send `messages` one by one on one thread; the state after each. `ainvoke` runs them all
    on one event loop (the provider's async client stays bound to the loop it started on)."""
    config = {"configurable": {"thread_id": "t"}}
    payloads = [{"messages": [{"role": "user", "content": m}]} for m in messages]
    if mode == "ainvoke":

        async def all_of() -> list[dict[str, Any]]:
            return [dict(await agent.ainvoke(p, config)) for p in payloads]

        return asyncio.run(all_of())
    return [dict(agent.invoke(p, config)) for p in payloads]


def results(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def calls(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]


# --------------------------------------------------------------------------- cut off


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_cut_off_call_is_not_run_and_the_model_is_told(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = Turn(text="Writing.", calls=[Call("write_file", CUT, id="w1")], finish=LIMIT[provider])
    turns = [cut, Turn(text="Too long; I stop."), Turn(text="Still here.")]
    with SERVERS[provider](turns) as server:
        spec = write_spec(tmp_path, provider, server.base_url)
        first = agentctl(capsys, spec, "Write the notes")
        again = agentctl(capsys, spec, "--thread", first.thread, "Are you there?")
    assert first.code == 0, first.err
    [warning] = first.of("warning")
    assert warning["code"] == "truncated_reply"
    assert "cut off by its output token limit" in warning["message"]
    assert "warning: the model's reply was cut off" not in first.err  # jsonl: events only
    [tool_call] = first.of("tool_call")
    assert tool_call["name"] == "write_file" and tool_call["id"] == "w1"
    [result] = first.of("tool_result")
    assert result["id"] == "w1" and result["status"] == "error"
    assert "cut off by the output token limit" in result["content"]
    assert "smaller pieces" in result["content"]
    assert not (tmp_path / "ws" / "notes.md").exists()  # nothing half-written
    assert [e["finish_reason"] for e in first.of("model_call")] == [
        LIMIT[provider],
        _stop(provider),
    ]
    assert len(first.of("usage")) == 2
    assert first.events[-1]["type"] == "final" and "Too long" in first.events[-1]["content"]
    assert again.code == 0 and again.events[-1]["content"].strip() == "Still here."
    assert server.rejected == []


def _stop(provider: str) -> str:
    return "stop" if provider == "openai" else "end_turn"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_build_agent_does_not_run_a_cut_off_call(provider: str, mode: str, tmp_path: Path) -> None:
    cut = Turn(calls=[Call("write_file", CUT, id="w1")], finish=LIMIT[provider])
    turns = [cut, Turn(text="Stopping."), Turn(text="Yes.")]
    with SERVERS[provider](turns) as server:
        agent = runner.build_agent(
            write_spec(tmp_path, provider, server.base_url), checkpointer=InMemorySaver()
        )
        state, later = talk(agent, "Write the notes", "Still there?", mode=mode)
    [result] = results(state)
    assert result.status == "error" and "cut off" in str(result.content)
    assert [c["id"] for c in calls(state)] == [result.tool_call_id]
    assert not (tmp_path / "ws" / "notes.md").exists()
    assert state["messages"][-1].text == "Stopping."
    assert later["messages"][-1].text == "Yes."
    assert server.rejected == []


# --------------------------------------------------------------------------- unreadable calls


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_unreadable_calls_are_answered_and_the_loop_goes_on(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = [
        Turn(
            calls=[
                Call("ls", "{path: /}", id="bad1"),
                Call("ls", '["/"]', id="bad2"),
                call("write_file", {"file_path": "/a.md", "content": "A"}, id="good"),
            ]
        ),
        Turn(text="Done."),
        Turn(text="Next."),
    ]
    with SERVERS[provider](turns) as server:
        spec = write_spec(tmp_path, provider, server.base_url)
        first = agentctl(capsys, spec, "go")
        again = agentctl(capsys, spec, "--thread", first.thread, "and now?")
    assert first.code == 0, first.err
    assert {c["id"]: c["args"] for c in first.of("tool_call")} == {
        "bad1": {},
        "bad2": {},
        "good": {"file_path": "/a.md", "content": "A"},
    }
    outcome = {r["id"]: (r["status"], r["content"]) for r in first.of("tool_result")}
    assert outcome["good"][0] == "success"
    assert outcome["bad1"][0] == "error" and "not valid JSON" in outcome["bad1"][1]
    assert "{path: /}" in outcome["bad1"][1]
    assert outcome["bad2"][0] == "error" and "array in JSON, not an object" in outcome["bad2"][1]
    assert (tmp_path / "ws" / "a.md").read_text() == "A"
    assert first.events[-1]["content"].strip() == "Done."
    assert again.code == 0 and again.events[-1]["content"].strip() == "Next."
    assert server.rejected == []


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_build_agent_answers_unreadable_calls(mode: str, tmp_path: Path) -> None:
    """Whole (not streamed) replies: JSON that is not an object used to raise in
    langchain-openai, text that is not JSON to end the run as if it were an answer."""
    turns = [
        Turn(calls=[Call("ls", '["/"]', id="a1"), Call("ls", "{path: /}", id="a2")]),
        Turn(text="Listed."),
        Turn(text="Again."),
    ]
    with OpenAIServer(turns) as server:
        agent = runner.build_agent(
            write_spec(tmp_path, "openai", server.base_url), checkpointer=InMemorySaver()
        )
        state, later = talk(agent, "list", "again", mode=mode)
    assert [(r.tool_call_id, r.status) for r in results(state)] == [
        ("a1", "error"),
        ("a2", "error"),
    ]
    assert [c["args"] for c in calls(state)] == [{}, {}]
    assert state["messages"][-1].text == "Listed."
    assert later["messages"][-1].text == "Again."
    assert server.rejected == []


# --------------------------------------------------------------------------- ids


def test_repeated_and_empty_ids_are_made_unique(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write = "write_file"
    turns = [
        Turn(
            calls=[
                call(write, {"file_path": "/a.md", "content": "A"}, id="call_1"),
                call(write, {"file_path": "/b.md", "content": "B"}, id="call_1"),
            ]
        ),
        Turn(calls=[call(write, {"file_path": "/c.md", "content": "C"}, id="call_1")]),
        Turn(
            calls=[
                call(write, {"file_path": "/d.md", "content": "D"}, id=""),
                call(write, {"file_path": "/e.md", "content": "E"}, id=""),
            ]
        ),
        Turn(text="Five files."),
    ]
    with OpenAIServer(turns) as server:
        spec = write_spec(tmp_path, "openai", server.base_url)
        done = agentctl(capsys, spec, "write five")
    assert done.code == 0, done.err
    ids = [c["id"] for c in done.of("tool_call")]
    assert len(ids) == 5 and len(set(ids)) == 5 and all(ids)
    assert ids[0] == "call_1"  # the first keeps its id
    assert sorted(r["id"] for r in done.of("tool_result")) == sorted(ids)
    assert {r["status"] for r in done.of("tool_result")} == {"success"}
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == [f"{c}.md" for c in "abcde"]
    assert server.rejected == []


def test_build_agent_gives_repeated_ids_their_own_results(tmp_path: Path) -> None:
    turns = [
        Turn(calls=[call("ls", {"path": "/"}, id="x"), call("ls", {"path": "/"}, id="x")]),
        Turn(text="ok"),
    ]
    with AnthropicServer(turns) as server:
        agent = runner.build_agent(
            write_spec(tmp_path, "anthropic", server.base_url), checkpointer=InMemorySaver()
        )
        [state] = talk(agent, "list twice")
    ids = [c["id"] for c in calls(state)]
    assert len(set(ids)) == 2 and sorted(r.tool_call_id for r in results(state)) == sorted(ids)
    assert server.rejected == []


# --------------------------------------------------------------------------- empty replies


@pytest.mark.parametrize(
    ("provider", "text"), [("openai", ""), ("openai", None), ("anthropic", "")]
)
def test_an_empty_reply_is_reported_and_the_thread_goes_on(
    provider: str, text: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SERVERS[provider]([Turn(text=text), Turn(text="Hello again.")]) as server:
        spec = write_spec(tmp_path, provider, server.base_url)
        first = agentctl(capsys, spec, "hi")
        again = agentctl(capsys, spec, "--thread", first.thread, "hello?")
    assert first.code == 0
    [warning] = first.of("warning")
    assert warning["code"] == "empty_reply" and "empty reply" in warning["message"]
    assert first.events[-1] == {
        "type": "final",
        "agent": "wire",
        "thread_id": first.thread,
        "content": "",
    }
    assert again.code == 0 and again.events[-1]["content"].strip() == "Hello again."
    assert server.rejected == []  # Anthropic refuses an empty assistant message


def test_an_empty_reply_shows_a_line_in_text_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from runner.cli import main

    with OpenAIServer([Turn(text=None)]) as server:
        spec = write_spec(tmp_path, "openai", server.base_url)
        capsys.readouterr()
        code = main(["run", str(spec), "hi"])
    err = capsys.readouterr().err
    assert code == 0
    assert "warning: the model returned an empty reply" in err
    assert "model calls: 1  tokens: 11 in / 7 out" in err


# --------------------------------------------------------------------------- HTTP and network


def test_rate_limited_then_answered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The provider's client retries a 429 (`max_retries`, honouring `retry-after`)."""
    slow = Turn(status=429, error="slow down", headers={"retry-after-ms": "1"})
    with OpenAIServer([slow, Turn(text="Fine.")]) as server:
        spec = write_spec(tmp_path, "openai", server.base_url, max_retries=2)
        done = agentctl(capsys, spec, "hi")
    assert done.code == 0, done.err
    assert done.events[-1]["content"].strip() == "Fine."
    assert len(server.requests) == 2


def test_rate_limited_then_answered_through_retries_model(tmp_path: Path) -> None:
    """`retries.model` retries what the client gave up on (here it does not retry at all)."""
    slow = Turn(status=429, error="slow down")
    with AnthropicServer([slow, slow, Turn(text="Fine.")]) as server:
        spec = write_spec(tmp_path, "anthropic", server.base_url)
        data = yaml.safe_load(spec.read_text())
        data["retries"] = {"model": {"max_retries": 2, "initial_delay": 0.01}}
        spec.write_text(yaml.safe_dump(data))
        [state] = talk(runner.build_agent(spec), "hi", mode="ainvoke")
    assert state["messages"][-1].text == "Fine."
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_server_error_names_the_server_and_the_thread_goes_on(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SERVERS[provider]([Turn(status=500, error="model crashed"), Turn(text="Back.")]) as server:
        spec = write_spec(tmp_path, provider, server.base_url)
        failed = agentctl(capsys, spec, "hi")
        again = agentctl(capsys, spec, "--thread", failed.thread, "try again")
    assert failed.code == 1
    [error] = failed.of("error")
    assert error["message"] == (
        f"the {provider} server at {server.base_url} (model 'test-model') answered HTTP 500: "
        "model crashed"
    )
    assert again.code == 0 and again.events[-1]["content"].strip() == "Back."


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_unreachable_server_is_named_and_the_thread_goes_on_when_it_is_back(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    down = refused_url() + ("/v1" if provider == "openai" else "")
    spec = write_spec(tmp_path, provider, down)
    failed = agentctl(capsys, spec, "hi")
    assert failed.code == 1
    [error] = failed.of("error")
    assert error["message"].startswith(f"cannot reach the {provider} server at {down} ")
    assert "Connection refused" in error["message"] and "`base_url`" in error["message"]
    with SERVERS[provider]([Turn(text="Up again.")]) as server:
        write_spec(tmp_path, provider, server.base_url)
        again = agentctl(capsys, spec, "--thread", failed.thread, "hi")
    assert again.code == 0 and again.events[-1]["content"].strip() == "Up again."


def test_build_agent_raises_the_providers_error_and_the_thread_goes_on(tmp_path: Path) -> None:
    import openai

    with OpenAIServer([Turn(status=500, error="model crashed"), Turn(text="Back.")]) as server:
        agent = runner.build_agent(
            write_spec(tmp_path, "openai", server.base_url), checkpointer=InMemorySaver()
        )
        with pytest.raises(openai.InternalServerError):
            talk(agent, "hi")
        [later] = talk(agent, "again")
    assert later["messages"][-1].text == "Back."


# --------------------------------------------------------------------------- poisoned threads


def test_a_thread_holding_an_invalid_call_resumes(tmp_path: Path) -> None:
    """A thread saved before replies were checked holds the invalid call as the model sent it;
    the next request carries it as a readable call with an error result."""
    poisoned = AIMessage(
        content="",
        id="old",
        invalid_tool_calls=[
            {"type": "invalid_tool_call", "name": "ls", "args": "{path", "id": "v1", "error": None}
        ],
    )
    with OpenAIServer([Turn(text="Recovered.")]) as server:
        agent = runner.build_agent(
            write_spec(tmp_path, "openai", server.base_url), checkpointer=InMemorySaver()
        )
        config = {"configurable": {"thread_id": "t"}}
        agent.update_state(
            config, {"messages": [{"role": "user", "content": "list"}, poisoned]}, as_node="model"
        )
        [state] = talk(agent, "hello?")
    assert state["messages"][-1].text == "Recovered."
    assert server.rejected == []
    sent = server.requests[0]["messages"]
    [assistant] = [m for m in sent if m["role"] == "assistant"]
    assert assistant["tool_calls"][0]["function"] == {"name": "ls", "arguments": "{}"}
    [answer] = [m for m in sent if m["role"] == "tool"]
    assert answer["tool_call_id"] == "v1" and "could not be" in answer["content"]


def test_a_poisoned_thread_resumes_through_the_cli_without_replaying_its_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from runner.run import Session

    poisoned = AIMessage(
        content="Listing.",
        id="old",
        invalid_tool_calls=[
            {"type": "invalid_tool_call", "name": "ls", "args": "[1]", "id": "v1", "error": None}
        ],
    )
    with OpenAIServer([Turn(text="First."), Turn(text="Recovered.")]) as server:
        spec = write_spec(tmp_path, "openai", server.base_url)
        first = agentctl(capsys, spec, "hi")
        with Session(spec) as session:
            session.graph.update_state(
                {"configurable": {"thread_id": first.thread}},
                {"messages": [{"role": "user", "content": "list"}, poisoned]},
                as_node="model",
            )
        again = agentctl(capsys, spec, "--thread", first.thread, "hello?")
    assert again.code == 0, again.err
    assert "".join(e["text"] for e in again.of("text")).strip() == "Recovered."
    assert len(again.of("model_call")) == 1 and len(again.of("usage")) == 1
    assert server.rejected == []


# --------------------------------------------------------------------------- calls as text

WRITTEN_OUT = {
    "tool_call": '<tool_call>\n{"name": "write_file", "arguments": {"file_path": "/a.md", '
    '"content": "A"}}\n</tool_call>',
    "tools": '<tools>{"name": "write_file", "arguments": "{\\"file_path\\": \\"/a.md\\", '
    '\\"content\\": \\"A\\"}"}</tools>',
    "fenced": '```json\n{"name": "write_file", "parameters": {"file_path": "/a.md", '
    '"content": "A"}}\n```',
}


@pytest.mark.parametrize("form", sorted(WRITTEN_OUT))
def test_a_call_written_as_text_is_run_when_the_model_says_so(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = [Turn(text=WRITTEN_OUT[form]), Turn(text="Done.")]
    with OpenAIServer(turns) as server:
        spec = write_spec(tmp_path, "openai", server.base_url)
        data = yaml.safe_load(spec.read_text())
        data["model"]["parse_text_tool_calls"] = True
        spec.write_text(yaml.safe_dump(data))
        done = agentctl(capsys, spec, "write a")
    assert done.code == 0, done.err
    [warning] = done.of("warning")
    assert (
        warning["code"] == "text_tool_call" and "it was read as a tool call" in warning["message"]
    )
    [tool_call] = done.of("tool_call")
    assert tool_call["name"] == "write_file"
    assert tool_call["args"] == {"file_path": "/a.md", "content": "A"}
    assert (tmp_path / "ws" / "a.md").read_text() == "A"
    assert done.events[-1]["content"].strip() == "Done."
    assert server.rejected == []


def test_a_call_written_as_text_is_checked_like_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A parsed text call goes through the same checks as a real one: a value the thread cannot
    store (an integer outside 64 bits) is an error the model reads, not the end of the run."""
    hostile = '<tool_call>{"name": "write_file", "arguments": {"file_path": "/a.md", "content": 18446744073709551616}}</tool_call>'
    turns = [Turn(text=hostile), Turn(text="Done.")]
    with OpenAIServer(turns) as server:
        spec = write_spec(tmp_path, "openai", server.base_url)
        data = yaml.safe_load(spec.read_text())
        data["model"]["parse_text_tool_calls"] = True
        spec.write_text(yaml.safe_dump(data))
        done = agentctl(capsys, spec, "write a")
    assert done.code == 0, done.err
    assert not (tmp_path / "ws" / "a.md").exists()
    assert done.events[-1]["content"].strip() == "Done."


def test_a_call_written_as_text_is_reported_when_not_parsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from runner.cli import main

    with OpenAIServer([Turn(text=WRITTEN_OUT["tool_call"])] * 2) as server:
        spec = write_spec(tmp_path, "openai", server.base_url)
        done = agentctl(capsys, spec, "write a")
        capsys.readouterr()
        code = main(["run", str(spec), "write a"])
        terminal = capsys.readouterr()
    assert done.code == 0, done.err
    [warning] = done.of("warning")
    assert warning["code"] == "text_tool_call"
    assert "set `model: {parse_text_tool_calls: true}`" in warning["message"]
    assert done.of("tool_call") == [] and not (tmp_path / "ws" / "a.md").exists()
    assert code == 0
    assert "the model wrote a call to `write_file` as text" in terminal.err


def test_only_a_reply_that_is_nothing_but_calls_counts() -> None:
    from runner.middleware.replies import text_tool_calls

    tools = {"write_file", "ls"}
    two = '<tool_call>{"name": "ls", "arguments": {"path": "/"}}</tool_call>\n' * 2
    assert [c["name"] for c in text_tool_calls(two, tools)] == ["ls", "ls"]
    assert text_tool_calls('{"name": "ls", "arguments": {"path": "/"}}', tools)[0]["args"] == {
        "path": "/"
    }
    prose = 'To list files, call:\n```json\n{"name": "ls", "arguments": {"path": "/"}}\n```'
    assert text_tool_calls(prose, tools) == []
    assert text_tool_calls('{"name": "rm", "arguments": {}}', tools) == []
    assert text_tool_calls('{"name": "ls", "arguments": [1]}', tools) == []
    assert text_tool_calls("Done.", tools) == []
