"""CPU time per agent step, bare `create_agent` against agentctl only, alternating.

Run: .venv/bin/python bench/bench_step_cpu.py [--steps 50] [--runs 40] [--modes invoke,ainvoke]

`bench_steps.py` runs three contenders and many configurations; on a shared machine its
without-checkpointer rows move by 0.05-0.1 between two runs of the same code. This script
measures the one figure issue 31 item 5 is judged by, as steadily as CPU time allows: the two
agents of `bench_steps.py` (default harness, one `step` tool, instant scripted model, no
checkpointer) built once, then `runs` runs of each, alternating which goes first, each run's
CPU time (the process's `process_time`) divided by its steps; the median of each, and their
ratio. Beside it, user and system time summed over all runs (`os.times`, whose 10 ms ticks are
too coarse for one run): the kernel's share (thread starts, futexes) is no instruction of the
process's, and callgrind does not count it. Run two checkouts' copies in turn to compare them
under the same load.

Prints one line per mode and one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import InstantModel, build, median, spec_file, steps_script

KINDS = ("bare", "agentctl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--modes", default="invoke,ainvoke")
    args = parser.parse_args()
    message = {"messages": [{"role": "user", "content": "go"}]}
    config = {"recursion_limit": 4 * args.steps + 20}
    summary: dict[str, Any] = {"bench": "step-cpu", "steps": args.steps, "runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        spec = spec_file(Path(tmp), "steps")
        for mode in args.modes.split(","):
            models = {k: InstantModel(script=steps_script(args.steps)) for k in KINDS}
            agents = {k: build(k, models[k], spec) for k in KINDS}
            cpu: dict[str, list[float]] = {k: [] for k in KINDS}
            user = dict.fromkeys(KINDS, 0.0)
            system = dict.fromkeys(KINDS, 0.0)
            for run in range(args.runs + 1):
                for kind in KINDS if run % 2 else KINDS[::-1]:
                    started, ticks = time.process_time(), os.times()
                    if mode == "invoke":
                        agents[kind].invoke(message, config)
                    else:
                        asyncio.run(agents[kind].ainvoke(message, config))
                    if run:  # the first run of each warms up
                        cpu[kind].append((time.process_time() - started) / args.steps)
                        user[kind] += os.times().user - ticks.user
                        system[kind] += os.times().system - ticks.system
            bare, ours = (median(cpu[k]) * 1e3 for k in KINDS)
            ratio = ours / bare
            print(f"{mode:<8} CPU ms a step: bare {bare:.4f}  agentctl {ours:.4f}  c/a {ratio:.3f}")
            scale = 1e3 / (args.runs * args.steps)  # seconds in all -> ms a step
            print(
                f"{'':<8} user c/a {user['agentctl'] / user['bare']:.3f}; system ms a step: "
                f"bare {system['bare'] * scale:.3f}  agentctl {system['agentctl'] * scale:.3f}"
            )
            summary[f"ratio_{mode}_user"] = round(user["agentctl"] / user["bare"], 4)
            summary.update({f"bare_{mode}_cpu_ms": bare, f"agentctl_{mode}_cpu_ms": ours})
            summary[f"ratio_{mode}"] = round(ratio, 4)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
