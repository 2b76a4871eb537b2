"""Benchmark `execute` (local_shell): the cost of one call, with and without the sandbox.

    .venv/bin/python bench/bench_execute.py [--quick]

Prints a table and, last, one JSON line with every figure (milliseconds).

- `true`: the fixed cost of a call (start the shell, or bwrap and the shell; wait; clean up);
- `seq 100000`: about 600 KB of output, cut at the default 100,000-byte cap;
each sync (`execute`) and async (`aexecute`), median of repeats, for `sandbox: none` and, when
bubblewrap works here, `sandbox: bubblewrap`. Run on a checkout without the `sandbox` setting,
it measures the one kind that exists (the "before").
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from runner.backends import LocalShellBackend

COMMANDS = {"true": "true", "100k lines": "seq 100000"}


def timed(function: Callable[[], Any], *, repeat: int) -> float:
    """Median wall time of `repeat` calls, after one warm-up call, in milliseconds."""
    function()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def _complete(loop: asyncio.AbstractEventLoop, start: Callable[[], Any]) -> Any:
    return loop.run_until_complete(start())


def sandboxes() -> list[str]:
    if "sandbox" not in inspect.signature(LocalShellBackend).parameters:
        return ["(no sandbox setting)"]
    from runner.backends.sandbox import bubblewrap_problem

    return ["none"] + (["bubblewrap"] if bubblewrap_problem() is None else [])


def bench(repeat: int) -> dict[str, float]:
    results: dict[str, float] = {}
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory(prefix="bench-execute-") as root:
        for kind in sandboxes():
            options: dict[str, Any] = {} if kind.startswith("(") else {"sandbox": kind}
            backend = LocalShellBackend(root, **options)
            for label, command in COMMANDS.items():
                sync = partial(backend.execute, command)
                results[f"{kind}|{label}|sync"] = timed(sync, repeat=repeat)
                async_ = partial(_complete, loop, partial(backend.aexecute, command))
                results[f"{kind}|{label}|async"] = timed(async_, repeat=repeat)
    loop.close()
    return results


def table(results: dict[str, float]) -> str:
    rows = [f"{'execute, one call':<34}{'sync':>10}{'async':>10}"]
    for kind in dict.fromkeys(key.split("|")[0] for key in results):
        for label in COMMANDS:
            sync, async_ = (results[f"{kind}|{label}|{mode}"] for mode in ("sync", "async"))
            rows.append(f"{f'{kind}, {label}':<34}{sync:>8.1f}ms{async_:>8.1f}ms")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = parser.parse_args(argv)
    results = bench(5 if args.quick else 41)
    print(table(results))
    print(json.dumps({"bench": "execute", **{k: round(v, 3) for k, v in results.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
