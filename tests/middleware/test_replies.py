"""The reply check (`runner.middleware.replies`) with a scripted model: history repair,
approvals that skip calls already answered, warnings from subagents. The wire-level cases
(real clients, real sockets) are in tests/run/test_misbehaving_models.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from runner.events import Interrupt, RunWarning, ToolCall, ToolResult
from runner.middleware.replies import (
    EMPTY_REPLY_PLACEHOLDER,
    finish_reason,
    repaired_history,
    truncated,
)
from runner.run import Session
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import spec_file


def invalid(call_id: str | None, args: str = "{oops") -> dict[str, Any]:
    return {"type": "invalid_tool_call", "name": "ls", "args": args, "id": call_id, "error": None}


def test_a_clean_history_is_left_alone() -> None:
    history = [
        HumanMessage("hi"),
        AIMessage("", id="a", tool_calls=[{"name": "ls", "args": {}, "id": "c"}]),
        ToolMessage("/", tool_call_id="c"),
        AIMessage("done", id="b"),
    ]
    assert repaired_history(history) is None


def test_invalid_calls_become_readable_and_answered_after_the_results_they_have() -> None:
    ai = AIMessage(
        "",
        id="a",
        tool_calls=[{"name": "ls", "args": {"path": "/"}, "id": "ok"}],
        invalid_tool_calls=[invalid("bad"), invalid(None, "[1]")],
    )
    history = [HumanMessage("hi"), ai, ToolMessage("/", tool_call_id="ok"), HumanMessage("go")]
    repaired = repaired_history(history)
    assert repaired is not None
    assert [m.type for m in repaired] == ["human", "ai", "tool", "tool", "tool", "human"]
    fixed = repaired[1]
    assert isinstance(fixed, AIMessage) and fixed.invalid_tool_calls == []
    assert [(c["id"], c["args"]) for c in fixed.tool_calls][:2] == [
        ("ok", {"path": "/"}),
        ("bad", {}),
    ]
    generated = fixed.tool_calls[2]["id"]
    assert generated and generated == repaired_history(history)[1].tool_calls[2]["id"]  # type: ignore[index,union-attr]
    answers = {m.tool_call_id: m for m in repaired if isinstance(m, ToolMessage)}
    assert answers["bad"].status == "error" and "{oops" in str(answers["bad"].content)
    assert "array in JSON" in str(answers[generated].content)
    assert history[1] is ai and ai.invalid_tool_calls  # the thread's own messages are unchanged


def test_an_answer_langchain_added_is_kept_and_not_doubled() -> None:
    ai = AIMessage("", id="a", invalid_tool_calls=[invalid("bad")])
    theirs = ToolMessage("malformed", tool_call_id="bad", status="error")
    repaired = repaired_history([HumanMessage("hi"), ai, theirs])
    assert repaired is not None and repaired[2] is theirs and len(repaired) == 3


def test_an_empty_ai_message_gets_a_placeholder() -> None:
    repaired = repaired_history([HumanMessage("hi"), AIMessage("", id="e"), HumanMessage("?")])
    assert repaired is not None and repaired[1].content == EMPTY_REPLY_PLACEHOLDER


def test_stop_reasons_of_each_provider() -> None:
    def said(**meta: str) -> AIMessage:
        return AIMessage("", response_metadata=meta)

    assert truncated(said(finish_reason="length")) and truncated(said(stop_reason="max_tokens"))
    assert truncated(said(done_reason="length")) and not truncated(said(finish_reason="stop"))
    assert finish_reason(said(stop_reason="end_turn")) == "end_turn"
    assert finish_reason(AIMessage("")) is None


def cut_off(*calls: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=list(calls), response_metadata={"finish_reason": "length"})


def test_an_approval_is_not_asked_for_a_call_that_will_not_run(tmp_path: Path) -> None:
    write = {"name": "write_file", "args": {"file_path": "/a.md", "content": "ha"}, "id": "w"}
    model = ScriptedChatModel(script=[cut_off(write), {"content": "Stopped."}])
    spec = spec_file(
        tmp_path,
        interrupt_on={"write_file": True},
        backend={"kind": "filesystem", "root_dir": "./ws"},
    )
    with Session(spec, model=model, db=tmp_path / "db") as session:
        events = list(session.stream("write"))
    assert not any(isinstance(e, Interrupt) for e in events)
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert (result.id, result.status) == ("w", "error")
    assert [e.code for e in events if isinstance(e, RunWarning)] == ["truncated_reply"]
    assert not (tmp_path / "ws" / "a.md").exists()


def test_a_subagents_cut_off_reply_is_reported_under_its_task_call(tmp_path: Path) -> None:
    def script(messages: list[Any]) -> Any:
        if next(m for m in messages if m.type == "human").content == "go":  # the main agent
            if any(m.type == "tool" for m in messages):
                return {"content": "Done."}
            task = {"description": "write a poem", "subagent_type": "poet"}
            return {"content": "", "tool_calls": [{"name": "task", "args": task, "id": "k"}]}
        return AIMessage("Roses are", response_metadata={"finish_reason": "length"})

    spec = spec_file(
        tmp_path,
        subagents=[{"name": "poet", "description": "Writes poems", "prompt": "Poems."}],
    )
    with Session(spec, model=ScriptedChatModel(script=script), db=tmp_path / "db") as session:
        events = list(session.stream("go"))
    [warning] = [e for e in events if isinstance(e, RunWarning)]
    assert (warning.agent, warning.parent_id, warning.code) == ("poet", "k", "truncated_reply")
    assert "the answer may be incomplete" in warning.message
    assert [e.name for e in events if isinstance(e, ToolCall)] == ["task"]


def test_ids_are_checked_against_the_whole_history_read_once() -> None:
    from types import SimpleNamespace

    from langchain.agents.middleware import ModelRequest, ModelResponse

    from runner.middleware.replies import ReplyCheckMiddleware

    check = ReplyCheckMiddleware()

    def reply_to(history: list[Any], call_id: str) -> str:
        request = ModelRequest(
            model=None,  # type: ignore[arg-type]
            messages=history,
            system_message=None,
            tool_choice=None,
            tools=[],
            response_format=None,
            state={},  # type: ignore[arg-type]
            runtime=SimpleNamespace(stream_writer=None),  # type: ignore[arg-type]
        )
        answer = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": call_id}])
        result = check.wrap_model_call(request, lambda r: ModelResponse(result=[answer]))
        return str(result.result[0].tool_calls[0]["id"])

    history: list[Any] = [HumanMessage("go")]
    assert reply_to(history, "c1") == "c1"
    history += [
        AIMessage("", id="a1", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
        ToolMessage("/", tool_call_id="c1"),
    ]
    assert reply_to(history, "c2") == "c2"  # only the two new messages were read
    history += [
        AIMessage("", id="a2", tool_calls=[{"name": "ls", "args": {}, "id": "c2"}]),
        ToolMessage("/", tool_call_id="c2"),
    ]
    assert reply_to(history, "c1") not in ("c1", "c2")  # c1 is taken further back
    summarized = [history[0], HumanMessage("summary"), *history[3:]]  # another list: read again
    assert reply_to(summarized, "c1") == "c1"
    assert reply_to(summarized, "c2") != "c2"
