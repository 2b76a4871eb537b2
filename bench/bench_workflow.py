"""Workflows: a step's overhead against the same graph written by hand with LangGraph, and a map
of 100 items on replayed models with a fixed delay, 10 at once against one at a time.

Run: .venv/bin/python bench/bench_workflow.py [--repeat 5] [--steps 50] [--delay 0.05]

(1) Overhead: a workflow of N tool steps (a tool that returns at once, its result written into
the state) compiled by `runner.workflow`, against a hand-written `StateGraph` with N nodes that
call the same tool and write the same field; both on an in-memory checkpointer, run
alternately. Reports the median seconds per step of each and the ratio. Target (issue 32):
within 1.1x.
(2) Map: `map` over 100 items whose one step is a replayed agent answering after `--delay`
seconds, with `concurrency: 10` and `concurrency: 1`. Target: about a tenth of the serial time.

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from langchain_core.tools import tool


@tool
def echo(n: int) -> int:
    """Return n."""
    return n


def _workflow_yaml(steps: int) -> str:
    body = [
        {"id": f"s{i}", "tool": "echo", "args": {"n": i}, "output": "value"} for i in range(steps)
    ]
    return yaml.safe_dump(
        {
            "name": "overhead",
            "state": {"value": {"type": "integer"}},
            "tools": [{"import": "bench_workflow:echo"}],
            "workflow": {"steps": body},
        }
    )


def _compiled_workflow(folder: Path, steps: int) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    from runner.load.workflow import load_workflow
    from runner.workflow.graph import compile_workflow

    path = folder / "overhead.yaml"
    path.write_text(_workflow_yaml(steps))
    spec = load_workflow(path)
    return compile_workflow(spec, agents={}, tools={"echo": echo}, checkpointer=InMemorySaver())


def _hand_written(steps: int) -> Any:
    """The same graph as LangGraph users write it: one node per step."""
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        value: int

    builder: Any = StateGraph(State)
    for i in range(steps):

        def node(state: State, i: int = i) -> State:
            return {"value": echo.invoke({"n": i})}

        builder.add_node(f"s{i}", node)
        builder.add_edge(START if i == 0 else f"s{i - 1}", f"s{i}")
    builder.add_edge(f"s{steps - 1}", END)
    return builder.compile(checkpointer=InMemorySaver())


def _run(graph: Any, data: Any) -> float:
    config = {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": 10_000}
    started = time.perf_counter()
    graph.invoke(data, config)
    return time.perf_counter() - started


def overhead(folder: Path, steps: int, repeat: int) -> dict[str, float]:
    workflow = _compiled_workflow(folder, steps)
    hand = _hand_written(steps)
    _run(workflow, {"vars": {}, "state": {}})  # warm up
    _run(hand, {})
    times: dict[str, list[float]] = {"workflow": [], "langgraph": []}
    for _ in range(repeat):
        times["workflow"].append(_run(workflow, {"vars": {}, "state": {}}) / steps)
        times["langgraph"].append(_run(hand, {}) / steps)
    found = {name: statistics.median(values) for name, values in times.items()}
    found["ratio"] = found["workflow"] / found["langgraph"]
    return found


def _map_session(folder: Path, concurrency: int, delay: float, items: int) -> Any:
    from runner.run import Session

    spec = folder / f"map{concurrency}.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": f"map{concurrency}",
                "model": "openai:gpt-4.1",
                "state": {"items": {"type": "list"}, "labels": {"type": "list"}},
                "agents": {"labeler": {"prompt": "Label the item."}},
                "workflow": {
                    "steps": [
                        {
                            "id": "each",
                            "map": {
                                "over": "state.items",
                                "concurrency": concurrency,
                                "steps": [
                                    {
                                        "id": "label",
                                        "agent": "labeler",
                                        "input": "{{ item }}",
                                        "output": "label",
                                    }
                                ],
                            },
                            "output": "labels",
                        }
                    ]
                },
            }
        )
    )
    tape = folder / f"map{concurrency}.cassette.yaml"
    replies = [{"content": f"label {i}", "delay": delay} for i in range(items)]
    tape.write_text(yaml.safe_dump({"version": 1, "agents": {"labeler": replies}}))
    return Session(spec, model=f"replay:{tape}", db=folder / f"map{concurrency}.db")


def map_times(folder: Path, delay: float, items: int) -> dict[str, float]:
    found: dict[str, float] = {}
    for concurrency in (10, 1):
        session = _map_session(folder, concurrency, delay, items)
        try:
            graph = session.graph
            data = {"vars": {}, "state": {"items": list(range(items))}}
            found[f"concurrency {concurrency}"] = _run(graph, data)
        finally:
            session.close()
    found["ratio"] = found["concurrency 10"] / found["concurrency 1"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--items", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        steps = overhead(folder, args.steps, args.repeat)
        mapped = map_times(folder, args.delay, args.items)
    print(f"{'per step':<24}{'seconds':>12}")
    print(f"{'  runner.workflow':<24}{steps['workflow']:>12.6f}")
    print(f"{'  hand-written LangGraph':<24}{steps['langgraph']:>12.6f}")
    print(f"{'  ratio (target 1.1)':<24}{steps['ratio']:>12.2f}")
    print(f"{f'map of {args.items}, {args.delay}s each':<24}{'seconds':>12}")
    print(f"{'  concurrency 10':<24}{mapped['concurrency 10']:>12.3f}")
    print(f"{'  concurrency 1':<24}{mapped['concurrency 1']:>12.3f}")
    print(f"{'  ratio (target 0.1)':<24}{mapped['ratio']:>12.3f}")
    print(json.dumps({"steps": steps, "map": mapped, "items": args.items, "delay": args.delay}))


if __name__ == "__main__":
    main()
