"""Remote subagents: what a hop to another host's Agent Server adds to a `task` call, and how
parallel remote calls scale against local ones.

Run: .venv/bin/python bench/bench_remote.py [--repeat 5] [--counts 1,5,10] [--delay 0.3]

One `agentctl serve` (in memory, on loopback) serves N child agents w0..wN-1; a parent agent,
run in this process with `runner.run.Session`, asks for N `task` calls in one message and then
answers. Every model replays a cassette: the children answer after `--delay` seconds, the parent
at once. Two contenders, interleaved, each run on a new thread:

- local: the children are inline subagents of the parent (same cassette replies, same delay);
- remote: the children are `remote:` subagents on the server;
- and, as the floor the server sets, `bare`: the same N child runs started straight from
  langgraph-sdk (`runs.stream` on a new thread each, in N threads), with no parent agent.

Prints, per N, the median seconds per run of each, the hop's added latency (remote - local),
each one's scaling (its time at N over its time at 1), and what the parent adds to the bare
runs (remote - local - bare: agentctl's own cost of the hop), then one JSON line. The first
run of each is a warm-up, left out. The machine is shared: compare columns, not absolute figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def write_agents(folder: Path, count: int, delay: float) -> tuple[Path, Path, Path]:
    """(the server's folder, the local parent's file, the remote parent's file)."""
    served = folder / "served"
    served.mkdir()
    children = []
    replies = {}
    for i in range(count):
        (served / f"w{i}.yaml").write_text(
            f"name: w{i}\ndescription: Worker {i}\nmodel: replay:w{i}.cassette.yaml\n"
            "prompt: You work.\ngeneral_purpose_agent: false\n",
            encoding="utf-8",
        )
        reply = f"- content: job {i} done\n  delay: {delay}\n"
        (served / f"w{i}.cassette.yaml").write_text(reply, encoding="utf-8")
        children.append(i)
        replies[f"w{i}"] = [{"content": f"job {i} done", "delay": delay}]
    calls = [
        {"name": "task", "args": {"description": f"job {i}", "subagent_type": f"w{i}"}}
        for i in children
    ]
    lead = [{"content": "Working.", "tool_calls": calls}, {"content": "All done."}]
    cassette = {"version": 1, "agents": {"lead": lead, **replies}}
    (folder / "lead.cassette.yaml").write_text(json.dumps(cassette), encoding="utf-8")
    head = (
        "name: lead\nmodel: replay:lead.cassette.yaml\nprompt: You lead.\n"
        "general_purpose_agent: false\nsubagents:\n"
    )
    local = head + "".join(
        f"  - name: w{i}\n    description: Worker {i}\n    prompt: You work.\n" for i in children
    )
    remote = head + "".join(
        f"  - name: w{i}\n    description: Worker {i}\n    remote:\n"
        f"      url: ${{BENCH_CHILD_URL}}\n      assistant: w{i}\n"
        for i in children
    )
    (folder / "local.yaml").write_text(local, encoding="utf-8")
    (folder / "remote.yaml").write_text(remote, encoding="utf-8")
    return served, folder / "local.yaml", folder / "remote.yaml"


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    from runner.serve.ports import free_port

    port = free_port("127.0.0.1")
    agentctl = str(Path(sys.executable).with_name("agentctl"))
    env = {**os.environ, "DATABASE_URL": "", "REDIS_URL": "", "LANGSMITH_TRACING": "false"}
    proc = subprocess.Popen(
        [agentctl, "serve", str(folder), "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/info", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("agentctl serve did not start")


def one_run(spec: Path) -> float:
    from runner.run import Session

    with Session(spec) as session:
        started = time.perf_counter()
        result = session.run("Do the jobs.")
        seconds = time.perf_counter() - started
    assert result.final is not None and result.final.content == "All done.", result.events
    return seconds


def bare_runs(url: str, count: int) -> float:
    """N child runs started from langgraph-sdk at once, each on a new thread: the server's own
    time for them."""
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)

    def one(i: int) -> None:
        for _ in client.runs.stream(
            str(uuid.uuid4()),
            f"w{i}",
            input={"messages": [{"role": "user", "content": f"job {i}"}]},
            stream_mode=["updates"],
            if_not_exists="create",
        ):
            pass

    started = time.perf_counter()
    with ThreadPoolExecutor(count) as pool:
        list(pool.map(one, range(count)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--counts", default="1,5,10")
    parser.add_argument("--delay", type=float, default=0.3)
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    figures: dict[str, Any] = {"delay": args.delay, "repeat": args.repeat, "by_count": {}}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGENTCTL_HOME"] = str(Path(tmp) / "home")
        print(
            f"{'N':>3}  {'local s':>8}  {'remote s':>9}  {'hop s':>7}  {'local x':>8}  "
            f"{'remote x':>9}  {'bare s':>7}  {'hop - bare':>10}"
        )
        base: dict[str, float] = {}
        for count in counts:
            folder = Path(tmp) / f"n{count}"
            folder.mkdir()
            served, local, remote = write_agents(folder, count, args.delay)
            proc, url = serve(served)
            os.environ["BENCH_CHILD_URL"] = url
            try:
                times: dict[str, list[float]] = {"local": [], "remote": [], "bare": []}
                for attempt in range(args.repeat + 1):
                    for name, spec in (("local", local), ("remote", remote)):
                        seconds = one_run(spec)
                        if attempt:  # the first is a warm-up
                            times[name].append(seconds)
                    seconds = bare_runs(url, count)
                    if attempt:
                        times["bare"].append(seconds)
            finally:
                os.killpg(proc.pid, signal.SIGINT)
                proc.wait(timeout=60)
            got = {name: median(values) for name, values in times.items()}
            base = base or got
            row = {
                "local": round(got["local"], 3),
                "remote": round(got["remote"], 3),
                "hop": round(got["remote"] - got["local"], 3),
                "local_scaling": round(got["local"] / base["local"], 2),
                "remote_scaling": round(got["remote"] / base["remote"], 2),
                "bare": round(got["bare"], 3),
                "hop_over_bare": round(got["remote"] - got["local"] - got["bare"], 3),
            }
            figures["by_count"][count] = row
            print(
                f"{count:>3}  {row['local']:>8.3f}  {row['remote']:>9.3f}  {row['hop']:>7.3f}  "
                f"{row['local_scaling']:>7.2f}x  {row['remote_scaling']:>8.2f}x  "
                f"{row['bare']:>7.3f}  {row['hop_over_bare']:>10.3f}"
            )
    figures["load_average"] = os.getloadavg()[0]
    print(json.dumps(figures))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
