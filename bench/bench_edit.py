"""`agentctl serve --edit`: how long the page waits for the located problems of a keystroke.

Run: .venv/bin/python bench/bench_edit.py [--changes 60]

Writes `bench_lsp.py`'s 300-line agent file (an include, a ref'd subagent, declared tools,
inline subagents) to a temporary folder, starts `agentctl serve FOLDER --edit` on a free port and
sends, over HTTP on loopback as the page does, `--changes` check requests with the whole text:
every third one carries a mistake (an unknown tool in `interrupt_on`, found only once the whole
file loaded), the next one removes it. Timed from sending the request to reading the answer: the
server's whole share of a keystroke (the page adds its own debounce, 250 ms, before sending).
Also times completion and hover requests on the same file, then prints one JSON line.
Target (issue 33): problems under 150 ms on a 300-line file.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_lsp import write_files  # noqa: E402


def post(url: str, body: dict) -> tuple[float, dict]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"content-type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as answer:
        found = json.loads(answer.read())
    return (time.perf_counter() - started) * 1000, found


def wait_for(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("agentctl serve did not start")


def figures(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 1),
        "p95": round(ordered[int(len(ordered) * 0.95) - 1], 1),
        "max": round(ordered[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=60)
    options = parser.parse_args()
    from runner.serve.ports import free_port

    folder = Path(tempfile.mkdtemp(prefix="bench-edit-"))
    agent = write_files(folder)
    text = agent.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    port = free_port("127.0.0.1")
    agentctl = str(Path(sys.executable).with_name("agentctl"))
    env = {**os.environ, "DATABASE_URL": "", "LANGSMITH_TRACING": "false"}
    process = subprocess.Popen(
        [agentctl, "serve", str(folder), "--edit", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base, process)
        api = f"{base}/web/api/edit"
        path = agent.name
        post(f"{api}/check", {"path": path, "text": text})  # the first check imports the checks
        checks, found_problems = [], 0
        for change in range(options.changes):
            edited = text
            if change % 3 == 0:
                edited = text.replace("  lookup_0: true", "  lookup_00: true")
            edited = edited.replace("Line 1 of", f"Line 1 (edit {change}) of")
            took, answer = post(f"{api}/check", {"path": path, "text": edited})
            checks.append(took)
            found_problems += bool(answer["problems"])
        assert found_problems == len(range(0, options.changes, 3)), "the mistakes were not found"
        at = text.splitlines().index("interrupt_on:") + 1
        completions = [
            post(f"{api}/complete", {"path": path, "text": text, "line": at, "character": 2})[0]
            for _ in range(20)
        ]
        hovers = [
            post(f"{api}/hover", {"path": path, "text": text, "line": 0, "character": 2})[0]
            for _ in range(20)
        ]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    result = {
        "lines": lines,
        "check_ms": figures(checks),
        "complete_ms": figures(completions),
        "hover_ms": figures(hovers),
    }
    print(f"a {lines}-line agent file, {options.changes} checks over HTTP (ms):")
    for name in ("check_ms", "complete_ms", "hover_ms"):
        row = result[name]
        print(
            f"  {name[:-3]:<9} median {row['median']:>6}  p95 {row['p95']:>6}  max {row['max']:>6}"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
