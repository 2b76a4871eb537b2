"""Serving throughput: agentctl's agents against a bare `create_agent` graph, on the same engine,
at 1, 10 and 50 concurrent threads, on one server and on two.

Run: .venv/bin/python bench/bench_serve.py [--engine aegra|memory] [--pg URL] [--redis URL]
     [--concurrency 1,10,50] [--jobs 10]

Each run is a new thread (create the thread, then stream one run of it, `stream_mode="values"`):
the model replays a cassette of two replies, 0.3 s each (a `step` tool call, then the answer),
so a run is about 0.6 s of model time plus the harness, the engine and the database.
`concurrency` clients each do runs back to back; the figures:

- runs/s: runs finished over the wall time of the batch;
- time to first event: from asking for the run to its first event after `metadata` (the first
  `values`: the run has started), p50 and p99;
- CPU per run: the CPU time the server processes used over the batch, divided by its runs
  (steadier than the throughput on a loaded machine);
- RSS: the peak resident memory (VmHWM) of each server process after its batches.

Contenders: (c) agentctl (`agentctl serve` of an agent file with the default harness and the
`step` tool) and (a) the bare graph (`_serve_bare.py`, served by the same engine code,
`runner.serve.aegra.run_aegra` / `runner.serve.inmem.run_inmem`). With `--engine aegra` (the
default) every server runs on a fresh Postgres database and, with two servers, one Redis queue;
`--engine memory` has one server per contender. Servers run with `--jobs` runs at once each.
Targets (issue 21): agentctl within 0.9x of the bare graph's throughput; two servers at least
1.7x one. Prints a table and, last, one JSON line (with the load average: the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
AGENTCTL = str(Path(sys.executable).with_name("agentctl"))
LABELS = {"bare": "(a) create_agent", "agentctl": "(c) agentctl"}
REPLY_SECONDS = 0.3

CASSETTE = f"""\
- content: Taking the step.
  delay: {REPLY_SECONDS}
  tool_calls:
    - {{name: step, args: {{i: 1}}}}
- content: Done.
  delay: {REPLY_SECONDS}
"""


def agent_file(folder: Path) -> Path:
    (folder / "bench.cassette.yaml").write_text(CASSETTE, encoding="utf-8")
    path = folder / "agentctl.yaml"
    path.write_text(
        "name: agentctl\n"
        "description: The default harness and one tool\n"
        "model: replay:bench.cassette.yaml\n"
        "prompt: You take a step.\n"
        f"tools:\n  - import: {BENCH / '_common.py'}:step\n",
        encoding="utf-8",
    )
    return path


# ------------------------------------------------------------------------------------ servers


def serve_bare(args: argparse.Namespace) -> None:
    """The bare graph's server (this script, run with --serve-bare, in a process of its own)."""
    graph = f"{BENCH / '_serve_bare.py'}:graph"
    try:
        if args.db:
            from runner.serve.aegra import run_aegra

            run_aegra(
                {"bare": graph},
                {},
                host="127.0.0.1",
                port=args.port,
                jobs=args.jobs,
                database=args.db,
                redis=args.redis_url,
            )
        else:
            from runner.serve.inmem import run_inmem

            run_inmem(
                {"bare": graph},
                {},
                host="127.0.0.1",
                port=args.port,
                jobs=args.jobs,
                detect_blocking=False,
            )
    except KeyboardInterrupt:
        pass


def free_port() -> int:
    from runner.serve.ports import free_port

    return free_port("127.0.0.1")


def launch(
    kind: str, folder: Path, jobs: int, db: str | None, redis: str | None, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "LANGSMITH_TRACING": "false",
        "BENCH_SERVE_CASSETTE": str(folder / "bench.cassette.yaml"),
        "DATABASE_URL": "",
        "REDIS_URL": "",
    }
    if kind == "agentctl":
        command = [AGENTCTL, "serve", str(folder / "agentctl.yaml"), "--port", str(port)]
        command += ["--jobs", str(jobs)]
        command += ["--db", db] if db else ["--dev"]
        command += ["--redis", redis] if redis else []
    else:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve-bare"]
        command += ["--port", str(port), "--jobs", str(jobs)]
        command += ["--db", db] if db else []
        command += ["--redis-url", redis] if redis else []
    with log.open("ab") as out:
        proc = subprocess.Popen(
            command,
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, f"http://127.0.0.1:{port}"


def wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{url}/info", timeout=2) as reply,
        ):
            if reply.status == 200:
                return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise SystemExit(f"a server did not start:\n{log.read_text(errors='replace')[-3000:]}")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@contextlib.contextmanager
def fresh_database(server: str) -> Iterator[str]:
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"agentctl_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def servers(
    kind: str, count: int, folder: Path, args: argparse.Namespace
) -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    with contextlib.ExitStack() as stack:
        db = redis = None
        if args.engine == "aegra":
            db = stack.enter_context(fresh_database(args.pg))
            redis = args.redis
            # Keys of these servers' own on the shared Redis: a queue per set of servers.
            prefix = f"agentctl-bench:{uuid.uuid4().hex[:8]}:"
            os.environ["WORKER_QUEUE_KEY"] = f"{prefix}jobs"
            os.environ["REDIS_CHANNEL_PREFIX"] = f"{prefix}run:"
        log = folder / f"serve-{kind}-{count}.log"
        started = [launch(kind, folder, args.jobs, db, redis, log) for _ in range(count)]
        try:
            for proc, url in started:
                wait_ready(proc, url, log)
            yield started
        finally:
            for proc, _ in started:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
            for proc, _ in started:
                try:
                    proc.wait(timeout=90)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)


# ------------------------------------------------------------------------------------- clients


async def one_run(client: Any, graph: str) -> tuple[float, float]:
    """(seconds to the first event after `metadata`, seconds to the end) of one run."""
    thread = (await client.threads.create())["thread_id"]
    message = {"messages": [{"role": "user", "content": "go"}]}
    started = time.perf_counter()
    first = None
    last: Any = None
    async for part in client.runs.stream(thread, graph, input=message, stream_mode="values"):
        if part.event == "metadata":
            continue
        if first is None:
            first = time.perf_counter() - started
        if part.event == "values":
            last = part.data
        if part.event == "error":
            raise RuntimeError(f"run failed: {part.data}")
    if not last or last["messages"][-1]["content"] != "Done.":
        raise RuntimeError(f"the run did not finish: {last}")
    return first or float("nan"), time.perf_counter() - started


async def batch(
    urls: list[str], pids: list[int], graph: str, concurrency: int, runs: int
) -> dict[str, float]:
    from langgraph_sdk import get_client

    clients = [get_client(url=url, timeout=300) for url in urls]
    firsts: list[float] = []
    left = runs

    async def worker(index: int) -> None:
        nonlocal left
        client = clients[index % len(clients)]
        while left > 0:
            left -= 1
            first, _ = await one_run(client, graph)
            firsts.append(first)

    # Warm-up: every server builds its graph and opens its connections.
    await asyncio.gather(*(one_run(c, graph) for c in clients for _ in range(2)))
    cpu = sum(map(cpu_seconds, pids))
    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    wall = time.perf_counter() - started
    cpu = sum(map(cpu_seconds, pids)) - cpu
    firsts.sort()
    return {
        "runs": runs,
        "runs_per_s": runs / wall,
        "cpu_ms_per_run": 1000 * cpu / runs,
        "ttfe_p50_ms": 1000 * firsts[len(firsts) // 2],
        "ttfe_p99_ms": 1000 * firsts[min(len(firsts) - 1, int(len(firsts) * 0.99))],
    }


def runs_for(concurrency: int) -> int:
    return max(20, 4 * concurrency)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=["aegra", "memory"], default="aegra")
    parser.add_argument(
        "--pg",
        default=os.environ.get("AGENTCTL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument(
        "--redis", default=os.environ.get("AGENTCTL_TEST_REDIS", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--concurrency", default="1,10,50")
    parser.add_argument("--jobs", type=int, default=10)
    # The bare graph's own server (started by this script):
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args)
        return

    levels = [int(c) for c in args.concurrency.split(",")]
    counts = [1, 2] if args.engine == "aegra" else [1]
    load_before = os.getloadavg()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agentctl-bench-serve-") as tmp:
        folder = Path(tmp)
        agent_file(folder)
        for count in counts:
            for kind in ("bare", "agentctl"):
                with servers(kind, count, folder, args) as started:
                    urls = [url for _, url in started]
                    pids = [proc.pid for proc, _ in started]
                    for concurrency in levels:
                        figures = asyncio.run(
                            batch(urls, pids, kind, concurrency, runs_for(concurrency) * count)
                        )
                        row = {"contender": kind, "servers": count, "concurrency": concurrency}
                        results.append(row | figures)
                        print(
                            f"{LABELS[kind]:<18} servers={count} threads={concurrency:<3} "
                            f"{figures['runs_per_s']:6.2f} runs/s  first event p50 "
                            f"{figures['ttfe_p50_ms']:5.0f} ms p99 "
                            f"{figures['ttfe_p99_ms']:5.0f} ms  CPU "
                            f"{figures['cpu_ms_per_run']:4.0f} ms/run",
                            flush=True,
                        )
                    rss = [peak_rss_mb(proc.pid) for proc, _ in started]
                    for row in results:
                        if row["contender"] == kind and row["servers"] == count:
                            row["rss_mb"] = rss
                    print(
                        f"{LABELS[kind]:<18} servers={count} peak RSS "
                        + ", ".join(f"{r:.0f} MB" for r in rss)
                    )
    load_after = os.getloadavg()

    def rate(kind: str, count: int, concurrency: int) -> float:
        return next(
            r["runs_per_s"]
            for r in results
            if (r["contender"], r["servers"], r["concurrency"]) == (kind, count, concurrency)
        )

    print()
    print(
        f"{'threads':>8} {'servers':>8} {'c/a throughput':>15}"
        + (f" {'2 servers / 1 (c)':>18}" if 2 in counts else "")
    )
    for concurrency in levels:
        for count in counts:
            ratio = rate("agentctl", count, concurrency) / rate("bare", count, concurrency)
            scale = ""
            if 2 in counts and count == 2:
                scaled = rate("agentctl", 2, concurrency) / rate("agentctl", 1, concurrency)
                scale = f" {scaled:>17.2f}x"
            print(f"{concurrency:>8} {count:>8} {ratio:>14.2f}x{scale}")
    print(
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
        f"({os.cpu_count()} CPUs)"
    )
    print(
        json.dumps(
            {
                "engine": args.engine,
                "jobs": args.jobs,
                "reply_seconds": REPLY_SECONDS,
                "load_before": load_before,
                "load_after": load_after,
                "python": sys.version.split()[0],
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
