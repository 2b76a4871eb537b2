"""Long threads and many threads: (a) bare create_agent on a SqliteSaver against (c) agentctl's
`Session` on its thread database, with the same instant scripted model, in one run.

Run: .venv/bin/python bench/bench_threads.py [--long] [--repeat 3]

A turn is a human message, one `step` tool call and a final answer (tiny messages). For each
contender one thread grows turn by turn; at 10 and 100 turns (and 500 and 1,000 with `--long`)
the script records:

- the database size (the file plus its WAL), with agentctl's default checkpoint retention;
- one more turn in the same process (median of `--repeat` turns): `Session.run` against
  `agent.invoke(..., durability="sync")` (agentctl's durability), wall and CPU time, and the
  database commits of that turn (counted with SQLite's statement trace);
- one more turn in a fresh process (skipped with `--no-fresh`): `agentctl run SPEC MSG --thread
  ID` (the model replays a cassette) against a fresh Python that builds the bare agent and
  invokes one turn.

Then `agentctl threads`, `threads show ID` and `threads rm ID` on an empty database and on
databases of 100, 1,000 and 5,000 threads (each a copy of a short real thread), fresh
processes, median of `--repeat`.

Prints the tables and, last, one JSON line. `--history 300,1000` measures only what the per-turn
checks of the history (dangling calls, replies, calls already shown) cost at those lengths, read
whole against read from where the previous turn's checks ended. The default run takes a few
minutes; `--long` adds the 500- and 1,000-turn sizes (tens of minutes: the bare thread's
checkpoints grow with the square of its length).
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
from collections.abc import Callable
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

    def __init__(
        self,
        folder: Path,
        replay: Path,
        extra: dict[str, Any] | None = None,
        *,
        script: Any = turn_script,
    ) -> None:
        from runner.run import Session

        self.db = folder / "agentctl.db"
        self.spec = spec_file(folder, "turns", extra, tool_ref=f"{BENCH / '_common.py'}:step")
        self.replay = replay
        self.session = Session(self.spec, model=InstantModel(script=script), db=self.db)
        self.conn = self.session.home.conn
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


def bench_long_thread(sizes: list[int], repeat: int, *, fresh_turns: bool = True) -> dict[str, Any]:
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
                cpu: dict[str, list[float]] = {k: [] for k in contenders}
                commits: dict[str, list[int]] = {k: [] for k in contenders}
                for r in range(repeat):
                    for kind, contender in contenders.items():
                        counted: list[int] = []
                        contender.conn.set_trace_callback(
                            lambda sql, counted=counted: (
                                counted.append(1)
                                if sql.lstrip().upper().startswith("COMMIT")
                                else None
                            )
                        )
                        started, cpu_started = time.perf_counter(), time.process_time()
                        contender.turn(f"more {r}")
                        per_turn[kind].append(time.perf_counter() - started)
                        cpu[kind].append(time.process_time() - cpu_started)
                        contender.conn.set_trace_callback(None)
                        commits[kind].append(len(counted))
                fresh: dict[str, list[float]] = {k: [] for k in contenders}
                for _ in range(repeat if fresh_turns else 0):
                    for kind, contender in contenders.items():
                        fresh[kind].append(contender.fresh_turn())
                for kind in contenders:
                    results[f"{kind}_{size}_turn_ms"] = median(per_turn[kind]) * 1e3
                    results[f"{kind}_{size}_cpu_ms"] = median(cpu[kind]) * 1e3
                    results[f"{kind}_{size}_commits"] = median(commits[kind])
                    results[f"{kind}_{size}_fresh_s"] = median(fresh[kind]) if fresh[kind] else None
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


def bench_history_reads(sizes: list[int], repeat: int) -> dict[str, Any]:
    """What the per-turn checks of the history cost on a thread of each size: the dangling-call
    check (model hook and session), the reply check and the calls already shown, given the
    history as the next turn gets it (decoded anew from the checkpoint, not timed), read whole
    (each call's cost before issue 31's change) and read from where the previous turn's checks
    ended (`runner.middleware.tallies`). CPU time, median of `repeat` turns."""
    import uuid

    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from runner.middleware.patch_tool_calls import DanglingCheck, has_dangling
    from runner.middleware.replies import ReplyCheckMiddleware
    from runner.middleware.tallies import Tallies
    from runner.run.translate import Shown, read_shown

    serde = JsonPlusSerializer()

    def turn(i: int) -> list[BaseMessage]:
        call = calls(("step", {"i": 1}))
        call.id = uuid.uuid4().hex
        call_id = call.tool_calls[0]["id"]
        return [
            HumanMessage(content=f"message {i}", id=uuid.uuid4().hex),
            call,
            ToolMessage(content="1", tool_call_id=call_id, name="step", id=uuid.uuid4().hex),
            AIMessage(content="ok", id=uuid.uuid4().hex),
        ]

    def whole(messages: list[BaseMessage]) -> None:
        has_dangling(messages)  # the model hook
        has_dangling(messages)  # the session, on a new message
        ReplyCheckMiddleware()._scan(messages)
        Tallies(Shown, read_shown)(messages)

    def remembering_checks() -> Callable[[list[BaseMessage]], None]:
        dangling, session_dangling = DanglingCheck(), DanglingCheck()
        replies, shown = ReplyCheckMiddleware(), Tallies(Shown, read_shown)

        def since(messages: list[BaseMessage]) -> None:
            dangling(messages)
            session_dangling(messages)
            replies._scan(messages)
            shown(messages)

        return since

    results: dict[str, Any] = {}
    for size in sizes:
        history = [m for i in range(size) for m in turn(i)]
        since = remembering_checks()
        since(history)
        times: dict[str, list[float]] = {"whole": [], "since": []}
        for r in range(repeat):
            history += turn(size + r)
            kind, data = serde.dumps_typed(history)
            for name, check in (("whole", whole), ("since", since))[:: 1 if r % 2 else -1]:
                decoded = serde.loads_typed((kind, data))
                started = time.process_time()
                check(decoded)
                times[name].append(time.process_time() - started)
        results[f"history_{size}_whole_ms"] = median(times["whole"]) * 1e3
        results[f"history_{size}_since_ms"] = median(times["since"]) * 1e3
    return results


def tables(long: dict[str, Any], many: dict[str, Any], sizes: list[int]) -> str:
    rows = [
        f"{'turns in one thread':<22}{'DB MB (a)':>11}{'DB MB (c)':>11}"
        f"{'turn ms (a)':>13}{'turn ms (c)':>13}{'c/a':>7}{'CPU ms (a)':>12}{'CPU ms (c)':>12}"
        f"{'c/a':>7}{'commits (a)':>13}{'commits (c)':>13}{'fresh s (a)':>13}{'fresh s (c)':>13}"
    ]

    def seconds(value: float | None) -> str:
        return f"{'-' if value is None else f'{value:.3f}':>13}"

    for size in sizes:
        a, c = long[f"bare_{size}_turn_ms"], long[f"agentctl_{size}_turn_ms"]
        cpu_a, cpu_c = long[f"bare_{size}_cpu_ms"], long[f"agentctl_{size}_cpu_ms"]
        rows.append(
            f"{size:<22}{long[f'bare_{size}_mb']:>11.2f}{long[f'agentctl_{size}_mb']:>11.2f}"
            f"{a:>13.1f}{c:>13.1f}{c / a:>7.2f}{cpu_a:>12.1f}{cpu_c:>12.1f}{cpu_c / cpu_a:>7.2f}"
            f"{long[f'bare_{size}_commits']:>13}{long[f'agentctl_{size}_commits']:>13}"
            f"{seconds(long[f'bare_{size}_fresh_s'])}{seconds(long[f'agentctl_{size}_fresh_s'])}"
        )
    first, last = sizes[0], sizes[-1]
    if long[f"agentctl_{first}_fresh_s"]:
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
    parser.add_argument(
        "--no-fresh", action="store_true", help="skip the fresh-process turns (in-process only)"
    )
    parser.add_argument(
        "--history",
        metavar="SIZES",
        help="only the per-turn checks of the history, at these thread lengths (e.g. 300,1000)",
    )
    args = parser.parse_args()
    if args.history:
        sizes = [int(s) for s in args.history.split(",")]
        reads = bench_history_reads(sizes, max(args.repeat, 5))
        print("per-turn checks of the history (dangling calls twice, replies, calls shown), CPU ms")
        print(f"{'turns in one thread':<22}{'read whole':>12}{'new only':>12}")
        for size in sizes:
            whole, since = reads[f"history_{size}_whole_ms"], reads[f"history_{size}_since_ms"]
            print(f"{size:<22}{whole:>12.2f}{since:>12.3f}")
        print(json.dumps({"bench": "threads-history", **reads}))
        return
    sizes = [10, 100, 500, 1000] if args.long else [10, 100]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(s) for s in args.threads.split(",") if s]
    os.environ.setdefault("AGENTCTL_HOME", tempfile.mkdtemp())
    long = bench_long_thread(sizes, args.repeat, fresh_turns=not args.no_fresh)
    many = bench_many_threads(counts, args.repeat)
    print(
        f"instant scripted model, a turn = message, one tool call, answer; median of {args.repeat}"
    )
    print(tables(long, many, sizes))
    print(json.dumps({"bench": "threads", "repeat": args.repeat, **long, **many}))


if __name__ == "__main__":
    main()
