"""A 2 MB tool result: (a) create_agent keeps it, (b) deepagents and (c) agentctl evict it.

Run: .venv/bin/python bench/bench_eviction.py [--repeat 5]

The instant scripted model calls a tool that returns 2 MB of text, then answers. For each agent:
the time of that step (tool call to the next model call), the peak memory of the whole run
(tracemalloc, in a run of its own: tracing slows Python down), and how many characters of the
result reach the model's next call.

Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import tracemalloc
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
)
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool

SIZE = 2_000_000
LINE = "2026-01-01 12:00:00 INFO worker-7 processed batch 123456 in 42 ms, status ok\n"


@tool
def fetch_logs(service: str) -> str:
    """The service's log (large)."""
    return (LINE * (SIZE // len(LINE) + 1))[:SIZE]


def script(last: BaseMessage, _call: int) -> AIMessage:
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"seen {len(str(last.content))}")
    return calls(("fetch_logs", {"service": "api"}))


def run(agent: Any, model: InstantModel, mode: str) -> tuple[float, int]:
    message: Any = {"messages": [{"role": "user", "content": "go"}]}
    model.stamps.clear()
    result = run_agent(agent, message, mode)
    seen = int(str(result["messages"][-1].content).removeprefix("seen "))
    return model.stamps[1] - model.stamps[0], seen


def peak(agent: Any, model: InstantModel, mode: str) -> float:
    tracemalloc.start()
    try:
        run(agent, model, mode)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def bench(repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ref = f"{Path(__file__).resolve()}:fetch_logs"
        spec = spec_file(Path(tmp), "eviction", {"backend": "state"}, tool_ref=ref)
        models = {k: InstantModel(script=script) for k in CONTENDERS}
        agents = {k: build(k, models[k], spec, tools=[fetch_logs]) for k in CONTENDERS}
        for mode in ("invoke", "ainvoke"):
            times: dict[str, list[float]] = {k: [] for k in CONTENDERS}
            for order in rotations(repeat):
                for kind in order:
                    seconds, seen = run(agents[kind], models[kind], mode)
                    times[kind].append(seconds)
                    results[f"{kind}_seen_chars"] = seen
            for kind in CONTENDERS:
                results[f"{kind}_{mode}_ms"] = median(times[kind]) * 1e3
                results[f"{kind}_{mode}_peak_mb"] = peak(agents[kind], models[kind], mode) / 1e6
    return results


def table(results: dict[str, Any]) -> str:
    rows = [f"{'2 MB tool result':<32}" + "".join(f"{LABELS[k]:>18}" for k in CONTENDERS)]
    rows[0] += f"{'c/a':>7}{'c/b':>7}"
    for key, label in [
        ("invoke_ms", "step time, invoke (ms)"),
        ("ainvoke_ms", "step time, ainvoke (ms)"),
        ("invoke_peak_mb", "peak memory, invoke (MB)"),
        ("ainvoke_peak_mb", "peak memory, ainvoke (MB)"),
        ("seen_chars", "chars the model sees next"),
    ]:
        a, b, c = (results[f"{k}_{key}"] for k in CONTENDERS)
        rows.append(f"{label:<32}{a:>18,.1f}{b:>18,.1f}{c:>18,.1f}{c / a:>7.2f}{c / b:>7.2f}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results = bench(args.repeat)
    print(f"one tool result of {SIZE:,} characters, median of {args.repeat} runs")
    print(table(results))
    summary: dict[str, Any] = {"bench": "eviction", "repeat": args.repeat, "size": SIZE}
    summary.update({k: round(v, 3) for k, v in results.items()})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
