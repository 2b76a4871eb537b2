"""Remote subagents without an Agent Server: what `inspect` shows of one, a call to a server
that never answers ending at its `remote.timeout`, the remote thread's id, and two approvals of
one call against a scripted server (each answer to its own request, a finished call not run
again). The calls across two real servers are in tests/serve/test_serve_remote.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runner.cli import main
from runner.middleware.remote_subagents import RemoteAgent, RemoteCallError, remote_thread_id
from runner.spec.remote import RemoteAgentServer

PARENT = """\
name: parent
model: replay:parent.cassette.yaml
subagents:
  - name: researcher
    description: Researches a topic
    remote:
      url: http://127.0.0.1:2024/
      assistant: researcher
      api_key: ${REMOTE_TEST_KEY}
      headers: {X-Team: a}
"""


def test_inspect_shows_the_remote_with_its_secrets_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "parent.yaml").write_text(PARENT, encoding="utf-8")
    monkeypatch.setenv("REMOTE_TEST_KEY", "the-secret-key")
    assert main(["inspect", str(tmp_path / "parent.yaml")]) == 0
    out = capsys.readouterr().out
    assert "  researcher: Researches a topic\n" in out
    assert (
        "      remote http://127.0.0.1:2024 assistant 'researcher'  (x-api-key: ***, X-Team: ***)"
        in out
    )
    assert "the-secret-key" not in out


def test_a_server_that_never_answers_ends_the_call_at_its_timeout() -> None:
    import socket

    with socket.socket() as listening:  # takes connections (the backlog) and never answers
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        server = RemoteAgentServer(
            url=f"http://127.0.0.1:{port}", assistant="researcher", timeout=0.3
        )
        runtime = SimpleNamespace(
            config={"configurable": {"thread_id": "t1"}}, tool_call_id="call-1", state={}
        )
        with pytest.raises(RemoteCallError, match=r"could not be reached for 0.3 s"):
            RemoteAgent("researcher", server).call("Look it up.", runtime, "researcher")  # type: ignore[arg-type]


def test_one_remote_thread_per_parent_thread_subagent_and_parallel_place() -> None:
    server = RemoteAgentServer(url="http://127.0.0.1:2024", assistant="researcher")
    first = remote_thread_id("t1", "researcher", server, 0)
    assert first == remote_thread_id("t1", "researcher", server, 0)  # found again after a crash
    others = {
        remote_thread_id("t2", "researcher", server, 0),
        remote_thread_id("t1", "writer", server, 0),
        remote_thread_id("t1", "researcher", server, 1),
    }
    assert first not in others and len(others) == 3


class FakeChild:
    """An Agent Server's thread as `RemoteAgent` sees it, scripted: the first run stops for
    approval X1, its resume for X2, the next resume answers. Records every run started."""

    def __init__(self) -> None:
        self.started: list[dict[str, Any]] = []
        self.answers: list[Any] = []
        self.runs = SimpleNamespace(
            list=self._list, stream=self._stream, join_stream=self._join, cancel=self._cancel
        )
        self.threads = SimpleNamespace(get_state=self._state)

    def _list(self, thread_id: str, *, limit: int) -> list[dict[str, Any]]:
        return list(reversed(self.started))[:limit]  # the newest first, as servers list them

    def _stream(self, thread_id: str, assistant: str, **kwargs: Any) -> Iterator[Any]:
        if "command" in kwargs:
            self.answers.append(kwargs["command"]["resume"])
        number = len(self.started) + 1
        self.started.append(
            {
                "run_id": f"r{number}",
                "status": "success",
                "created_at": f"2026-01-01T00:00:0{number}",
                "config": kwargs["config"],
            }
        )
        yield SimpleNamespace(event="metadata", data={"run_id": f"r{number}"})
        yield SimpleNamespace(
            event="updates",
            data={
                "model": {
                    "messages": [{"type": "ai", "content": f"step {number}", "id": f"m{number}"}]
                }
            },
        )

    def _join(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return iter(())

    def _cancel(self, *args: Any) -> None:
        raise AssertionError("nothing should be cancelled")

    def _state(self, thread_id: str) -> dict[str, Any]:
        waiting = {1: "X1", 2: "X2"}.get(len(self.started))
        interrupts = [
            {"id": waiting, "value": {"action_requests": [{"name": "publish", "args": {}}]}}
        ]
        return {
            "values": {"messages": [{"type": "ai", "content": "the answer"}]},
            "interrupts": interrupts if waiting else [],
        }


def test_two_approvals_in_one_call_each_answer_goes_to_its_own_request() -> None:
    """Each answer the parent gives resumes the request it was given for, also when the call
    is entered again after the first answer (answers are matched by order), and a call that
    finished gives its answer without another run."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import StateGraph
    from langgraph.types import Command
    from typing_extensions import TypedDict

    child = FakeChild()
    server = RemoteAgentServer(url="http://127.0.0.1:1", assistant="child")
    agent = RemoteAgent("child", server, client_factory=lambda **_: child)

    class State(TypedDict):
        answer: str

    def task(state: State, config: RunnableConfig) -> State:
        runtime = SimpleNamespace(config=config, tool_call_id="call-1", state={})
        return {"answer": agent.call("Publish it.", runtime, "child")}  # type: ignore[arg-type]

    graph = StateGraph(State)
    graph.add_node("task", task)
    graph.set_entry_point("task")
    graph.set_finish_point("task")
    app = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "parent-1"}}

    first = app.invoke({"answer": ""}, config)
    (asked,) = first["__interrupt__"]
    assert asked.value["remote"] == {
        "agent": "child",
        "url": "http://127.0.0.1:1",
        "assistant": "child",
        "interrupt_id": "X1",
    }
    second = app.invoke(Command(resume="yes to X1"), config)
    assert second["__interrupt__"][0].value["remote"]["interrupt_id"] == "X2"
    done = app.invoke(Command(resume="yes to X2"), config)
    assert done["answer"] == "the answer"
    assert child.answers == [{"X1": "yes to X1"}, {"X2": "yes to X2"}]
    assert len(child.started) == 3

    # Entered again (the parent crashed before saving the result): the answer, no fourth run.
    runtime = SimpleNamespace(config=config, tool_call_id="call-1", state={})
    assert agent.call("Publish it.", runtime, "child") == "the answer"  # type: ignore[arg-type]
    assert len(child.started) == 3
