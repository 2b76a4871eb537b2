"""Overhead per agent step: (a) bare create_agent, (b) deepagents, (c) agentctl, side by side.

Run: .venv/bin/python bench/bench_steps.py [--repeat 5] [--quick] [--durable-only]

One step is a model call plus a tool call; the model answers at once (it reads only the last
message), so a step's time is the harness's overhead. The three agents run the same script with
the same tool, interleaved in rotating order, for 50 and 500 steps, under `invoke` and `ainvoke`,
without and with a checkpointer (InMemorySaver), and on a SQLite checkpointer with
`durability="sync"` as `agentctl run` uses it (WAL, synchronous=NORMAL; SqliteSaver under
`invoke`, AsyncSqliteSaver under `ainvoke`; agentctl journals each tool call there). Also:
the time to build each agent, and the cost of a step at the start and at the end of a 500-step
run (must not grow where avoidable). `--durable-only` runs the SQLite rows alone.

Prints a table (median ms per step; ratios c/a and c/b), the same for the process's CPU time
per step in the rows without SQLite (less moved by other processes' load than wall time), and,
last, one JSON line. A 50-step
run is repeated three times as often as a 500-step one.
Targets (issue 10): c/a <= 1.5 and c/b < 1 under invoke and ainvoke; flat per-step cost.
Target (issue 17): on SQLite with durability="sync", c/a within 1.2 under invoke and ainvoke.
Target (issue 21): c/a <= 1.15 under ainvoke (a server runs everything async).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    CONTENDERS,
    LABELS,
    InstantModel,
    build,
    median,
    rotations,
    spec_file,
    steps_script,
    timed,
)

WINDOW = 50  # steps compared at the start and the end of a long run


def run_once(
    agent: Any,
    model: InstantModel,
    steps: int,
    mode: str,
    thread: str | None,
    cpu: list[float] | None = None,
    **kwargs: Any,
) -> float:
    """Wall seconds of one run; its CPU seconds (the process's, all threads) go to `cpu`."""
    config: dict[str, Any] = {"recursion_limit": 4 * steps + 20}
    if thread is not None:
        config["configurable"] = {"thread_id": thread}
    message: Any = {"messages": [{"role": "user", "content": "go"}]}
    model.stamps.clear()
    started = time.process_time()
    if mode == "invoke":
        seconds = timed(lambda: agent.invoke(message, config, **kwargs))
    else:
        seconds = timed(lambda: asyncio.run(agent.ainvoke(message, config)))
    if cpu is not None:
        cpu.append(time.process_time() - started)
    assert len(model.stamps) == steps + 1, f"expected {steps + 1} model calls"
    return seconds


def growth(stamps: list[float]) -> tuple[float, float]:
    """Median step time over the first and the last WINDOW steps of one run."""
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    return median(gaps[:WINDOW]), median(gaps[-WINDOW:])


def bench_build(spec: Path, repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in CONTENDERS}
    for order in rotations(repeat):
        for kind in order:
            model = InstantModel(script=steps_script(1))
            times[kind].append(timed(lambda k=kind, m=model: build(k, m, spec)))
    return {k: median(v) for k, v in times.items()}


def bench_steps(spec: Path, repeat: int, sizes: list[int]) -> dict[str, Any]:
    from langgraph.checkpoint.memory import InMemorySaver

    results: dict[str, Any] = {}
    threads = itertools.count()
    for steps, mode, saver in itertools.product(sizes, ("invoke", "ainvoke"), (False, True)):
        key = f"{steps}_{mode}_{'saver' if saver else 'none'}"
        models = {k: InstantModel(script=steps_script(steps)) for k in CONTENDERS}
        agents = {
            k: build(k, models[k], spec, checkpointer=InMemorySaver() if saver else None)
            for k in CONTENDERS
        }
        times: dict[str, list[float]] = {k: [] for k in CONTENDERS}
        cpu: dict[str, list[float]] = {k: [] for k in CONTENDERS}
        starts: dict[str, list[float]] = {k: [] for k in CONTENDERS}
        ends: dict[str, list[float]] = {k: [] for k in CONTENDERS}
        # Short runs are noisier: give them more repeats (a 50-step run takes a tenth of a second).
        for order in rotations(repeat * max(1, 150 // steps)):
            for kind in order:
                thread = f"t{next(threads)}" if saver else None
                seconds = run_once(agents[kind], models[kind], steps, mode, thread, cpu[kind])
                times[kind].append(seconds / steps)
                if steps >= 4 * WINDOW:
                    first, last = growth(models[kind].stamps)
                    starts[kind].append(first)
                    ends[kind].append(last)
        for kind in CONTENDERS:
            results[f"{kind}_{key}_ms"] = median(times[kind]) * 1e3
            results[f"{kind}_{key}_cpu_ms"] = median(cpu[kind]) / steps * 1e3
            if starts[kind]:
                results[f"{kind}_{key}_first_ms"] = median(starts[kind]) * 1e3
                results[f"{kind}_{key}_last_ms"] = median(ends[kind]) * 1e3
    return results


def sqlite_saver(folder: Path, name: str) -> Any:
    """A LangGraph SqliteSaver on a fresh file, set up as agentctl's thread database is (WAL,
    synchronous=NORMAL); agentctl's tool journal lives in the same database."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(folder / f"{name}.db"), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return SqliteSaver(conn)


async def _async_sqlite_run(
    kind: str, model: InstantModel, spec: Path, folder: Path, steps: int
) -> float:
    """One `ainvoke` run on a fresh AsyncSqliteSaver (it belongs to the loop that made it);
    only the run is timed."""
    import time

    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with aiosqlite.connect(str(folder / f"{kind}-async.db")) as conn:
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        agent = build(kind, model, spec, checkpointer=AsyncSqliteSaver(conn))
        config = {
            "recursion_limit": 4 * steps + 20,
            "configurable": {"thread_id": f"t{time.perf_counter_ns()}"},
        }
        model.stamps.clear()
        started = time.perf_counter()
        await agent.ainvoke(
            {"messages": [{"role": "user", "content": "go"}]}, config, durability="sync"
        )
        seconds = time.perf_counter() - started
    assert len(model.stamps) == steps + 1, f"expected {steps + 1} model calls"
    return seconds


def bench_durable(spec: Path, repeat: int, sizes: list[int]) -> dict[str, Any]:
    """Per-step cost on a SQLite checkpointer with `durability="sync"`, as `agentctl run`
    runs: LangGraph's SqliteSaver under `invoke`, its AsyncSqliteSaver under `ainvoke`.
    agentctl journals every tool call there; the bare agent and deepagents do not."""
    results: dict[str, Any] = {}
    threads = itertools.count()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for steps in sizes:
            models = {k: InstantModel(script=steps_script(steps)) for k in CONTENDERS}
            agents = {
                k: build(k, models[k], spec, checkpointer=sqlite_saver(folder, k))
                for k in CONTENDERS
            }
            times: dict[str, list[float]] = {f"{k}_{m}": [] for k in CONTENDERS for m in MODES}
            for order in rotations(repeat * max(1, 150 // steps)):
                for kind in order:
                    thread = f"t{next(threads)}"
                    seconds = run_once(
                        agents[kind], models[kind], steps, "invoke", thread, durability="sync"
                    )
                    times[f"{kind}_invoke"].append(seconds / steps)
                    seconds = asyncio.run(
                        _async_sqlite_run(kind, models[kind], spec, folder, steps)
                    )
                    times[f"{kind}_ainvoke"].append(seconds / steps)
            for kind, mode in itertools.product(CONTENDERS, MODES):
                results[f"{kind}_{steps}_{mode}_sqlite_ms"] = median(times[f"{kind}_{mode}"]) * 1e3
    return results


MODES = ("invoke", "ainvoke")


def durable_table(results: dict[str, Any], sizes: list[int]) -> str:
    rows = [f"{'ms per step':<32}" + "".join(f"{LABELS[k]:>18}" for k in CONTENDERS) + "    c/a"]
    for steps, mode in itertools.product(sizes, MODES):
        a, b, c = (results[f"{k}_{steps}_{mode}_sqlite_ms"] for k in CONTENDERS)
        label = f"{steps} steps, {mode}, SQLite sync"
        rows.append(f"{label:<32}{a:>18.3f}{b:>18.3f}{c:>18.3f}{c / a:>7.2f}")
    return "\n".join(rows)


def table(results: dict[str, Any], builds: dict[str, float], sizes: list[int]) -> str:
    head = f"{'ms per step':<32}" + "".join(f"{LABELS[k]:>18}" for k in CONTENDERS)
    rows = [head + f"{'c/a':>7}{'c/b':>7}"]
    for steps, mode, saver in itertools.product(sizes, ("invoke", "ainvoke"), ("none", "saver")):
        key = f"{steps}_{mode}_{saver}"
        a, b, c = (results[f"{k}_{key}_ms"] for k in CONTENDERS)
        label = f"{steps} steps, {mode}" + (", checkpointer" if saver == "saver" else "")
        rows.append(f"{label:<32}{a:>18.3f}{b:>18.3f}{c:>18.3f}{c / a:>7.2f}{c / b:>7.2f}")
    for steps, mode in itertools.product(sizes, MODES):
        key = f"{steps}_{mode}_sqlite"
        if f"bare_{key}_ms" not in results:
            continue
        a, b, c = (results[f"{k}_{key}_ms"] for k in CONTENDERS)
        label = f"{steps} steps, {mode}, SQLite sync"
        rows.append(f"{label:<32}{a:>18.3f}{b:>18.3f}{c:>18.3f}{c / a:>7.2f}{c / b:>7.2f}")
    rows += ["", "CPU ms per step (the process's CPU time, which other processes' load moves less)"]
    for steps, mode, saver in itertools.product(sizes, ("invoke", "ainvoke"), ("none", "saver")):
        key = f"{steps}_{mode}_{saver}"
        a, b, c = (results[f"{k}_{key}_cpu_ms"] for k in CONTENDERS)
        label = f"{steps} steps, {mode}" + (", checkpointer" if saver == "saver" else "")
        rows.append(f"{label:<32}{a:>18.3f}{b:>18.3f}{c:>18.3f}{c / a:>7.2f}{c / b:>7.2f}")
    a, b, c = (builds[k] * 1e3 for k in CONTENDERS)
    label = "build the agent (ms)"
    rows.append(f"{label:<32}{a:>18.1f}{b:>18.1f}{c:>18.1f}{c / a:>7.2f}{c / b:>7.2f}")
    long = max(sizes)
    rows += ["", f"per-step ms, first vs last {WINDOW} steps of a {long}-step run"]
    rows.append(" " * 32 + "".join(f"{LABELS[k]:>18}" for k in CONTENDERS))
    for mode, saver in itertools.product(("invoke", "ainvoke"), ("none", "saver")):
        key = f"{long}_{mode}_{saver}"
        if f"bare_{key}_first_ms" not in results:
            continue
        cells = "".join(
            f"{results[f'{k}_{key}_first_ms']:>7.3f} ->{results[f'{k}_{key}_last_ms']:>7.3f}"
            for k in CONTENDERS
        )
        label = mode + (", checkpointer" if saver == "saver" else "")
        rows.append(f"{label:<32}{cells}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 repeats, 50 and 200 steps")
    parser.add_argument(
        "--durable-only", action="store_true", help="only the SQLite rows (durability=sync)"
    )
    parser.add_argument("--sizes", help="comma-separated step counts instead of 50,500")
    args = parser.parse_args()
    repeat = 2 if args.quick else args.repeat
    sizes = [50, 200] if args.quick else [50, 500]
    if args.sizes:
        sizes = [int(size) for size in args.sizes.split(",") if size]
    with tempfile.TemporaryDirectory() as tmp:
        spec = spec_file(Path(tmp), "steps")
        if args.durable_only:
            results = bench_durable(spec, repeat, sizes)
            print(f"median of {repeat} runs; SQLite checkpointer, durability=sync")
            print(durable_table(results, sizes))
            print(json.dumps({"bench": "steps-durable", **results}))
            return
        builds = bench_build(spec, max(repeat, 5))
        results = bench_steps(spec, repeat, sizes)
        results.update(bench_durable(spec, repeat, sizes))
    print(f"instant scripted model, one `step` tool call per step; median of {repeat} runs")
    print(table(results, builds, sizes))
    summary: dict[str, Any] = {"bench": "steps", "repeat": repeat}
    summary.update({f"build_{k}_ms": round(v * 1e3, 2) for k, v in builds.items()})
    summary.update({k: round(v, 4) for k, v in results.items()})
    for steps, mode in itertools.product(sizes, MODES):
        key = f"{steps}_{mode}_sqlite"
        summary[f"ratio_ca_{key}"] = round(
            results[f"agentctl_{key}_ms"] / results[f"bare_{key}_ms"], 3
        )
    for steps, mode in itertools.product(sizes, ("invoke", "ainvoke")):
        key = f"{steps}_{mode}_none"
        c = results[f"agentctl_{key}_ms"]
        summary[f"ratio_ca_{key}"] = round(c / results[f"bare_{key}_ms"], 3)
        summary[f"ratio_cb_{key}"] = round(c / results[f"deepagents_{key}_ms"], 3)
        cpu = results[f"agentctl_{key}_cpu_ms"] / results[f"bare_{key}_cpu_ms"]
        summary[f"ratio_ca_{key}_cpu"] = round(cpu, 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
