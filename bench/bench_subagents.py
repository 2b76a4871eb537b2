"""Parallel `task` calls: N subagents whose model takes 0.3 s, on the sync and async paths.

Run: .venv/bin/python bench/bench_subagents.py [--repeat 5]

The lead agent asks for N `task` calls in one message, one per subagent, then answers; each
subagent's model sleeps 0.3 s and answers. Three contenders, interleaved:
(a) bare create_agent with a hand-written `task` tool that invokes one create_agent per worker,
(b) deepagents with N subagents, (c) agentctl with N inline subagents (the lead's model is
passed to build_agent, so the subagents inherit it).

Prints a table (median seconds per run, the ratio to a single subagent, and c/a, c/b) and one
JSON line.
Target (issue 10): N parallel subagents within 1.3x a single one, also with 10 on the sync path.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from _common import (
    CONTENDERS,
    LABELS,
    InstantModel,
    build,
    calls,
    median,
    rotations,
    run_agent,
    spec_file,
    timed,
)
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

DELAY = 0.3
COUNTS = (1, 5, 10)


def is_job(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and str(message.content).startswith("job")


def script_for(count: int) -> Any:
    """The lead asks for `count` task calls, then answers; a subagent answers its job."""

    def script(last: BaseMessage, _call: int) -> AIMessage:
        if is_job(last):
            return AIMessage(content=f"{last.content}: done")
        if isinstance(last, ToolMessage):
            return AIMessage(content="all done")
        return calls(
            *(("task", {"description": f"job {i}", "subagent_type": f"w{i}"}) for i in range(count))
        )

    return script


def bare_task_tool(workers: dict[str, Any]) -> BaseTool:
    """The `task` tool a user would write for bare create_agent."""

    def reply(result: Any, runtime: ToolRuntime) -> ToolMessage:
        text = str(result["messages"][-1].content)
        return ToolMessage(text, tool_call_id=runtime.tool_call_id or "", name="task")

    def task(description: str, subagent_type: str, runtime: ToolRuntime) -> ToolMessage:
        result = workers[subagent_type].invoke({"messages": [HumanMessage(description)]})
        return reply(result, runtime)

    async def atask(description: str, subagent_type: str, runtime: ToolRuntime) -> ToolMessage:
        result = await workers[subagent_type].ainvoke({"messages": [HumanMessage(description)]})
        return reply(result, runtime)

    return StructuredTool.from_function(
        func=task, coroutine=atask, name="task", description="Run a subagent on a job."
    )


def agents_for(count: int, folder: Path) -> tuple[dict[str, Any], dict[str, InstantModel]]:
    from langchain.agents import create_agent

    models = {
        kind: InstantModel(
            script=script_for(count), delay=lambda last: DELAY if is_job(last) else 0.0
        )
        for kind in CONTENDERS
    }
    names = [f"w{i}" for i in range(count)]
    workers = {name: create_agent(models["bare"]) for name in names}
    spec = spec_file(
        folder,
        f"lead{count}",
        {
            "general_purpose_agent": False,
            "subagents": [{"name": n, "description": f"worker {n}"} for n in names],
        },
    )
    deep = {
        "subagents": [
            {"name": n, "description": f"worker {n}", "system_prompt": "Do the job."} for n in names
        ]
    }
    agents = {
        kind: build(
            kind,
            models[kind],
            spec,
            tools=[bare_task_tool(workers)] if kind == "bare" else [],
            deep=deep,
        )
        for kind in CONTENDERS
    }
    return agents, models


def measure(count: int, repeat: int, folder: Path) -> dict[str, float]:
    agents, _models = agents_for(count, folder)
    message: Any = {"messages": [{"role": "user", "content": "go"}]}
    times: dict[str, list[float]] = {}
    for kind in CONTENDERS:  # warm-up: first-call costs (imports, thread pools) are not timed
        for mode in ("invoke", "ainvoke"):
            run_agent(agents[kind], message, mode)
    for order in rotations(repeat):  # interleaved so machine noise hits all alike
        for kind in order:
            for mode in ("invoke", "ainvoke"):
                seconds = timed(lambda k=kind, m=mode: run_agent(agents[k], message, m))
                times.setdefault(f"{kind}_{mode}", []).append(seconds)
    return {key: median(values) for key, values in times.items()}


def table(results: dict[int, dict[str, float]]) -> str:
    rows = []
    for mode in ("invoke", "ainvoke"):
        head = f"{mode + ', s (x one subagent)':<28}"
        rows.append(
            head + "".join(f"{LABELS[k]:>20}" for k in CONTENDERS) + f"{'c/a':>7}{'c/b':>7}"
        )
        for n, r in results.items():
            cells = "".join(
                f"{r[f'{k}_{mode}']:>11.3f} ({r[f'{k}_{mode}'] / results[1][f'{k}_{mode}']:.2f}x)"
                for k in CONTENDERS
            )
            a, b, c = (r[f"{k}_{mode}"] for k in CONTENDERS)
            rows.append(f"{f'{n} subagents':<28}{cells}{c / a:>7.2f}{c / b:>7.2f}")
        rows.append("")
    return "\n".join(rows).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: measure(n, args.repeat, Path(tmp)) for n in COUNTS}
    print(f"parallel task calls, subagent model delay {DELAY}s, median of {args.repeat}")
    print(table(results))
    summary: dict[str, Any] = {"bench": "subagents", "delay_s": DELAY, "repeat": args.repeat}
    for n, r in results.items():
        summary.update({f"{key}_{n}": round(value, 4) for key, value in r.items()})
    for kind in CONTENDERS:
        for mode in ("invoke", "ainvoke"):
            ratio = results[10][f"{kind}_{mode}"] / results[1][f"{kind}_{mode}"]
            summary[f"ratio_{kind}_{mode}_10"] = round(ratio, 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
