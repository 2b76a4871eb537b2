"""Postgres threads: `agentctl threads` / `threads show` on many threads, and a long thread's
database size with the server's autovacuum off.

Run: .venv/bin/python bench/bench_pg_threads.py [--server URL] [--threads 1000,5000]
     [--turns 100,300] [--repeat 3]

`--server` is a Postgres where databases may be created (default: `$AGENTCTL_TEST_PG`, else
postgresql://postgres@127.0.0.1:5432/postgres); every part runs on a scratch database of its
own, dropped at the end.

- Many threads: one real 5-turn thread (agentctl's `Session`, instant scripted model, a turn =
  message, one `step` tool call, answer) copied in SQL into databases of each `--threads` count;
  `agentctl threads list` and `threads show ID` in fresh processes, median of `--repeat` (wall
  time and the process's CPU time, which a busy machine disturbs less), and
  whether the command imported any LangChain or LangGraph module (`-X importtime`).
- A long thread: the same turns, one thread growing to each `--turns` length, with autovacuum
  off for the checkpoint tables (`ALTER TABLE ... SET (autovacuum_enabled = false,
  toast.autovacuum_enabled = false)`): the size of LangGraph's checkpoint tables (with their
  TOAST tables and indexes) for (a) bare `create_agent` on a `PostgresSaver` (no pruning), (c)
  agentctl with its retention and its own vacuum, and (c-) agentctl with retention but its
  vacuum taken away (as before issue 31), (c) and (c-) interleaved turn by turn in one process;
  the turn's median and slowest wall time over the last fifth of each stretch, the slowest of
  those in which the collector made no full collection (one examines every object of the
  process, its libraries included, 50-80 ms, whoever's turn it falls in: `FullCollections`) and
  how many turns of the stretch had one, and the vacuums agentctl ran.

Prints the tables and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _common import FullCollections, InstantModel, median, spec_file
from bench_threads import turn_script

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
AGENTCTL = str(Path(sys.executable).with_name("agentctl"))
TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]
HEAVY = ("langchain", "langchain_core", "langgraph")


@contextmanager
def scratch(server: str) -> Iterator[str]:
    import psycopg

    name = f"agentctl_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def timed_process(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process, its stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed:\n{done.stdout}\n{done.stderr}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu, done.stderr


def heavy_imports(command: list[str]) -> list[str]:
    """The LangChain / LangGraph modules `command` (an agentctl command line) imports."""
    *_, stderr = timed_process([sys.executable, "-X", "importtime", "-m", "runner", *command[1:]])
    modules = [line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines()]
    return sorted({m for m in modules if m.split(".")[0] in HEAVY})


def one_thread(folder: Path, url: str) -> str:
    from runner.run import Session

    spec = spec_file(folder, "turns", tool_ref=f"{BENCH / '_common.py'}:step")
    with Session(spec, model=InstantModel(script=turn_script), db=url) as session:
        thread = None
        for i in range(5):
            thread = session.run(f"message {i}", thread_id=thread).thread_id
    return str(thread)


def copy_threads(url: str, thread: str, first: int, last: int) -> None:
    """Copies `thread`-`first` ... `thread`-`last - 1` of the thread, in SQL."""
    import psycopg

    with psycopg.connect(url) as conn:
        copies = [f"{thread}-{n}" for n in range(first, last)]
        for table in ("agentctl_threads", "agentctl_thread_settings", *TABLES):
            columns = [
                row[0]
                for row in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                    "AND table_schema = current_schema() ORDER BY ordinal_position",
                    (table,),
                )
            ]
            rest = ", ".join(c for c in columns if c != "thread_id")
            conn.execute(
                f"INSERT INTO {table} (thread_id, {rest}) SELECT c, {rest} FROM {table}, "
                "unnest(%s::text[]) c WHERE thread_id = %s",
                (copies, thread),
            )


def bench_many_threads(server: str, counts: list[int], repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, scratch(server) as url:
        thread = one_thread(Path(tmp), url)
        have = 1
        for count in counts:
            copy_threads(url, thread, have, count)
            have = count
            commands = {
                "list": [AGENTCTL, "threads", "list", "--db", url],
                "show": [AGENTCTL, "threads", "show", thread, "--db", url],
            }
            for name, command in commands.items():
                times = [timed_process(command) for _ in range(repeat)]
                results[f"{name}_{count}_s"] = median([t[0] for t in times])
                results[f"{name}_{count}_cpu_s"] = median([t[1] for t in times])
                results[f"{name}_{count}_heavy"] = heavy_imports(command)
            print(f"  ... {count} threads done", file=sys.stderr, flush=True)
    return results


def autovacuum_off(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in TABLES:
            conn.execute(
                f"ALTER TABLE {table} SET (autovacuum_enabled = false, "
                "toast.autovacuum_enabled = false)"
            )


def table_bytes(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(to_regclass(t)))::bigint FROM unnest(%s::text[]) t",
            (TABLES,),
        ).fetchone()
    return int(row[0]) if row else 0


class Bare:
    label = "(a) create_agent + PostgresSaver"

    def __init__(self, folder: Path, url: str) -> None:
        import psycopg
        from _common import step
        from langchain.agents import create_agent
        from langgraph.checkpoint.postgres import PostgresSaver

        self.conn = psycopg.connect(url, autocommit=True, prepare_threshold=0)
        saver = PostgresSaver(self.conn)  # type: ignore[arg-type]
        saver.setup()
        autovacuum_off(url)
        self.agent = create_agent(
            InstantModel(script=turn_script), tools=[step], checkpointer=saver
        )
        self.config: Any = {"configurable": {"thread_id": "t"}}
        self.vacuums = 0
        self.durability: Any = None  # LangGraph's default ("async")

    def turn(self, text: str) -> None:
        self.agent.invoke(
            {"messages": [{"role": "user", "content": text}]},
            self.config,
            durability=self.durability,
        )

    def close(self) -> None:
        self.conn.close()


class Agentctl:
    label = "(c) agentctl"

    def __init__(self, folder: Path, url: str, *, vacuum: bool = True) -> None:
        from runner.run import Session

        spec = spec_file(folder, "turns", tool_ref=f"{BENCH / '_common.py'}:step")
        self.session = Session(spec, model=InstantModel(script=turn_script), db=url)
        self.session.home.checkpointer  # noqa: B018 (creates LangGraph's tables)
        autovacuum_off(url)
        self.retention: Any = self.session.home.retention
        if not vacuum:
            self.retention.url = None
        self.thread: str | None = None

    @property
    def vacuums(self) -> int:
        return len(self.retention.vacuumed)

    def turn(self, text: str) -> None:
        result = self.session.run(text, thread_id=self.thread)
        assert result.error is None, result.error
        self.thread = result.thread_id

    def close(self) -> None:
        self.session.close()


def bench_long_thread(server: str, sizes: list[int], *, bare: bool = True) -> dict[str, Any]:
    """Bare alone (unless not `bare`), then agentctl with and without its vacuum interleaved
    turn by turn (each on a database of its own, in one process), so the vacuum's cost shows
    against the same load."""
    results: dict[str, Any] = {}
    groups: list[dict[str, Any]] = [
        {"bare": lambda f, u: Bare(f, u)},
        {
            "agentctl": lambda f, u: Agentctl(f, u),
            "novacuum": lambda f, u: Agentctl(f, u, vacuum=False),
        },
    ][0 if bare else 1 :]
    for makers in groups:
        with ExitStack() as stack:
            contenders: dict[str, Any] = {}
            urls: dict[str, str] = {}
            for kind, make in makers.items():
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                urls[kind] = stack.enter_context(scratch(server))
                contenders[kind] = make(folder, urls[kind])
                stack.callback(contenders[kind].close)
            done = 0
            full = stack.enter_context(FullCollections())
            for size in sizes:
                times: dict[str, list[float]] = {kind: [] for kind in contenders}
                collected: dict[str, list[bool]] = {kind: [] for kind in contenders}
                for i in range(done, size):
                    order = list(contenders.items())
                    for kind, contender in order if i % 2 else reversed(order):
                        before = full.count
                        started = time.perf_counter()
                        contender.turn(f"message {i}")
                        times[kind].append(time.perf_counter() - started)
                        collected[kind].append(full.count > before)
                for kind, contender in contenders.items():
                    fifth = max(len(times[kind]) // 5, 1)
                    last = times[kind][-fifth:]  # the stretch's last fifth
                    results[f"{kind}_{size}_turn_ms"] = median(last) * 1e3
                    results[f"{kind}_{size}_max_ms"] = max(last) * 1e3
                    # the turns in which the collector ran a full collection (`FullCollections`)
                    results[f"{kind}_{size}_full_gcs"] = sum(collected[kind])
                    gcs = collected[kind][-fifth:]
                    quiet = [t for t, c in zip(last, gcs, strict=True) if not c]
                    results[f"{kind}_{size}_max_no_gc_ms"] = max(quiet, default=0.0) * 1e3
                    if isinstance(contender, Agentctl):
                        contender.retention.wait()
                    results[f"{kind}_{size}_mb"] = table_bytes(urls[kind]) / 1e6
                    results[f"{kind}_{size}_vacuums"] = contender.vacuums
                done = size
                print(f"  ... {', '.join(contenders)}: {size} turns", file=sys.stderr, flush=True)
    return results


def bench_short_thread(server: str, warm: int, measured: int) -> dict[str, Any]:
    """One more turn on a short thread: bare `create_agent` on a `PostgresSaver` with
    agentctl's durability ("sync") against agentctl's `Session`, each on a scratch database,
    `warm` turns first, then `measured` turns interleaved (alternating which goes first); the
    median wall and CPU time (the process's, both in this process) of a turn, and the psycopg
    statements (by kind), explicit transactions and commits per turn, counted as
    tests/threads/test_pg_turn.py counts them."""
    sys.path.insert(0, str(ROOT))
    from tests.threads.statements import Traced  # what tests/threads/test_pg_turn.py counts

    counted = Traced()
    results: dict[str, Any] = {}
    with ExitStack() as stack:
        contenders: dict[str, Any] = {}
        for kind in ("bare", "agentctl"):
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            url = stack.enter_context(scratch(server))
            contender: Any = Bare(folder, url) if kind == "bare" else Agentctl(folder, url)
            if kind == "bare":
                contender.durability = "sync"
            contenders[kind] = contender
            stack.callback(contender.close)
        for i in range(warm):
            for contender in contenders.values():
                contender.turn(f"message {i}")
        wall: dict[str, list[float]] = {kind: [] for kind in contenders}
        cpu: dict[str, list[float]] = {kind: [] for kind in contenders}
        statements: dict[str, list[int]] = {kind: [] for kind in contenders}
        transactions: dict[str, list[int]] = {kind: [] for kind in contenders}
        commits: dict[str, list[int]] = {kind: [] for kind in contenders}
        kinds: dict[str, Counter[str]] = {kind: Counter() for kind in contenders}
        for i in range(warm, warm + measured):
            order = list(contenders.items())
            for kind, contender in order if i % 2 else reversed(order):
                with counted.counting():
                    started, started_cpu = time.perf_counter(), time.process_time()
                    contender.turn(f"message {i}")
                    wall[kind].append(time.perf_counter() - started)
                    cpu[kind].append(time.process_time() - started_cpu)
                statements[kind].append(sum(counted.kinds.values()))
                transactions[kind].append(counted.transactions)
                commits[kind].append(counted.commits)
                kinds[kind] += counted.kinds
        for kind in contenders:
            results[f"short_{kind}_ms"] = median(wall[kind]) * 1e3
            results[f"short_{kind}_cpu_ms"] = median(cpu[kind]) * 1e3
            results[f"short_{kind}_statements"] = median(statements[kind])
            results[f"short_{kind}_transactions"] = median(transactions[kind])
            results[f"short_{kind}_commits"] = median(commits[kind])
            results[f"short_{kind}_kinds"] = {
                name: round(count / measured, 1) for name, count in kinds[kind].most_common()
            }
    return results


def short_table(short: dict[str, Any], warm: int, measured: int) -> str:
    rows = [
        f"one more turn on a {warm}-turn thread, median of {measured}",
        f"{'':<34}{'wall ms':>9}{'CPU ms':>9}{'statements':>12}{'transactions':>14}{'commits':>9}",
    ]
    for kind, label in (("bare", "(a) create_agent + PostgresSaver"), ("agentctl", "(c)")):
        rows.append(
            f"{label:<34}{short[f'short_{kind}_ms']:>9.1f}{short[f'short_{kind}_cpu_ms']:>9.1f}"
            f"{short[f'short_{kind}_statements']:>12}{short[f'short_{kind}_transactions']:>14}"
            f"{short[f'short_{kind}_commits']:>9}"
        )
    ratio = short["short_agentctl_ms"] / short["short_bare_ms"]
    ratio_cpu = short["short_agentctl_cpu_ms"] / short["short_bare_cpu_ms"]
    rows.append(f"c/a wall {ratio:.2f}, CPU {ratio_cpu:.2f}")
    mine = ", ".join(f"{name} {count:g}" for name, count in short["short_agentctl_kinds"].items())
    rows.append(f"(c)'s statements a turn: {mine}")
    return "\n".join(rows)


def tables(many: dict[str, Any], long: dict[str, Any], counts: list[int], sizes: list[int]) -> str:
    rows = [
        f"{'threads in the DB':<20}{'list s':>9}{'CPU s':>9}{'show s':>9}{'CPU s':>9}"
        "  LangChain/LangGraph imported"
    ]
    for count in counts:
        heavy = many[f"list_{count}_heavy"] + many[f"show_{count}_heavy"]
        rows.append(
            f"{count:<20}"
            + "".join(
                f"{many[f'{name}_{count}{kind}_s']:>9.3f}"
                for name in ("list", "show")
                for kind in ("", "_cpu")
            )
            + "  "
            + (", ".join(sorted(set(heavy))[:3]) + " ..." if heavy else "none")
        )
    rows += [
        "",
        "checkpoint tables (MB) with autovacuum off; turn ms: median / slowest of the last fifth"
        " / slowest of those without a full collection (turns with one over the stretch)",
        f"{'turns':<8}{'(a) MB':>9}{'(c) MB':>9}{'(c-) MB':>9}{'vacuums':>9}"
        f"{'(a) ms':>22}{'(c) ms':>22}{'(c-) ms':>22}",
    ]
    for size in sizes:

        def ms(kind: str, size: int = size) -> str:
            if f"{kind}_{size}_turn_ms" not in long:
                return "-"
            return (
                f"{long[f'{kind}_{size}_turn_ms']:.0f} / {long[f'{kind}_{size}_max_ms']:.0f}"
                f" / {long[f'{kind}_{size}_max_no_gc_ms']:.0f} ({long[f'{kind}_{size}_full_gcs']})"
            )

        bare_mb = f"{long[f'bare_{size}_mb']:.1f}" if f"bare_{size}_mb" in long else "-"
        rows.append(
            f"{size:<8}{bare_mb:>9}{long[f'agentctl_{size}_mb']:>9.1f}"
            f"{long[f'novacuum_{size}_mb']:>9.1f}{long[f'agentctl_{size}_vacuums']:>9}"
            f"{ms('bare'):>22}{ms('agentctl'):>22}{ms('novacuum'):>22}"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--server",
        default=os.environ.get("AGENTCTL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", default="1000,5000", help="thread counts for `threads`")
    parser.add_argument("--turns", default="100,300", help="lengths of the long thread")
    parser.add_argument(
        "--short",
        type=int,
        default=0,
        metavar="N",
        help="also one more turn on a 10-turn thread against bare, median of N (interleaved)",
    )
    parser.add_argument(
        "--no-bare", action="store_true", help="the long thread without bare (its cost is turns^2)"
    )
    args = parser.parse_args()
    counts = [int(s) for s in args.threads.split(",") if s]
    sizes = [int(s) for s in args.turns.split(",") if s]
    os.environ.setdefault("AGENTCTL_HOME", tempfile.mkdtemp())
    many = bench_many_threads(args.server, counts, args.repeat) if counts else {}
    long = bench_long_thread(args.server, sizes, bare=not args.no_bare) if sizes else {}
    short = bench_short_thread(args.server, 10, args.short) if args.short else {}
    print("instant scripted model, a turn = message, one tool call, answer")
    print(tables(many, long, counts if many else [], sizes if long else []))
    if short:
        print(short_table(short, 10, args.short))
    print(json.dumps({"bench": "pg_threads", "repeat": args.repeat, **many, **long, **short}))


if __name__ == "__main__":
    main()
