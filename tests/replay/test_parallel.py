"""Parallel `task` calls to one replayed subagent get the same replies on every run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

import runner

DATA = Path(__file__).parents[1] / "data" / "parallel"

IN_ORDER = {
    "ticket 1: the export crashes": "bug: export crashes",
    "ticket 2: I was charged twice": "billing: charged twice",
    "ticket 3: login takes a minute": "performance: slow login",
}


def answers(result: dict[str, Any]) -> dict[str, str]:
    """Each `task` call's description mapped to the result its call got."""
    briefs = {
        call["id"]: call["args"]["description"]
        for message in result["messages"]
        if message.type == "ai"
        for call in message.tool_calls
    }
    return {
        briefs[message.tool_call_id]: message.text
        for message in result["messages"]
        if message.type == "tool"
    }


@pytest.mark.parametrize("cassette", ["triage.cassette.yaml", "triage.named.cassette.yaml"])
def test_fifty_sync_runs_match_replies_to_calls(cassette: str) -> None:
    graph = runner.build_agent(DATA / "triage.yaml", model=f"replay:{DATA / cassette}")
    seen = [
        answers(
            graph.invoke(
                {"messages": [HumanMessage("sort")]}, {"configurable": {"thread_id": f"s{n}"}}
            )
        )
        for n in range(50)
    ]
    assert seen == [IN_ORDER] * 50


@pytest.mark.parametrize("cassette", ["triage.cassette.yaml", "triage.named.cassette.yaml"])
def test_fifty_async_runs_match_replies_to_calls(cassette: str) -> None:
    graph = runner.build_agent(DATA / "triage.yaml", model=f"replay:{DATA / cassette}")

    async def run(n: int) -> dict[str, str]:
        config = {"configurable": {"thread_id": f"a{n}"}}
        return answers(await graph.ainvoke({"messages": [HumanMessage("sort")]}, config))

    async def all_runs() -> list[dict[str, str]]:
        return [await run(n) for n in range(50)]

    assert asyncio.run(all_runs()) == [IN_ORDER] * 50


def test_a_call_no_run_answers_says_which_calls_the_runs_left_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.agent.models import init_model
    from runner.errors import RunError
    from runner.tools.runtime import TASK_CALL, TaskCall

    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.cassette.yaml").write_text(
        "agents:\n  triager:\n    - answers: {id: t9}\n      content: x\n"
    )
    model = init_model("replay:c.cassette.yaml", agent="triager", is_main=False)
    token = TASK_CALL.set(TaskCall("triager", "t1", "ticket 1", (("t1", "ticket 1"),)))
    try:
        with pytest.raises(RunError) as caught:
            model.invoke([HumanMessage("ticket 1")])
    finally:
        TASK_CALL.reset(token)
    assert str(caught.value) == (
        "replay cassette c.cassette.yaml has 1 reply for agent 'triager', and the run asked for "
        "reply 2; no reply left answers this task call ('ticket 1'); the runs not played "
        "answer: id 't9'"
    )
