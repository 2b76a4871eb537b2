"""Subagents and the `task` tool, driven by per-agent cassettes through the whole agent."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

import runner
from runner.agent.build import middleware_chain, subagent_middleware
from runner.agent.resolve import Resolver
from runner.events import Interrupt, TextDelta, ToolCall, ToolResult
from runner.run import Decision, Session
from tests.conftest import ROOT


@pytest.fixture
def team(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tests" / "data" / "subagents", tmp_path / "subagents")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    return tmp_path / "subagents" / "team.yaml"


def test_delegation_keeps_contexts_apart(team: Path, tmp_path: Path) -> None:
    with Session(team, db=tmp_path / "db") as session:
        first = session.run("go")
        assert first.interrupt is not None  # the helper wants to shout (see the test below)
        history = session.values(first.thread_id)["messages"]
    # the lead's history: one ToolMessage per delegation, none of the subagents' own steps
    results = {m.text for m in history if m.type == "tool"}
    assert {"The sum is 5.", "hello (softly)"} <= results
    assert all("adder: working" not in m.text for m in history)
    assert not any(m.type == "tool" and m.name == "add" for m in history)


def test_events_name_the_subagent_and_nest_under_its_call(team: Path, tmp_path: Path) -> None:
    with Session(team, db=tmp_path / "db") as session:
        events = list(session.stream("go"))
    task_calls = {
        e.args["subagent_type"]: e.id
        for e in events
        if isinstance(e, ToolCall) and e.name == "task"
    }
    add_call = next(e for e in events if isinstance(e, ToolCall) and e.name == "add")
    assert (add_call.agent, add_call.parent_id) == ("adder", task_calls["adder"])
    add_result = next(e for e in events if isinstance(e, ToolResult) and e.name == "add")
    assert (add_result.agent, add_result.content) == ("adder", "5")
    quiet_text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.agent == "quiet")
    assert quiet_text == "hello (softly)"


def test_inheritance_of_model_tools_and_approvals(team: Path) -> None:
    resolved = Resolver(with_models=False).resolve(runner.load_spec(team))
    subs = {s.name: s for s in resolved.subagents}
    assert list(subs) == ["adder", "quiet", "helper", "echoer", "general-purpose"]
    adder, quiet, helper = subs["adder"].agent, subs["quiet"].agent, subs["helper"].agent
    assert adder is not None and quiet is not None and helper is not None
    assert [t.name for t in adder.tools] == ["add", "shout"] and adder.interrupt_on == {
        "shout": True
    }
    assert quiet.tools == [] and quiet.interrupt_on == {}
    assert [t.name for t in helper.tools] == ["shout"] and helper.interrupt_on == {"shout": True}
    assert helper.model.id.endswith("helper.cassette.yaml") and adder.model.id.endswith(
        "team.cassette.yaml"
    )
    gp = subs["general-purpose"].agent
    assert gp is not None and [t.name for t in gp.tools] == ["add", "shout"]
    assert subs["echoer"].kind == "import" and subs["echoer"].runnable is not None
    # each subagent gets the subagent chain; only agents with subagents get `task`
    adder_chain = [m.name for m in middleware_chain(adder)]
    assert adder_chain == [
        "TodosMiddleware",
        "ToolJournalMiddleware",
        "FilesystemMiddleware",
        "LargeInputsMiddleware",
        "ReplyCheckMiddleware",
        "SummarizationMiddleware",
        "PatchToolCallsMiddleware",
        "HumanInTheLoopMiddleware",
    ]


def test_a_subagents_approval_pauses_the_whole_run_and_resumes(team: Path, tmp_path: Path) -> None:
    db = tmp_path / "db"
    with Session(team, db=db) as session:
        paused = session.run("go")
    # the helper (a ref'd subagent, inheriting the lead's approvals) asks to shout
    assert isinstance(paused.events[-1], Interrupt), paused.events[-1]
    action = paused.events[-1].actions[0]
    assert (action.name, action.args, action.agent) == ("shout", {"text": "hi"}, "helper")
    with Session(team, db=db) as session:  # a fresh session answers, as a new process would
        assert [a.name for _, actions in session.pending(paused.thread_id) for a in actions] == [
            "shout"
        ]
        done = session.run(
            thread_id=paused.thread_id, decisions=[Decision("edit", args={"text": "hey"})]
        )
        history = session.values(paused.thread_id)["messages"]
    assert done.final is not None and done.final.content == "Everyone reported."
    helper_result = next(
        e for e in done.events if isinstance(e, ToolResult) and e.agent == "helper"
    )
    assert "HEY" in helper_result.content
    assert [m.text for m in history if m.type == "tool"][-2:] == [
        "helper says HI",
        "echo: repeat this",
    ]


def test_unknown_subagent_type_lists_the_valid_names(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    cassette.write_text(
        "- tool_calls: [{name: task, args: {description: x, subagent_type: nobody}}]\n- content: ok\n"
    )
    spec = tmp_path / "a.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "a",
                "model": f"replay:{cassette}",
                "subagents": [{"name": "one", "description": "d"}],
            }
        )
    )
    with Session(spec, db=tmp_path / "db") as session:
        events = list(session.stream("go"))
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.status == "error"
    assert (
        result.content
        == "Error: unknown subagent_type 'nobody'; the available ones are: general-purpose, one"
    )


def test_general_purpose_can_be_switched_off_and_configured(tmp_path: Path) -> None:
    spec = tmp_path / "a.yaml"
    spec.write_text(
        yaml.safe_dump({"name": "a", "model": "openai:gpt-4.1", "general_purpose_agent": False})
    )
    resolved = Resolver(with_models=False).resolve(runner.load_spec(spec))
    assert resolved.subagents == [] and "subagents" not in [
        s.name for s in resolved.prompt_sections
    ]
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "a",
                "model": "openai:gpt-4.1",
                "general_purpose_agent": {"description": "Anything.", "prompt": "Do it."},
            }
        )
    )
    resolved = Resolver(with_models=False).resolve(runner.load_spec(spec))
    gp = resolved.subagents[0]
    assert (gp.name, gp.description) == ("general-purpose", "Anything.")
    assert gp.agent is not None and gp.agent.prompt_sections[0].text == "Do it."


@pytest.mark.parametrize("placeholder", ["{available_agents}", "{agents}"])
def test_the_task_description_is_set_from_yaml(tmp_path: Path, placeholder: str) -> None:
    """`task_description` replaces the tool's description; the seeds' `{available_agents}` and
    our older `{agents}` both receive the list of subagents."""
    spec = tmp_path / "a.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "a",
                "model": "openai:gpt-4.1",
                "task_description": f"Delegate to one of:\n{placeholder}\nBrief them well.",
                "general_purpose_agent": {"description": "Anything.", "prompt": "Do it."},
                "subagents": [{"name": "critic", "description": "Finds faults."}],
            }
        )
    )
    resolved = Resolver(with_models=False).resolve(runner.load_spec(spec))
    task_middleware = subagent_middleware(resolved, compile=False)
    assert task_middleware is not None
    [task] = task_middleware.tools
    assert task.description == (
        "Delegate to one of:\n- critic: Finds faults.\n- general-purpose: Anything.\n"
        "Brief them well."
    )


def parallel_spec(tmp_path: Path, count: int, delay: float) -> Path:
    lead = [
        {
            "content": "fan out",
            "tool_calls": [
                {"name": "task", "args": {"description": f"job {i}", "subagent_type": f"w{i}"}}
                for i in range(count)
            ],
        },
        {"content": "all back"},
    ]
    # each worker replies twice: the test runs the agent twice, and a subagent called again
    # takes its next reply
    agents = {
        "lead": lead,
        **{f"w{i}": [{"content": f"w{i} done", "delay": delay}] * 2 for i in range(count)},
    }
    (tmp_path / "p.cassette.yaml").write_text(yaml.safe_dump({"agents": agents}))
    spec = {
        "name": "lead",
        "model": "replay:p.cassette.yaml",
        "todos": False,
        "general_purpose_agent": False,
        "subagents": [
            {"name": f"w{i}", "description": f"worker {i}", "todos": False} for i in range(count)
        ],
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


class AllAtOnce:
    """Stands in for the replay model's delay: a worker's model call returns only once all
    `count` workers are inside theirs, so calls made one after another never get through (they
    fail after `timeout`). Proves concurrency without timing anything;
    bench/bench_subagents.py measures the figures."""

    def __init__(self, count: int, timeout: float = 30) -> None:
        self.barrier = threading.Barrier(count, timeout=timeout)
        self.count, self.timeout = count, timeout
        self.arrived = 0
        self.all_in: asyncio.Event | None = None

    def sleep(self, delay: float) -> None:
        self.barrier.wait()

    async def asleep(self, delay: float) -> None:
        self.all_in = self.all_in or asyncio.Event()
        self.arrived += 1
        if self.arrived == self.count:
            self.all_in.set()
        await asyncio.wait_for(self.all_in.wait(), self.timeout)


def test_parallel_task_calls_run_concurrently_sync_and_async(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runner.replay.model

    agent = runner.build_agent(parallel_spec(tmp_path, 5, 0.01))
    gate = AllAtOnce(5)
    monkeypatch.setattr(runner.replay.model, "time", SimpleNamespace(sleep=gate.sleep))
    monkeypatch.setattr(runner.replay.model, "asyncio", SimpleNamespace(sleep=gate.asleep))
    result = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert [m.text for m in result["messages"] if m.type == "tool"] == [
        f"w{i} done" for i in range(5)
    ]
    result = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "go"}]}))
    assert [m.text for m in result["messages"] if m.type == "tool"] == [
        f"w{i} done" for i in range(5)
    ]
    assert gate.arrived == 5
