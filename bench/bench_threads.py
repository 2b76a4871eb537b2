"""Long threads and many threads: (a) bare create_agent on a SqliteSaver against (c) agentctl's
`Session` on its thread database, with the same instant scripted model, in one run.

Run: .venv/bin/python bench/bench_threads.py [--long] [--repeat 3]

A turn is a human message, one `step` tool call and a final answer (tiny messages). For each
contender one thread grows turn by turn; at 10 and 100 turns (and 500 and 1,000 with `--long`)
the script records:

- the database size (the file plus its WAL), with agentctl's default checkpoint retention;
- one more turn in the same process (median of `--repeat` turns): `Session.run` against
  `agent.invoke(..., durability="sync")` (agentctl's durability);
- one more turn in a fresh process: `agentctl run SPEC MSG --thread ID` (the model replays a
  cassette) against a fresh Python that builds the bare agent and invokes one turn.

Then `agentctl threads`, `threads show ID` and `threads rm ID` on an empty database and on
databases of 100, 1,000 and 5,000 threads (each a copy of a short real thread), fresh
processes, median of `--repeat`.

Prints the tables and, last, one JSON line. The default run takes a few minutes; `--long` adds
the 500- and 1,000-turn sizes (tens of minutes: the bare thread's checkpoints grow with the
square of its length).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import yaml
from _common import InstantModel, calls, median, spec_file
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
AGENTCTL = str(Path(sys.executable).with_name("agentctl"))


def turn_script(last: BaseMessage, _call: int) -> AIMessage:
    """One `step` call after a human message, then a short answer."""
    if isinstance(last, ToolMessage):
        return AIMessage(content="ok")
    return calls(("step", {"i": 1}))


def db_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def cassette(folder: Path, turns: int) -> Path:
    """Replies for `turns` turns of `turn_script`, for the fresh `agentctl run`s."""
    replies: list[dict[str, Any]] = []
    for _ in range(turns):
        replies.append({"content": "", "tool_calls": [{"name": "step", "args": {"i": 1}}]})
        replies.append({"content": "ok"})
    path = folder / "turns.cassette.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "agents": {"turns": replies}}))
    return path


class Bare:
    label = "(a) create_agent"

    def __init__(self, folder: Path) -> None:
        from _common import step
        from langchain.agents import create_agent
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.db = folder / "bare.db"
        self.conn = sqlite3.connect(str(self.db), check_same_thread=False)
        self.agent = create_agent(
            InstantModel(script=turn_script), tools=[step], checkpointer=SqliteSaver(self.conn)
        )
        self.config: Any = {"configurable": {"thread_id": "t"}}

    def turn(self, text: str) -> None:
        self.agent.invoke(
            {"messages": [HumanMessage(content=text)]}, self.config, durability="sync"
        )

    def fresh_turn(self) -> float:
        code = textwrap.dedent(
            f"""
            import sqlite3, sys
            sys.path.insert(0, {str(BENCH)!r})
            from langchain.agents import create_agent
            from langgraph.checkpoint.sqlite import SqliteSaver
            from _common import InstantModel, step
            from bench_threads import turn_script
            conn = sqlite3.connect({str(self.db)!r}, check_same_thread=False)
            agent = create_agent(InstantModel(script=turn_script), tools=[step],
                                 checkpointer=SqliteSaver(conn))
            agent.invoke({{"messages": [{{"role": "user", "content": "more"}}]}},
                         {{"configurable": {{"thread_id": "t"}}}}, durability="sync")
            """
        )
        return timed_process([sys.executable, "-c", code])

    def close(self) -> None:
        self.conn.close()


class Agentctl:
    label = "(c) agentctl"

    def __init__(self, folder: Path, replay: Path) -> None:
        from runner.run import Session

        self.db = folder / "agentctl.db"
        self.spec = spec_file(folder, "turns", tool_ref=f"{BENCH / '_common.py'}:step")
        self.replay = replay
        self.session = Session(self.spec, model=InstantModel(script=turn_script), db=self.db)
        self.thread: str | None = None

    def turn(self, text: str) -> None:
        result = self.session.run(text, thread_id=self.thread)
        assert result.error is None, result.error
        self.thread = result.thread_id

    def fresh_turn(self) -> float:
        self.session.home.conn.commit()
        return timed_process(
            [
                AGENTCTL,
                "run",
                str(self.spec),
                "more",
                "--thread",
                str(self.thread),
                "--db",
                str(self.db),
                "--model",
                f"replay:{self.replay}",
                "--quiet",
            ]
        )

    def close(self) -> None:
        self.session.close()


def timed_process(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed:\n{done.stdout}\n{done.stderr}")
    return seconds


def bench_long_thread(sizes: list[int], repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        replay = cassette(folder, max(sizes) + (2 * repeat + 2) * len(sizes) + 10)
        contenders = {"bare": Bare(folder), "agentctl": Agentctl(folder, replay)}
        done = 0
        try:
            for size in sizes:
                for contender in contenders.values():
                    for i in range(done, size):
                        contender.turn(f"message {i}")
                for kind, contender in contenders.items():
                    results[f"{kind}_{size}_mb"] = db_bytes(contender.db) / 1e6
                per_turn: dict[str, list[float]] = {k: [] for k in contenders}
                for r in range(repeat):
                    for kind, contender in contenders.items():
                        started = time.perf_counter()
                        contender.turn(f"more {r}")
                        per_turn[kind].append(time.perf_counter() - started)
                fresh: dict[str, list[float]] = {k: [] for k in contenders}
                for _ in range(repeat):
                    for kind, contender in contenders.items():
                        fresh[kind].append(contender.fresh_turn())
                for kind in contenders:
                    results[f"{kind}_{size}_turn_ms"] = median(per_turn[kind]) * 1e3
                    results[f"{kind}_{size}_fresh_s"] = median(fresh[kind])
                done = size + 2 * repeat
                print(f"  ... {size} turns done", file=sys.stderr, flush=True)
        finally:
            for contender in contenders.values():
                contender.close()
    return results


def many_threads_db(folder: Path, count: int) -> tuple[Path, str]:
    """A database of `count` threads, each a copy of one real 5-turn thread."""
    from runner.run import Session

    db = folder / f"threads-{count}.db"
    spec = spec_file(folder, "turns", tool_ref=f"{BENCH / '_common.py'}:step")
    with Session(spec, model=InstantModel(script=turn_script), db=db) as session:
        thread = None
        for i in range(5):
            thread = session.run(f"message {i}", thread_id=thread).thread_id
    conn = sqlite3.connect(str(db))
    with conn:
        for n in range(1, count):
            copy = f"{thread}-{n}"
            conn.execute(
                "INSERT INTO agentctl_threads SELECT ?, agent, spec, created_at, updated_at, "
                "first_message FROM agentctl_threads WHERE thread_id = ?",
                (copy, thread),
            )
            for table in ("checkpoints", "writes"):
                columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                rest = ", ".join(c for c in columns if c != "thread_id")
                conn.execute(
                    f"INSERT INTO {table} (thread_id, {rest}) SELECT ?, {rest} FROM {table} "
                    "WHERE thread_id = ?",
                    (copy, thread),
                )
    conn.close()
    return db, str(thread)


def bench_many_threads(counts: list[int], repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        empty = folder / "empty.db"
        for count in [0, *counts]:
            if count:
                db, thread = many_threads_db(folder, count)
            else:
                db, thread = empty, "none"
            commands = {
                "list": [AGENTCTL, "threads", "list", "--db", str(db)],
                "show": [AGENTCTL, "threads", "show", thread, "--db", str(db)],
            }
            for name, command in commands.items():
                if count == 0 and name == "show":
                    continue
                results[f"{name}_{count}_s"] = median(
                    [timed_process(command) for _ in range(repeat)]
                )
            if count:
                rm = [AGENTCTL, "threads", "rm", f"{thread}-1", "--yes", "--db", str(db)]
                results[f"rm_{count}_s"] = timed_process(rm)
            print(f"  ... {count} threads done", file=sys.stderr, flush=True)
    return results


def tables(long: dict[str, Any], many: dict[str, Any], sizes: list[int]) -> str:
    rows = [
        f"{'turns in one thread':<22}{'DB MB (a)':>11}{'DB MB (c)':>11}"
        f"{'turn ms (a)':>13}{'turn ms (c)':>13}{'c/a':>7}{'fresh s (a)':>13}{'fresh s (c)':>13}"
    ]
    for size in sizes:
        a, c = long[f"bare_{size}_turn_ms"], long[f"agentctl_{size}_turn_ms"]
        rows.append(
            f"{size:<22}{long[f'bare_{size}_mb']:>11.2f}{long[f'agentctl_{size}_mb']:>11.2f}"
            f"{a:>13.1f}{c:>13.1f}{c / a:>7.2f}"
            f"{long[f'bare_{size}_fresh_s']:>13.3f}{long[f'agentctl_{size}_fresh_s']:>13.3f}"
        )
    first, last = sizes[0], sizes[-1]
    rows.append(
        f"fresh agentctl run, {last} / {first} turns: "
        f"{long[f'agentctl_{last}_fresh_s'] / long[f'agentctl_{first}_fresh_s']:.2f}x"
    )
    rows += ["", f"{'threads in the DB':<22}{'list s':>10}{'show s':>10}{'rm s':>10}"]
    for count in sorted({int(k.split("_")[1]) for k in many}):
        cells = [many.get(f"{name}_{count}_s") for name in ("list", "show", "rm")]
        rows.append(
            f"{count:<22}" + "".join(f"{'-' if v is None else f'{v:.3f}':>10}" for v in cells)
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--long", action="store_true", help="also 500 and 1,000 turns")
    parser.add_argument(
        "--sizes", help="comma-separated thread lengths instead of 10,100 (or 10,100,500,1000)"
    )
    parser.add_argument("--threads", default="100,1000,5000", help="thread counts for `threads`")
    args = parser.parse_args()
    sizes = [10, 100, 500, 1000] if args.long else [10, 100]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(s) for s in args.threads.split(",") if s]
    os.environ.setdefault("AGENTCTL_HOME", tempfile.mkdtemp())
    long = bench_long_thread(sizes, args.repeat)
    many = bench_many_threads(counts, args.repeat)
    print(
        f"instant scripted model, a turn = message, one tool call, answer; median of {args.repeat}"
    )
    print(tables(long, many, sizes))
    print(json.dumps({"bench": "threads", "repeat": args.repeat, **long, **many}))


if __name__ == "__main__":
    main()
