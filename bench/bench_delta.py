"""Messages and files as deltas (issue 31, item 1): what a long thread costs agentctl.

Run it once per checkout and compare the JSON lines:

    PYTHONPATH=/path/to/before .venv/bin/python bench/bench_delta.py --sizes 100,500,1000
    PYTHONPATH=/path/to/after  .venv/bin/python bench/bench_delta.py --sizes 100,500,1000

One agentctl `Session` on its thread database (default retention) grows one thread turn by turn
with `bench_threads.py`'s turn (a human message, one `step` call, an answer; tiny messages). At
each size: the database (file plus WAL), the checkpoints kept and the bytes of the latest
main-graph checkpoint row (what a turn writes again with the history in it), and one more turn
(median of `--repeat`, wall and CPU of this process).

`--files` makes each turn's call a `write_file` of a new file (`--file-kb` of text) into the
agent's `state` backend instead: the thread's files grow by one a turn, and the figures show
what they cost its checkpoints.
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

from _common import calls, median
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,500,1000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--files", action="store_true", help="each turn writes a new file")
    parser.add_argument("--file-kb", type=float, default=1.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script = file_script(int(args.file_kb * 1024)) if args.files else turn_script
        contender = Agentctl(folder, cassette(folder, 10), script=script)
        done = 0
        try:
            for size in sizes:
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
                results[size] = {
                    "db_mb": round(db_bytes(contender.db) / 1e6, 2),
                    "checkpoints": kept,
                    "latest_checkpoint_kb": round(latest / 1e3, 1),
                    "writes_kb": round(writes / 1e3, 1),
                    "turn_ms": round(median(walls) * 1e3, 1),
                    "turn_cpu_ms": round(median(cpus) * 1e3, 1),
                }
                print(f"{size:>6} turns  {results[size]}", file=sys.stderr, flush=True)
                done = size + args.repeat
        finally:
            contender.close()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
