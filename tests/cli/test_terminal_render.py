"""The terminal renderer and the approval helpers, fed events directly (no process, no pty)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from runner.cli.approvals import (
    _without_call,
    args_to_yaml,
    decision_choices,
    parse_edited_args,
    read_choice,
)
from runner.cli.render import result_summary
from runner.cli.terminal import TerminalRenderer
from runner.events import (
    Action,
    Error,
    Final,
    ModelCall,
    RunWarning,
    Start,
    TextDelta,
    TodosUpdate,
    ToolCall,
    ToolResult,
    Usage,
)

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def render(*events: object, width: int = 100) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=width, color_system="standard")
    renderer = TerminalRenderer(console, spinners=False)
    for event in events:
        renderer.handle(event)  # type: ignore[arg-type]
    renderer.pause()
    return ANSI.sub("", out.getvalue())


def lines_of(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\r", "").splitlines() if line.strip()]


def test_a_turn_streams_text_nests_subagent_work_and_ends_with_usage() -> None:
    todos = [
        {"content": "Draft", "status": "in_progress"},
        {"content": "Ship", "status": "pending"},
    ]
    shown = render(
        Start(agent="main", thread_id="20260101-000000-abcdef"),
        TextDelta(agent="main", text="Let me "),
        TextDelta(agent="main", text="plan."),
        ToolCall(agent="main", name="write_todos", args={"todos": todos}, id="t1"),
        ToolResult(agent="main", name="write_todos", id="t1", content="Updated todo list"),
        TodosUpdate(agent="main", todos=todos),
        TodosUpdate(agent="main", todos=todos),  # unchanged: not shown again
        ToolCall(
            agent="main",
            name="task",
            args={"subagent_type": "critic", "description": "Review /a.md"},
            id="k1",
        ),
        TextDelta(agent="critic", parent_id="k1", text="Reading."),  # in the spinner only
        ToolCall(
            agent="critic", parent_id="k1", name="read_file", args={"file_path": "/a.md"}, id="r1"
        ),
        ToolResult(
            agent="critic",
            parent_id="k1",
            name="read_file",
            id="r1",
            content="     1\t# A\n     2\ttext",
        ),
        ToolResult(agent="main", name="task", id="k1", content="Two problems.\n1. x\n2. y"),
        ModelCall(agent="main", model="m", finish_reason="tool_calls"),
        Usage(agent="main", input_tokens=12000, output_tokens=30, total_tokens=12030),
        ModelCall(agent="critic", parent_id="k1"),
        Usage(agent="critic", parent_id="k1", input_tokens=100, output_tokens=5, total_tokens=105),
        TextDelta(agent="main", text="Done."),
        Final(agent="main", thread_id="20260101-000000-abcdef", content="Done."),
    )
    lines = lines_of(shown)
    assert lines[:10] == [
        "thread 20260101-000000-abcdef",
        "Let me plan.",
        "● write_todos",
        "  ▶ Draft",
        "  ☐ Ship",
        "● task → critic Review /a.md",
        "│ ● read_file(file_path='/a.md')",
        "│   ⎿ # A  (+1 lines, 22 chars)",
        "  ⎿ task → critic: Two problems.  (+2 lines, 23 chars)",
        "Done.",
    ]
    assert re.fullmatch(
        r"✓ done in [\d.]+s · 2 model calls · tokens 12\.1k in / 35 out · thread 20260101-000000-abcdef",
        lines[10],
    )
    assert "Reading." not in "\n".join(lines)
    assert len(lines) == 11


def test_subagents_working_at_once_are_named_on_their_lines() -> None:
    def task(call_id: str, who: str) -> ToolCall:
        return ToolCall(
            agent="lead", name="task", args={"subagent_type": who, "description": "go"}, id=call_id
        )

    lines = lines_of(
        render(
            Start(agent="lead", thread_id="t"),
            task("k1", "adder"),
            task("k2", "quiet"),
            ToolCall(agent="adder", parent_id="k1", name="add", args={"a": 2}, id="a1"),
            ToolResult(agent="quiet", parent_id=None, name="task", id="k2", content="hello"),
            ToolResult(agent="adder", parent_id="k1", name="add", id="a1", content="5"),
            ToolResult(agent="lead", name="task", id="k1", content="The sum is 5."),
        )
    )
    assert lines[1:] == [
        "● task → adder go",
        "● task → quiet go",
        "│ adder ● add(a=2)",
        "  ⎿ task → quiet: hello",
        "│ adder   ⎿ add: 5",
        "  ⎿ task → adder: The sum is 5.",
    ]


def test_errors_and_failed_results_are_marked() -> None:
    lines = lines_of(
        render(
            Start(agent="a", thread_id="t"),
            ToolCall(agent="a", name="edit_file", args={"file_path": "/x"}, id="e1"),
            ToolResult(
                agent="a", name="edit_file", id="e1", content="Error: not found", status="error"
            ),
            Error(agent="a", message="replay cassette ran out", thread_id="t"),
        )
    )
    assert lines[1:3] == ["● edit_file(file_path='/x')", "  ⎿ ✗ Error: not found"]
    assert lines[3] == "✗ error: replay cassette ran out"
    assert lines[4].startswith("✗ failed in ")


def test_warnings_get_their_own_line_and_the_turn_goes_on() -> None:
    lines = lines_of(
        render(
            Start(agent="a", thread_id="t"),
            RunWarning(agent="a", code="empty_reply", message="the model sent an empty reply"),
            Final(agent="a", thread_id="t", content=""),
        )
    )
    assert "! warning: the model sent an empty reply" in lines
    assert not any(line.startswith("✗") for line in lines)


def test_model_calls_are_counted_without_usage_events() -> None:
    lines = lines_of(
        render(
            Start(agent="a", thread_id="t"),
            ModelCall(agent="a", finish_reason="tool_calls"),
            ToolCall(agent="a", name="ls", args={}, id="c"),
            ToolResult(agent="a", name="ls", id="c", content="/x"),
            ModelCall(agent="a", finish_reason="stop"),
            Final(agent="a", thread_id="t", content=""),
        )
    )
    assert re.fullmatch(
        r"✓ done in [\d.]+s · 2 model calls · no token usage reported · thread t", lines[-1]
    )


def test_plain_output_prints_a_todo_list_only_when_it_changed() -> None:
    from runner.cli.render import PlainRenderer

    out, err = io.StringIO(), io.StringIO()
    plain = PlainRenderer(out, err)
    first = [{"content": "Draft", "status": "in_progress"}]
    for event in (
        Start(agent="a", thread_id="t"),
        TodosUpdate(agent="a", todos=first),
        TodosUpdate(agent="a", todos=first),
        TodosUpdate(agent="a", todos=[{"content": "Draft", "status": "completed"}]),
        ModelCall(agent="a"),
        RunWarning(agent="a", code="empty_reply", message="the model returned an empty reply"),
        Final(agent="a", thread_id="t", content=""),
    ):
        plain.handle(event)  # type: ignore[arg-type]
    assert out.getvalue().splitlines() == ["  [~] Draft", "  [x] Draft"]
    assert err.getvalue().splitlines() == [
        "thread t",
        "warning: the model returned an empty reply",
        "thread: t  model calls: 1  tokens: not reported",
    ]


def test_warnings_travel_on_the_custom_stream() -> None:
    from runner.events import emit_warning
    from runner.run.translate import EventTranslator

    sent: list[object] = []
    emit_warning(sent.append, "truncated_reply", "cut off")
    emit_warning(None, "ignored", "nobody listens")
    translator = EventTranslator("main")
    events = list(translator.feed((), "custom", sent[0]))
    assert [event.to_dict() for event in events] == [
        {"type": "warning", "agent": "main", "code": "truncated_reply", "message": "cut off"}
    ]


def test_plain_consoles_get_no_escape_codes() -> None:
    out = io.StringIO()
    renderer = TerminalRenderer(Console(file=out, force_terminal=False, width=80))
    renderer.handle(Start(agent="a", thread_id="t"))
    renderer.handle(ToolCall(agent="a", name="add", args={"a": 1}, id="c"))
    renderer.handle(Final(agent="a", thread_id="t", content=""))
    assert "\x1b" not in out.getvalue()


def test_result_summary_skips_line_numbers_punctuation_and_the_edit_note() -> None:
    assert result_summary("     1\t---\n     2\tname: x\n") == ("name: x", "+1 lines, 26 chars")
    assert result_summary("5") == ("5", "")
    edited = "Note: a human reviewer replaced this tool call ... .\n\nTool response:\nGOODBYE"
    assert result_summary(edited) == ("GOODBYE", "")


def test_arguments_round_trip_through_yaml_with_blocks_for_multiline_text() -> None:
    args = {"file_path": "/a.md", "content": "# Title\n\nBody\n", "n": 3}
    text = args_to_yaml(args)
    assert "content: |\n  # Title\n\n  Body\n" in text
    assert parse_edited_args(text) == args


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("x: [", "not valid YAML at line 1, column 5: expected the node content"),
        ("- a\n- b\n", "must be a mapping of names to values (`path: /a.md`), found a list"),
        ("", "found nothing"),
        ("just text", "found text"),
        ("42", "found a number"),
        ("1: one", "every argument name must be text"),
    ],
)
def test_edited_arguments_that_cannot_be_used_say_why(text: str, problem: str) -> None:
    found = parse_edited_args(text)
    assert isinstance(found, str) and problem in found


def test_answers_are_limited_to_the_allowed_decisions() -> None:
    choices = decision_choices(
        Action(name="execute", args={}, allowed_decisions=["approve", "reject"])
    )
    assert choices == {"a": "approve", "r": "reject"}
    assert [
        read_choice(a, choices) for a in ("a", "Approve", " y ", "no", "r", "e", "edit", "")
    ] == [
        "approve",
        "approve",
        "approve",
        "reject",
        "reject",
        None,
        None,
        None,
    ]


def test_langchains_default_description_loses_its_copy_of_the_arguments() -> None:
    default = "Tool execution requires approval\n\nTool: shout\nArgs: {'text': 'hi'}"
    assert _without_call(default, "shout") == "Tool execution requires approval"
    assert _without_call("Shouting needs a yes", "shout") == "Shouting needs a yes"


def test_the_approval_hint_names_the_agent_file_in_both_renderers() -> None:
    from runner.cli.render import PlainRenderer
    from runner.events import Interrupt

    waiting = Interrupt(
        agent="a",
        thread_id="t1",
        actions=[Action(name="execute", args={"command": "ls"}, allowed_decisions=["approve"])],
    )
    hint = "Answer with: agentctl run agents/coder.yaml --thread t1 --approve"
    out = io.StringIO()
    renderer = TerminalRenderer(
        Console(file=out, force_terminal=False, width=200), spec="agents/coder.yaml"
    )
    renderer.handle(Start(agent="a", thread_id="t1"))
    renderer.handle(waiting)
    assert hint in out.getvalue()
    err = io.StringIO()
    PlainRenderer(io.StringIO(), err, spec="agents/coder.yaml").handle(waiting)
    assert hint in err.getvalue()
