"""Messages and files as deltas (issue 31, item 1): what a long thread costs agentctl.

Run it once per checkout and compare the JSON lines:

    PYTHONPATH=/path/to/before .venv/bin/python bench/bench_delta.py --sizes 100,500,1000
    PYTHONPATH=/path/to/after  .venv/bin/python bench/bench_delta.py --sizes 100,500,1000

One agentctl `Session` on its thread database (default retention) grows one thread turn by turn
with `bench_threads.py`'s turn (a human message, one `step` call, an answer; tiny messages). At
each size: the database (file plus WAL), the checkpoints kept and the bytes of the latest
main-graph checkpoint row (what a turn writes again with the history in it), the tool journal's
entries and the bytes of their results, and one more turn (median of `--repeat`, wall and CPU of
this process). A prune removes the journal entries recorded ten minutes or more before the
oldest checkpoint left; `--journal-skew 0` shows in a short run what a thread keeps once that
time has passed.

`--files` makes each turn's call a `write_file` of a new file (`--file-kb` of text) into the
agent's `state` backend instead: the thread's files grow by one a turn, and the figures show
what they cost its checkpoints.

`--grow bulk` grows the thread faster, for lengths (10,000 turns) that turn-by-turn growth
would take hours to reach, each turn's cost growing with the history: after one real turn, to
every size (the first included), the messages of whole turns (a human message, the `step`
call, its result, the answer: copies of the real turn's with their own ids) are added with
`graph.update_state`, up to 500 turns' worth at a time, as one update each. The conversation
is then what real turns would have made; its deltas are not (a few large updates instead of
four per turn), so the database and the checkpoints kept differ from `--grow turns`: read the
turn's cost at each size, and compare it with `--grow turns` at the sizes both reach. The
turns measured are real turns either way.

The default summarization summarizes the conversation once it passes 170,000 tokens (about
8,000 of these turns), after which a turn reads the summary and the latest messages only;
`--no-summarization` turns it off, to measure what the length of the history itself costs.

`--spread N` then runs N more turns at the largest size and times each one, told apart by what
its bookkeeping did (SQLite's statement trace): a prune that deleted checkpoints, a
`PRAGMA incremental_vacuum`, a snapshot of the conversation written (a new checkpoint row over
4 KB), a full collection of the garbage collector in the turn (which examines every object of
the process, whoever's turn it falls in), some of these or none ("plain"). It prints the
median CPU of each kind against the median of all turns, and how many turns of each kind took
over 1.2x that median: the issue's rule that no turn costs over 1.2x the median because of
vacuum or pruning.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import FullCollections, calls, median
from bench_threads import Agentctl, cassette, db_bytes, turn_script
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage


def file_script(size: int) -> Any:
    """A `write_file` of a new file of `size` bytes after a human message (its path from the
    message), then a short answer."""

    def script(last: BaseMessage, _call: int) -> AIMessage:
        if isinstance(last, ToolMessage):
            return AIMessage(content="ok")
        name = str(last.content).replace(" ", "-")
        line = f"{name}: a line of a note the agent keeps in its state backend\n"
        text = (line * (size // len(line) + 1))[:size]
        return calls(("write_file", {"file_path": f"/notes/{name}.md", "content": text}))

    return script


def journal_rows(db: Path) -> tuple[int, int]:
    """(tool journal entries, bytes of their results)."""
    conn = sqlite3.connect(db)
    try:
        rows, size = conn.execute(
            "SELECT count(*), coalesce(sum(length(result)), 0) FROM agentctl_tool_journal"
        ).fetchone()
    finally:
        conn.close()
    return rows, size


def checkpoint_rows(db: Path) -> tuple[int, int, int]:
    """(checkpoints kept, bytes of the latest main-graph checkpoint, bytes of all writes)."""
    conn = sqlite3.connect(db)
    try:
        count = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        latest = conn.execute(
            "SELECT length(checkpoint) FROM checkpoints WHERE checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()[0]
        writes = conn.execute("SELECT coalesce(sum(length(value)), 0) FROM writes").fetchone()[0]
    finally:
        conn.close()
    return count, latest, writes


def bulk_grow(contender: Agentctl, done: int, size: int, chunk: int = 500) -> None:
    """Add turns `done`..`size` to the thread as copies of its first real turn's messages."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    assert contender.thread is not None
    config = {"configurable": {"thread_id": contender.thread}}
    messages = contender.session.graph.get_state(config).values["messages"]
    call, result, answer = messages[1:4]
    assert isinstance(call, AIMessage) and call.tool_calls and isinstance(result, ToolMessage)
    tool_call = call.tool_calls[0]
    for start in range(done, size, chunk):
        batch: list[Any] = []
        for i in range(start, min(size, start + chunk)):
            call_id = f"bulk_call_{i}"
            batch += [
                HumanMessage(content=f"message {i}", id=f"bulk_h_{i}"),
                AIMessage(
                    content=call.content,
                    tool_calls=[{**tool_call, "id": call_id}],
                    id=f"bulk_c_{i}",
                ),
                ToolMessage(
                    content=result.content, name=result.name, tool_call_id=call_id, id=f"bulk_r_{i}"
                ),
                AIMessage(content=answer.content, id=f"bulk_a_{i}"),
            ]
        contender.session.graph.update_state(config, {"messages": batch}, as_node="model")


def spread(contender: Agentctl, turns: int) -> dict[str, Any]:
    """Time `turns` turns one by one, each labelled by its bookkeeping: "prune" (checkpoints
    deleted), "vacuum" (free pages given back), "snapshot" (the whole conversation written),
    and by "full gc" when the collector made a full collection during it (`FullCollections`:
    the process's, not the turn's work), joined by "+", or "plain"."""
    kinds: list[str] = []
    last = contender.conn.execute("SELECT max(checkpoint_id) FROM checkpoints").fetchone()[0]
    cpus: list[float] = []
    walls: list[float] = []
    full = FullCollections()
    for i in range(turns):
        statements: list[str] = []
        contender.conn.set_trace_callback(statements.append)
        collections = full.count
        wall, cpu = time.perf_counter(), time.process_time()
        with full:
            contender.turn(f"spread {i}")
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
        contender.conn.set_trace_callback(None)
        text = "\n".join(statements).lower()
        big = contender.conn.execute(
            "SELECT count(*), max(checkpoint_id) FROM checkpoints WHERE checkpoint_id > ? "
            "AND checkpoint_ns = ''",
            (last,),
        ).fetchone()
        snapshots = contender.conn.execute(
            "SELECT count(*) FROM checkpoints "
            "WHERE checkpoint_id > ? AND length(checkpoint) > 4096",
            (last,),
        ).fetchone()[0]
        last = big[1] or last
        flags = [
            name
            for name, done in (
                ("prune", "delete from checkpoints" in text),
                ("vacuum", "incremental_vacuum" in text),
                ("snapshot", snapshots > 0),
                ("full gc", full.count > collections),
            )
            if done
        ]
        kinds.append("+".join(flags) or "plain")
    overall = median(cpus)
    report: dict[str, Any] = {"turns": turns, "cpu_ms_median": round(overall * 1e3, 1)}
    for kind in sorted(set(kinds)):
        mine = [c for c, k in zip(cpus, kinds, strict=True) if k == kind]
        if not mine:
            continue
        report[kind] = {
            "turns": len(mine),
            "cpu_ms_median": round(median(mine) * 1e3, 1),
            "cpu_ms_max": round(max(mine) * 1e3, 1),
            "median_over_all": round(median(mine) / overall, 2),
            "over_1_2x": sum(1 for c in mine if c > 1.2 * overall),
        }
    report["wall_ms_median"] = round(median(walls) * 1e3, 1)
    print(f"spread over {turns} turns  {report}", file=sys.stderr, flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,500,1000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--files", action="store_true", help="each turn writes a new file")
    parser.add_argument("--file-kb", type=float, default=1.0)
    parser.add_argument(
        "--grow",
        choices=("turns", "bulk"),
        default="turns",
        help="grow the thread turn by turn (default) or whole turns at a time by state updates",
    )
    parser.add_argument(
        "--no-summarization",
        action="store_true",
        help="turn summarization off (what the history's length itself costs)",
    )
    parser.add_argument(
        "--spread", type=int, default=0, help="turns timed one by one at the largest size"
    )
    parser.add_argument(
        "--journal-skew",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how much older than the oldest checkpoint left a tool journal entry must be "
        "for a prune to remove it (default: agentctl's, ten minutes; 0 shows in a short run "
        "the journal a thread keeps once that time has passed)",
    )
    args = parser.parse_args()
    if args.journal_skew is not None:
        from runner.threads import retention

        retention.JOURNAL_SKEW = args.journal_skew
    if args.files and args.grow == "bulk":
        parser.error("--grow bulk copies the messages of a turn, not its files: use --grow turns")
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script = file_script(int(args.file_kb * 1024)) if args.files else turn_script
        extra = {"summarization": False} if args.no_summarization else None
        contender = Agentctl(folder, cassette(folder, 10), extra, script=script)
        done = 0
        try:
            for size in sizes:
                if args.grow == "bulk":
                    if not done:  # the real turn the bulk turns are copies of
                        contender.turn("message 0")
                        done = 1
                    bulk_grow(contender, done, size)
                else:
                    for i in range(done, size):
                        contender.turn(f"message {i}")
                walls, cpus = [], []
                for r in range(args.repeat):
                    wall, cpu = time.perf_counter(), time.process_time()
                    contender.turn(f"more {r}")
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
                contender.session.home.conn.commit()
                kept, latest, writes = checkpoint_rows(contender.db)
                calls, results_bytes = journal_rows(contender.db)
                results[size] = {
                    "db_mb": round(db_bytes(contender.db) / 1e6, 2),
                    "checkpoints": kept,
                    "latest_checkpoint_kb": round(latest / 1e3, 1),
                    "writes_kb": round(writes / 1e3, 1),
                    "journal_entries": calls,
                    "journal_kb": round(results_bytes / 1e3, 1),
                    "turn_ms": round(median(walls) * 1e3, 1),
                    "turn_cpu_ms": round(median(cpus) * 1e3, 1),
                }
                print(f"{size:>6} turns  {results[size]}", file=sys.stderr, flush=True)
                done = size + args.repeat
            if args.spread:
                results["spread"] = spread(contender, args.spread)
        finally:
            contender.close()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
