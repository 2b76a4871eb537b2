"""Benchmark the backends: grep with ripgrep vs pure Python, and the state backend's costs.

    .venv/bin/python bench/bench_backends.py [--quick]

Prints a table and, last, one JSON line with every figure (seconds unless the key says `_us`).

- grep on the filesystem backend over generated source trees of 1,000 and 5,000 files, with
  ripgrep and with the Python fallback, for a rare and a common word (median of repeats, warm
  page cache: the cost of searching, not of the disk);
- the state backend at 100 and 1,000 existing files: one `write` (what a tool call does: a fresh
  backend over the state's files), one `merge_files` (what LangGraph does with its update),
  `grep` and `glob` over all files. `write` must not grow with the number of files.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from runner.backends import FileData, FilesystemBackend, StateBackend, merge_files
from runner.backends.search import find_ripgrep

_VOCABULARY = """def return self value result import from class print items data index path file
config error check update build render parse token state graph node write read"""
WORDS = _VOCABULARY.split()


def source_text(rng: random.Random, lines: int) -> str:
    body = []
    for _ in range(lines):
        indent = "    " * rng.randrange(3)
        body.append(indent + " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 10))))
        if rng.random() < 0.002:
            body.append(indent + "# rarely_seen_marker here")
    return "\n".join(body) + "\n"


def make_tree(root: Path, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    directories = [root]
    for index in range(max(4, files // 25)):
        parent = rng.choice(directories)
        directories.append(parent / f"pkg{index}")
    for directory in directories:
        directory.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        directory = rng.choice(directories)
        suffix = rng.choice([".py", ".py", ".md", ".txt", ".json"])
        (directory / f"module_{index}{suffix}").write_text(source_text(rng, rng.randrange(20, 120)))


def timed(function: Callable[[], Any], *, repeat: int) -> float:
    """Median wall time of `repeat` calls, after one warm-up call."""
    function()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def per_call(function: Callable[[int], Any], *, calls: int) -> float:
    """Mean wall time of one call over `calls` calls (for operations far below a millisecond)."""
    function(-1)
    started = time.perf_counter()
    for index in range(calls):
        function(index)
    return (time.perf_counter() - started) / calls


def bench_grep(sizes: list[int], repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-grep-") as top:
        for size in sizes:
            root = Path(top) / str(size)
            make_tree(root, size)
            engines = {
                "rg": FilesystemBackend(root),
                "python": FilesystemBackend(root, ripgrep=False),
            }
            for label, word in [("rare", "rarely_seen_marker"), ("common", "return self")]:
                hits = {name: backend.grep(word) for name, backend in engines.items()}
                assert hits["rg"] == hits["python"], "ripgrep and Python disagree"
                results[f"grep_{label}_{size}_hits"] = len(hits["rg"])
                for name, backend in engines.items():
                    search = partial(backend.grep, word)
                    results[f"grep_{label}_{size}_{name}"] = timed(search, repeat=repeat)
    return results


def state_files(size: int, rng: random.Random) -> dict[str, FileData]:
    files: dict[str, FileData] = {}
    for index in range(size):
        files[f"/dir{index % 20}/notes_{index}.md"] = FileData(
            content=source_text(rng, 40), created_at="2026-01-01", modified_at="2026-01-01"
        )
    return files


def write_one(files: dict[str, FileData], index: int) -> Any:
    """What a `write_file` tool call does: a backend over the call's state, one write."""
    return StateBackend(files).write(f"/new/file_{index}.md", "fresh content\n")


def bench_state(sizes: list[int], repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    rng = random.Random(11)
    for size in sizes:
        files = state_files(size, rng)
        update = write_one(files, 0).files_update
        write = partial(write_one, files)
        results[f"state_write_{size}_us"] = per_call(write, calls=20_000) * 1e6
        merge = partial(merge_files, files, update)
        results[f"state_merge_{size}_us"] = per_call(lambda _i, m=merge: m(), calls=5_000) * 1e6
        backend = StateBackend(files)
        grep = partial(backend.grep, "return self")
        results[f"state_grep_{size}"] = timed(grep, repeat=repeat)
        results[f"state_glob_{size}"] = timed(partial(backend.glob, "**/*.md"), repeat=repeat)
    return results


def table(results: dict[str, Any], grep_sizes: list[int], state_sizes: list[int]) -> str:
    rows = [f"ripgrep: {find_ripgrep() or 'not found'}", ""]
    rows.append(
        f"{'grep, filesystem backend':<34}{'rg':>10}{'python':>10}{'hits':>8}{'speedup':>9}"
    )
    for size in grep_sizes:
        for label in ("rare", "common"):
            rg = results[f"grep_{label}_{size}_rg"]
            py = results[f"grep_{label}_{size}_python"]
            hits = results[f"grep_{label}_{size}_hits"]
            name = f"{size:,} files, {label} word"
            rows.append(f"{name:<34}{rg * 1e3:>8.1f}ms{py * 1e3:>8.1f}ms{hits:>8}{py / rg:>8.1f}x")
    rows.append("")
    rows.append(f"{'state backend':<34}" + "".join(f"{f'{s:,} files':>14}" for s in state_sizes))
    for key, label, scale, unit in [
        ("state_write_{}_us", "write (one tool call)", 1, "us"),
        ("state_merge_{}_us", "merge_files (reducer)", 1, "us"),
        ("state_grep_{}", "grep over all files", 1e3, "ms"),
        ("state_glob_{}", "glob **/*.md", 1e3, "ms"),
    ]:
        cells = "".join(f"{results[key.format(s)] * scale:>12.2f}{unit}" for s in state_sizes)
        rows.append(f"{label:<34}{cells}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    grep_sizes, state_sizes = [100, 1_000, 5_000], [100, 1_000]
    results = {**bench_grep(grep_sizes, repeat), **bench_state(state_sizes, repeat)}
    print(table(results, grep_sizes, state_sizes))
    print(json.dumps({"bench": "backends", **{k: round(v, 6) for k, v in results.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
