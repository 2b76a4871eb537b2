"""Instructions per agent step, bare `create_agent` against agentctl, counted by callgrind.

Run: .venv/bin/python bench/bench_step_instructions.py [--steps 50] [--modes invoke,ainvoke]
     [--without Summarization,ReplyCheck] [--kinds bare,agentctl]

CPU time on a shared 2-vCPU machine moves by several percent between runs; the number of
instructions executed does not (two runs of the same code agree within 0.1%). The script
re-runs itself under `valgrind --tool=callgrind` with collection off, builds both agents (the
bench's: default harness, one `step` tool, the instant scripted model, no checkpointer), warms
each with one run, then collects exactly one `steps`-step run of each contender in the same
process: a small C helper (compiled with the system's `cc` against valgrind's `callgrind.h`,
loaded with ctypes) toggles collection around the run and dumps the counts. `PYTHONHASHSEED=0`
keeps dict and set layouts the same from run to run.

`--without` leaves the named harness middleware (class names) out of agentctl's chain, to see
what each costs a step (the ablation of bench/RESULTS.md). `--dump DIR` keeps callgrind's
output files (one per contender and mode) for `callgrind_annotate`.

Prints instructions per step for each contender and mode, the ratio, and one JSON line.
Needs valgrind and a C compiler; about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HELPER = r"""
#include <valgrind/callgrind.h>
void collect(void) { CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; }
void dump(const char *name) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT(name); }
"""


def helper_library(folder: Path) -> ctypes.CDLL:
    source = folder / "cg.c"
    source.write_text(HELPER)
    library = folder / "cg.so"
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", library, source], check=True)
    return ctypes.CDLL(str(library))


def without(names: list[str]) -> None:
    """Leave the middleware whose class names are `names` out of agentctl's chain."""
    from runner.agent import build as build_module

    chain = build_module.middleware_chain

    def trimmed(*args: Any, **kwargs: Any) -> Any:
        return [m for m in chain(*args, **kwargs) if type(m).__name__ not in names]

    build_module.middleware_chain = trimmed  # type: ignore[assignment]


def measure(args: argparse.Namespace, out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import InstantModel, build, spec_file, steps_script

    lib = helper_library(out)
    if args.without:
        without(args.without.split(","))
    spec = spec_file(out, "steps")
    message = {"messages": [{"role": "user", "content": "go"}]}
    config = {"recursion_limit": 4 * args.steps + 20}
    for mode in args.modes.split(","):
        for kind in args.kinds.split(","):
            model = InstantModel(script=steps_script(args.steps))
            agent = build(kind, model, spec)

            def run(agent: Any = agent, mode: str = mode) -> None:
                if mode == "invoke":
                    agent.invoke(message, config)
                else:
                    asyncio.run(agent.ainvoke(message, config))

            run()
            model.stamps.clear()
            gc.collect()  # each run starts with the collector in the same state
            lib.collect()
            run()
            lib.dump(f"{kind}-{mode}".encode())
            assert len(model.stamps) == args.steps + 1


def totals(folder: Path) -> dict[str, int]:
    """Instructions of each dump, by the name it was dumped at."""
    counts: dict[str, int] = {}
    for path in folder.glob("callgrind.out.*"):
        text = path.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if trigger and total:
            counts[trigger.group(1)] = int(total.group(1))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--modes", default="invoke,ainvoke")
    parser.add_argument("--kinds", default="bare,agentctl")
    parser.add_argument("--without", default="", help="middleware class names to leave out")
    parser.add_argument("--dump", type=Path, help="keep callgrind's files in this folder")
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        measure(args, args.inside)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dump or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("callgrind.out.*"):
            stale.unlink()
        command = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            f"--callgrind-out-file={folder}/callgrind.out.%p",
            sys.executable,
            *sys.argv,
            "--inside",
            str(folder),
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run(command, check=True, env=env, stderr=subprocess.DEVNULL)
        counts = totals(folder)
    print(f"instructions per step, {args.steps} steps, no checkpointer (callgrind)")
    summary: dict[str, Any] = {"bench": "step-instructions", "steps": args.steps}
    if args.without:
        summary["without"] = args.without
    for mode in args.modes.split(","):
        row = {k: counts[f"{k}-{mode}"] / args.steps for k in args.kinds.split(",")}
        cells = "  ".join(f"{k} {v:>12,.0f}" for k, v in row.items())
        ratio = ""
        if "bare" in row and "agentctl" in row:
            summary[f"ratio_{mode}"] = round(row["agentctl"] / row["bare"], 4)
            ratio = f"  c/a {row['agentctl'] / row['bare']:.4f}"
        print(f"{mode:<8} {cells}{ratio}")
        summary.update({f"{k}_{mode}": round(v) for k, v in row.items()})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
