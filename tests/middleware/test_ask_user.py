"""`ask_user`: the agent's question pauses the run as an interrupt; it is answered from the
Python API, the command line (`--answer`, once: two answers cannot both win), or by resuming
the graph with a value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import runner
from runner.events import Final, Interrupt
from runner.run import Decision, Session
from tests.conftest import run_cli
from tests.spec.files import write_files as write

AGENT = """
name: asker
model: replay:./asker.cassette.yaml
prompt: You ask before you act.
ask_user: {ASK_USER}
todos: false
general_purpose_agent: false
"""
CASSETTE = """
- content: Asking.
  tool_calls:
    - name: ask_user
      args: {ARGS}
- content: Noted.
"""


def agent_files(
    tmp_path: Path, *, ask_user: str = "true", args: str = "{question: Which colour?}"
) -> Path:
    return write(
        tmp_path,
        {
            "asker.yaml": AGENT.replace("{ASK_USER}", ask_user),
            "asker.cassette.yaml": CASSETTE.replace("{ARGS}", args),
        },
    )


def tool_result(session: Session, thread: str) -> str:
    messages = session.values(thread)["messages"]
    return str(next(m.content for m in messages if m.type == "tool"))


def test_the_question_is_an_interrupt_answered_from_the_python_api(tmp_path: Path) -> None:
    path = agent_files(tmp_path, args="{question: Which colour?, choices: [red, blue]}")
    with Session(path, db=tmp_path / "db.sqlite") as session:
        first = session.run("paint")
        waiting = first.interrupt
        assert isinstance(waiting, Interrupt)
        [action] = waiting.actions
        assert (action.name, action.args, action.allowed_decisions) == (
            "ask_user",
            {"question": "Which colour?", "choices": ["red", "blue"]},
            ["answer"],
        )
        assert waiting.to_dict()["actions"][0]["args"]["choices"] == ["red", "blue"]
        with pytest.raises(Exception, match="not one of the choices"):
            session._claim(first.thread_id, [Decision.answer("green")])
        done = session.run(thread_id=first.thread_id, decisions=[Decision.answer("BLUE")])
        assert isinstance(done.final, Final) and done.final.content == "Noted."
        assert tool_result(session, first.thread_id) == "blue"  # the choice as offered


def test_spec_choices_apply_when_the_model_gives_none(tmp_path: Path) -> None:
    path = agent_files(tmp_path, ask_user="{choices: ['yes', 'no']}")
    with Session(path, db=tmp_path / "db.sqlite") as session:
        waiting = session.run("go").interrupt
        assert waiting is not None
        assert waiting.actions[0].args["choices"] == ["yes", "no"]


def test_a_graph_resumes_with_the_answer_as_value(tmp_path: Path) -> None:
    path = agent_files(tmp_path)
    graph = runner.build_agent(path, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"messages": [{"role": "user", "content": "paint"}]}, config)
    [interrupt] = paused["__interrupt__"]
    assert interrupt.value["type"] == "ask_user"
    assert interrupt.value["question"] == "Which colour?"
    assert interrupt.value["choices"] is None
    done = graph.invoke(Command(resume="green, please"), config)
    assert [m.content for m in done["messages"] if m.type == "tool"] == ["green, please"]


def test_the_cli_stops_at_the_question_and_answers_it_once(tmp_path: Path) -> None:
    agent_files(tmp_path, args="{question: Which colour?, choices: [red, blue]}")
    asked = run_cli("run", "asker.yaml", "paint", "--output", "jsonl", cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    events = [json.loads(line) for line in asked.stdout.splitlines()]
    assert events[-1]["type"] == "interrupt"
    assert events[-1]["actions"][0]["args"] == {
        "question": "Which colour?",
        "choices": ["red", "blue"],
    }
    thread = events[-1]["thread_id"]

    wrong = run_cli("run", "asker.yaml", "--thread", thread, "--answer", "green", cwd=tmp_path)
    assert wrong.returncode == 2  # a usage error, as a decision an approval does not take
    assert "error: 'green' is not one of the choices for 'Which colour?': 'red', 'blue'" in (
        wrong.stderr
    )
    approve = run_cli("run", "asker.yaml", "--thread", thread, "--approve", cwd=tmp_path)
    assert approve.returncode == 2
    assert "answer it (--answer TEXT), not approve" in approve.stderr

    answered = run_cli("run", "asker.yaml", "--thread", thread, "--answer", "red", cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.rstrip().endswith("Noted.")
    again = run_cli("run", "asker.yaml", "--thread", thread, "--answer", "blue", cwd=tmp_path)
    assert again.returncode == 1
    assert "already answered (answered 'red'" in again.stderr


def test_plain_output_shows_the_question_and_how_to_answer(tmp_path: Path) -> None:
    agent_files(tmp_path, args="{question: Which colour?, choices: [red, blue]}")
    asked = run_cli("run", "asker.yaml", "paint", "--auto-approve", cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    assert "asker asks: Which colour?\n    1. red\n    2. blue\n" in asked.stderr
    assert "--answer red" in asked.stderr


def test_answer_flags_are_checked(tmp_path: Path) -> None:
    agent_files(tmp_path)
    no_thread = run_cli("run", "asker.yaml", "--answer", "x", cwd=tmp_path)
    assert no_thread.returncode == 2
    assert "add --thread ID" in no_thread.stderr
    both = run_cli("run", "asker.yaml", "--thread", "t", "--answer", "x", "--approve", cwd=tmp_path)
    assert both.returncode == 2
    assert "choose one of --approve, --answer" in both.stderr


def test_spec_mistakes_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = agent_files(tmp_path, ask_user="{choices: [red], asks: 3}")
    with pytest.raises(runner.SpecError) as info:
        runner.load_spec(path)
    assert [str(p) for p in info.value.problems] == [
        "asker.yaml:4:21: ask_user.choices: must have at least 2 items",
        "asker.yaml:4:28: ask_user.asks: unknown key; expected one of: choices, description, "
        "enabled",
    ]


@pytest.mark.slow
def test_the_terminal_asks_with_numbered_choices(tmp_path: Path) -> None:
    from tests.cli.test_terminal import Terminal

    agent_files(tmp_path, args="{question: Which colour?, choices: [red, blue]}")
    # --auto-approve approves tool calls, never answers a question
    term = Terminal("run", "asker.yaml", "paint", "--auto-approve", cwd=tmp_path)
    term.expect("asker asks: Which colour?")
    term.expect("1. red")
    term.expect("2. blue")
    term.line("3")
    term.expect("answer with a number from 1 to 2, or a choice")
    term.line("2")
    term.expect("✓ answered blue")
    term.expect("Noted.")
    term.expect("✓ done")
    assert term.exit_status() == 0
