"""`permissions:` deny and allow rules: a denied call never runs and is never put to a person,
an allowed one skips its approval, subagents keep their parent's deny rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import runner
from runner.errors import SpecError
from runner.events import Denied, Interrupt, ToolResult
from runner.run import Session
from tests.conftest import run_cli
from tests.fakes import ScriptedChatModel, ai
from tests.middleware.helpers import MODES, run, spec_file

TOOLS = '''\
from pathlib import Path


def shout(text: str) -> str:
    """Say it loudly."""
    with open(Path(__file__).parent / "ran.txt", "a") as log:
        log.write(text + "\\n")
    return text.upper()
'''

DENY = {"tool": "shout", "args": {"text": ["rm *", "*secret*"]}}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    return tmp_path


def ran(folder: Path) -> list[str]:
    log = folder / "ran.txt"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("mode", MODES)
def test_a_denied_call_gets_an_error_naming_the_rule_and_never_runs(
    folder: Path, mode: str
) -> None:
    path = spec_file(
        folder,
        tools=["./tools.py:shout"],
        interrupt_on={"shout": True},  # denial comes first: nobody is asked
        permissions={"deny": [{"tool": "ls"}, DENY]},
    )
    model = ScriptedChatModel(
        script=[ai("", ("shout", {"text": "rm -rf /"}), ("shout", {"text": "my secret"})), ai("ok")]
    )
    agent = runner.build_agent(path, model=model, checkpointer=InMemorySaver())
    result = run(agent, "go", mode, {"configurable": {"thread_id": "t"}})
    assert "__interrupt__" not in result
    tools = [m for m in result["messages"] if m.type == "tool"]
    assert [m.status for m in tools] == ["error", "error"]
    assert tools[0].content.startswith(
        "Error: this call was denied by permissions.deny[1] (tool: shout, text: rm * | *secret*) "
        "and did not run."
    )
    assert ran(folder) == []


def test_allow_skips_the_approval_and_the_rest_still_wait(folder: Path) -> None:
    path = spec_file(
        folder,
        tools=["./tools.py:shout"],
        interrupt_on={"shout": True},
        permissions={"allow": [{"tool": "sh*", "args": {"text": "hello*"}}]},
    )
    model = ScriptedChatModel(
        script=[
            ai("", ("shout", {"text": "hello there"})),
            ai("", ("shout", {"text": "bye"})),
            ai("ok"),
        ]
    )
    agent = runner.build_agent(path, model=model, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    result = run(agent, "go", "invoke", config)
    assert ran(folder) == ["hello there"]  # ran without a question
    (waiting,) = result["__interrupt__"]
    assert [r["args"] for r in waiting.value["action_requests"]] == [{"text": "bye"}]
    agent.invoke(Command(resume={waiting.id: {"decisions": [{"type": "approve"}]}}), config)
    assert ran(folder) == ["hello there", "bye"]


def test_deny_wins_over_allow_and_an_edit_into_a_denied_call_does_not_run(folder: Path) -> None:
    path = spec_file(
        folder,
        tools=["./tools.py:shout"],
        interrupt_on={"shout": True},
        permissions={"deny": [DENY], "allow": [{"tool": "*"}]},
    )
    model = ScriptedChatModel(script=[ai("", ("shout", {"text": "fine"})), ai("ok")])
    agent = runner.build_agent(path, model=model, checkpointer=InMemorySaver())
    result = run(agent, "go", "invoke", {"configurable": {"thread_id": "t"}})  # no question
    assert "__interrupt__" not in result and ran(folder) == ["fine"]

    # without the allow rule, a person edits the call into a denied one: it still does not run
    path = spec_file(
        folder,
        tools=["./tools.py:shout"],
        interrupt_on={"shout": True},
        permissions={"deny": [DENY]},
    )
    model = ScriptedChatModel(script=[ai("", ("shout", {"text": "fine"})), ai("ok")])
    agent = runner.build_agent(path, model=model, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t2"}}
    (waiting,) = run(agent, "go", "invoke", config)["__interrupt__"]
    edit = {"type": "edit", "edited_action": {"name": "shout", "args": {"text": "rm -rf ~"}}}
    result = agent.invoke(Command(resume={waiting.id: {"decisions": [edit]}}), config)
    denied = [m for m in result["messages"] if m.type == "tool"][-1]
    assert denied.status == "error" and "permissions.deny[0]" in denied.content
    assert ran(folder) == ["fine"]


def test_subagents_keep_their_parents_deny_rules(folder: Path) -> None:
    path = spec_file(
        folder,
        tools=["./tools.py:shout"],
        permissions={"deny": [DENY], "allow": [{"tool": "shout"}]},
        subagents=[
            {
                "name": "helper",
                "description": "Shouts",
                "permissions": {"deny": [{"tool": "shout", "args": {"text": "loud*"}}]},
            }
        ],
    )

    def script(messages: list[Any]) -> Any:
        first = messages[0].content if messages[0].type != "system" else messages[1].content
        done = any(m.type == "tool" for m in messages)
        if "delegate" in str(first):
            return (
                ai("ok")
                if done
                else ai("", ("task", {"description": "shout", "subagent_type": "helper"}))
            )
        if done:
            return ai("helper done")
        return ai(
            "",
            ("shout", {"text": "a secret"}),
            ("shout", {"text": "loudly"}),
            ("shout", {"text": "hi"}),
        )

    model = ScriptedChatModel(script=script)
    with Session(path, model=model, db=folder / "db") as session:
        events = list(session.stream("delegate"))
    denied = [e for e in events if isinstance(e, Denied)]
    assert [(e.agent, e.rule, e.args) for e in denied] == [
        ("helper", "permissions.deny[0]", {"text": "a secret"}),  # the parent's rule
        ("helper", "permissions.deny[0] of 'helper'", {"text": "loudly"}),  # its own
    ]
    assert all(e.parent_id for e in denied)  # nested under the task call
    assert ran(folder) == ["hi"]
    assert not any(isinstance(e, Interrupt) for e in events)


def test_the_denied_event_precedes_its_error_result(folder: Path) -> None:
    path = spec_file(folder, tools=["./tools.py:shout"], permissions={"deny": [DENY]})
    model = ScriptedChatModel(script=[ai("", ("shout", {"text": "rm x"})), ai("ok")])
    with Session(path, model=model, db=folder / "db") as session:
        events = [e for e in session.stream("go") if isinstance(e, Denied | ToolResult)]
    assert [type(e).__name__ for e in events] == ["Denied", "ToolResult"]
    denied = events[0].to_dict()
    assert denied == {
        "type": "denied",
        "agent": "t",
        "name": "shout",
        "id": denied["id"],
        "args": {"text": "rm x"},
        "rule": "permissions.deny[0]",
    }


def test_agentctl_run_reports_the_denial_in_jsonl(folder: Path) -> None:
    (folder / "agent.cassette.yaml").write_text(
        "agents:\n  t:\n"
        "    - tool_calls: [{name: shout, args: {text: rm -rf /}}]\n"
        "    - content: I may not do that.\n"
    )
    spec_file(
        folder,
        model="replay:./agent.cassette.yaml",
        tools=["./tools.py:shout"],
        permissions={"deny": [DENY]},
    )
    done = run_cli("run", "agent.yaml", "go", "--output", "jsonl", cwd=folder)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    (denied,) = [e for e in lines if e["type"] == "denied"]
    assert (denied["name"], denied["rule"], denied["args"]) == (
        "shout",
        "permissions.deny[0]",
        {"text": "rm -rf /"},
    )
    (result,) = [e for e in lines if e["type"] == "tool_result"]
    assert result["status"] == "error" and "denied by permissions.deny[0]" in result["content"]
    assert not [e for e in lines if e["type"] == "warning"]
    assert ran(folder) == []


def test_a_misspelt_rule_key_is_a_located_error(folder: Path) -> None:
    path = folder / "agent.yaml"
    path.write_text("name: t\npermissions:\n  deny:\n    - {tool: execute, arg: {command: x}}\n")
    with pytest.raises(SpecError) as info:
        runner.load_spec(path)
    (problem,) = info.value.problems
    assert (problem.line, problem.path) == (4, "permissions.deny[0].arg")
    assert "did you mean 'args'?" in problem.message


def test_a_rule_naming_no_tool_is_a_located_validate_error(folder: Path) -> None:
    from runner.check.validate import validate_file

    path = spec_file(
        folder,
        tools=["./tools.py:shout"],
        permissions={"deny": [{"tool": "shuot"}], "allow": [{"tool": "http_*"}]},
    )
    problems = [(p.line, p.path, p.message) for p in validate_file(path)]
    assert problems == [
        (
            8,
            "permissions.deny[0].tool",
            "no tool named 'shuot' in agent 't'; did you mean 'shout'?",
        ),
        (10, "permissions.allow[0].tool", "'http_*' matches no tool of agent 't' or its subagents"),
    ]


def test_inspect_lists_the_rules_in_force(folder: Path) -> None:
    from runner.agent.inspect import describe

    path = spec_file(
        folder,
        model="openai:gpt-4.1",
        tools=["./tools.py:shout"],
        permissions={"deny": [DENY], "allow": [{"tool": "shout"}]},
        subagents=[{"name": "helper", "description": "Helps"}],
    )
    info = describe(path)
    assert info["permissions"] == {
        "deny": ["permissions.deny[0]: tool: shout, text: rm * | *secret*"],
        "allow": ["permissions.allow[0]: tool: shout"],
    }
    done = run_cli("inspect", "agent.yaml", cwd=folder)
    assert "deny        permissions.deny[0]: tool: shout, text: rm * | *secret*" in done.stdout
    assert "allow       permissions.allow[0]: tool: shout" in done.stdout
