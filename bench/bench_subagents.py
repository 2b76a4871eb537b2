"""Parallel `task` calls: N subagents whose model takes 0.3 s, on the sync and async paths.

Run: .venv/bin/python bench/bench_subagents.py [--repeat 5]
Prints a table (median seconds per run, and the ratio to a single subagent) and one JSON line.
Target (issue 10): N parallel subagents within 1.3x a single one, also with 10 on the sync path.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

DELAY = 0.3


def make_spec(folder: Path, count: int, repeat: int) -> Path:
    lead = []
    for _ in range(repeat):
        calls = [
            {"name": "task", "args": {"description": f"job {i}", "subagent_type": f"w{i}"}}
            for i in range(count)
        ]
        lead += [{"content": "", "tool_calls": calls}, {"content": "done"}]
    workers = {
        f"w{i}": [{"content": f"w{i} done", "delay": DELAY}] * (2 * repeat) for i in range(count)
    }
    (folder / f"p{count}.cassette.yaml").write_text(
        yaml.safe_dump({"agents": {"lead": lead, **workers}})
    )
    spec = {
        "name": "lead",
        "model": f"replay:p{count}.cassette.yaml",
        "general_purpose_agent": False,
        "subagents": [{"name": f"w{i}", "description": f"worker {i}"} for i in range(count)],
    }
    path = folder / f"p{count}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def measure(count: int, repeat: int, folder: Path) -> dict[str, float]:
    import runner

    agent = runner.build_agent(make_spec(folder, count, repeat))
    message: Any = {"messages": [{"role": "user", "content": "go"}]}
    sync_times, async_times = [], []
    for _ in range(repeat):  # interleaved so machine noise hits both alike
        start = time.perf_counter()
        agent.invoke(message)
        sync_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        asyncio.run(agent.ainvoke(message))
        async_times.append(time.perf_counter() - start)
    return {"sync": statistics.median(sync_times), "async": statistics.median(async_times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: measure(n, args.repeat, Path(tmp)) for n in (1, 5, 10)}
    print(f"parallel task calls, model delay {DELAY}s, median of {args.repeat}")
    print(f"{'subagents':>9} {'sync s':>8} {'ratio':>6} {'async s':>8} {'ratio':>6}")
    for n, r in results.items():
        print(
            f"{n:>9} {r['sync']:>8.3f} {r['sync'] / results[1]['sync']:>6.2f} "
            f"{r['async']:>8.3f} {r['async'] / results[1]['async']:>6.2f}"
        )
    summary = {
        "bench": "subagents",
        "delay_s": DELAY,
        **{f"sync_{n}": round(r["sync"], 4) for n, r in results.items()},
        **{f"async_{n}": round(r["async"], 4) for n, r in results.items()},
        "ratio_sync_10": round(results[10]["sync"] / results[1]["sync"], 3),
        "ratio_async_10": round(results[10]["async"] / results[1]["async"], 3),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
