"""Values a checkpoint cannot hold, from the model or from a tool, become errors the model reads:
the run goes on and the thread (SQLite, as `agentctl run` keeps it) stays resumable."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from runner.events import Final, ToolResult
from runner.middleware.storable import MAX_DEPTH, unstorable
from runner.run import Session
from tests.conftest import run_cli
from tests.fakes import ScriptedChatModel, ai

TOOLS = '''\
from langchain_core.tools import tool


@tool
def note(value: object = None) -> str:
    """Keep a value (any JSON)."""
    return "kept"


@tool(response_format="content_and_artifact")
def fetch_raw(what: str) -> tuple[str, object]:
    """Fetch something as raw data."""
    if what == "huge":
        return "got it", {"n": 2**70}
    if what == "object":
        return "got it", [{"inner": object()}]
    return "got it", {"n": 1}
'''

AGENT = """\
name: keeper
model: openai:gpt-4.1
tools: [./tools.py:note, ./tools.py:fetch_raw]
"""


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = {
    "huge integer": (
        {"value": 2**64},
        "value: the integer 18446744073709551616 is outside 64 bits",
    ),
    "negative": ({"value": -(2**63) - 1}, "value: the integer -9223372036854775809 is outside"),
    "NaN": ({"value": float("nan")}, "value: nan is not a JSON number"),
    "infinity": ({"value": {"x": [float("inf")]}}, "value.x[0]: inf is not a JSON number"),
    "object": ({"value": {"a": [1, object()]}}, "value.a[1]: a value of type object cannot be"),
    "too deep": ({"value": _nested(MAX_DEPTH + 5)}, f"nested more than {MAX_DEPTH} levels deep"),
}


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT)
    return path


def test_values_at_the_edges_of_64_bits_are_storable() -> None:
    assert unstorable({"a": [2**64 - 1, -(2**63), 1.5, None, True, "x"]}, json_only=True) is None
    assert unstorable({"n": float("nan")}) is None  # msgpack keeps NaN; only JSON refuses it
    assert unstorable(_nested(MAX_DEPTH - 1)) is None


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_argument_is_an_error_the_model_reads_and_the_thread_resumes(
    agent: Path, tmp_path: Path, case: str
) -> None:
    args, problem = HOSTILE[case]
    db = tmp_path / "threads.sqlite"
    model = ScriptedChatModel(
        script=[ai("", ("note", args)), ai("I will not."), ai("", ("note", {"value": 1})), ai("ok")]
    )
    with Session(agent, model=model, db=db) as session:
        result = session.run("keep this")
        thread = result.thread_id
    (answer,) = [e for e in result.events if isinstance(e, ToolResult)]
    assert answer.status == "error" and problem in answer.content
    assert answer.content.startswith("Error: this note call was not run")
    assert isinstance(result.final, Final) and result.final.content == "I will not."
    # the model saw the error in its next call
    assert problem in model.calls[1][-1].content
    with Session(agent, model=model, db=db) as session:  # a new process would do the same
        again = session.run("try again", thread_id=thread)
        messages = session.values(thread)["messages"]
    assert again.final is not None and again.final.content == "ok"
    assert [m.content for m in messages if m.type == "tool"][-1] == "kept"
    assert messages[1].tool_calls[0]["args"] == {}  # what the thread keeps of the refused call


@pytest.mark.parametrize(
    ("what", "problem"),
    [
        ("huge", "artifact.n: the integer 1180591620717411303424 is outside 64 bits"),
        ("object", "artifact[0].inner: a value of type object cannot be stored"),
    ],
)
def test_a_tool_result_that_cannot_be_stored_is_an_error_result(
    agent: Path, tmp_path: Path, what: str, problem: str
) -> None:
    model = ScriptedChatModel(script=[ai("", ("fetch_raw", {"what": what})), ai("noted")])
    with Session(agent, model=model, db=tmp_path / "threads.sqlite") as session:
        result = session.run("fetch")
    (answer,) = [e for e in result.events if isinstance(e, ToolResult)]
    assert answer.status == "error" and problem in answer.content
    assert "The tool ran" in answer.content
    assert result.final is not None and result.final.content == "noted"


def test_the_async_path_answers_both_kinds_with_errors(agent: Path) -> None:
    """Under `ainvoke`, on a checkpointer without a tool journal (the pass-through path)."""
    import runner

    model = ScriptedChatModel(
        script=[
            ai("", ("note", {"value": 2**64}), ("fetch_raw", {"what": "object"})),
            ai("done"),
        ]
    )
    graph = runner.build_agent(runner.load_spec(agent), model=model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    state = asyncio.run(graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config))
    results = {m.name: m for m in state["messages"] if m.type == "tool"}
    assert results["note"].status == "error" and "outside 64 bits" in results["note"].content
    assert results["fetch_raw"].status == "error"
    assert "artifact[0].inner: a value of type object" in results["fetch_raw"].content
    assert state["messages"][-1].content == "done"


def test_agentctl_run_goes_on_after_a_huge_integer_from_a_cassette(agent: Path) -> None:
    folder = agent.parent
    (folder / "keeper.cassette.yaml").write_text(
        "version: 1\nagents:\n  keeper:\n"
        "    - tool_calls: [{name: note, args: {value: 18446744073709551616}}]\n"
        "    - content: I will not.\n"
        "    - content: Resumed.\n"
    )
    agent.write_text(AGENT.replace("openai:gpt-4.1", "replay:keeper.cassette.yaml"))
    done = run_cli("run", str(agent), "keep", "--output", "jsonl", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "is outside 64 bits" in done.stdout and "I will not." in done.stdout
    thread = next(
        line.split('"thread_id": "')[1].split('"')[0]
        for line in done.stdout.splitlines()
        if '"thread_id": "' in line
    )
    again = run_cli("run", str(agent), "again", "--thread", thread, cwd=folder)
    assert again.returncode == 0, again.stderr
    assert "Resumed." in again.stdout


def test_a_subagents_hostile_call_is_answered_inside_the_subagent(
    agent: Path, tmp_path: Path
) -> None:
    agent.write_text(
        AGENT
        + "subagents:\n  - {name: helper, description: Helps, prompt: You help.,"
        + " tools: [./tools.py:note]}\n"
    )

    def script(messages: list[Any]) -> dict[str, Any]:
        replies = sum(1 for m in messages if m.type == "ai")
        if messages[1].content == "help out":  # the subagent's conversation
            return [ai("", ("note", {"value": 2**64})), ai("Could not.")][replies]
        return [
            ai("", ("task", {"description": "help out", "subagent_type": "helper"})),
            ai("Done."),
        ][replies]

    model = ScriptedChatModel(script=script)
    with Session(agent, model=model, db=tmp_path / "threads.sqlite") as session:
        result = session.run("go")
    errors = [e for e in result.events if isinstance(e, ToolResult) and e.status == "error"]
    assert [(e.agent, e.name) for e in errors] == [("helper", "note")]
    assert "is outside 64 bits" in errors[0].content
    assert result.final is not None and result.final.content == "Done."


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    """A random value: mostly JSON data (text, numbers, nesting), now and then one that cannot
    be stored or is not JSON (an integer outside 64 bits, NaN, an object, a non-text key, a
    subclass of str, a tuple, nesting past the limit)."""
    roll = rng.random()
    if (depth > 3 and roll < 0.6) or roll < 0.3:
        return rng.choice(
            [
                "text",
                "",
                7,
                -(2**63),
                2**64 - 1,
                2**64,
                -(2**63) - 1,
                1.5,
                float("nan"),
                float("inf"),
                True,
                None,
                object(),
                _Text("sub"),
                _nested(MAX_DEPTH - 2),
                _nested(MAX_DEPTH + 1),
            ]
        )
    size = rng.randrange(4)
    if roll < 0.65:
        keys = [rng.choice(["a", "b", "c", "d", 1, ("t",), _Text("k")]) for _ in range(size)]
        return {key: _random_value(rng, depth + 1) for key in keys}
    items = [_random_value(rng, depth + 1) for _ in range(size)]
    return tuple(items) if roll < 0.75 else items


class _Text(str):
    """A subclass of str: not plain, left to the slow walk."""


def test_the_fast_path_agrees_with_the_walk_on_random_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`unstorable` answers the same with and without its fast path for plain JSON values,
    over 3,000 random values, JSON-only or not; and what the fast path passes, the walk
    passes too."""
    from runner.middleware import storable

    rng = random.Random(31)
    values = [_random_value(rng) for _ in range(3000)]
    fast = {
        (i, json_only): (storable._plain(v, 0, json_only), unstorable(v, json_only=json_only))
        for i, v in enumerate(values)
        for json_only in (False, True)
    }
    monkeypatch.setattr(storable, "_plain", lambda *_: False)
    passed = 0
    for (i, json_only), (plain, verdict) in fast.items():
        walked = unstorable(values[i], json_only=json_only)
        assert verdict == walked, values[i]
        assert not plain or walked is None, values[i]
        passed += plain
    assert 1000 < passed < 5000  # both answers were taken often
