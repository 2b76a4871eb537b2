"""`agentctl lsp`: how long after a keystroke its diagnostics arrive.

Run: .venv/bin/python bench/bench_lsp.py [--changes 60] [--debounce 30]

Writes a 300-line agent file (an `include:` of a 40-line fragment, a `ref:` subagent file,
inline subagents, declared tools, `interrupt_on`, `permissions`) to a temporary folder, starts
`agentctl lsp` over stdio, opens the agent file and then sends `--changes` edits, one at a time,
each waiting for its diagnostics: every third edit introduces a mistake (an unknown tool in
`interrupt_on`, found only after the whole file loaded), the next one removes it again. Timed
from writing `didChange` to reading `publishDiagnostics` for the file, so the figures include
the debounce wait (`--debounce` ms, the server's default 30), the JSON-RPC round trip, and the
whole `validate` check on the buffer. A last series edits the included fragment (open too) and
times the diagnostics of the agent file that includes it.

Also prints the server's start (spawn to the `initialize` answer) and, in this process, the
check alone (`runner.lsp.diagnostics.check`, no debounce, no JSON-RPC), then one JSON line.
Target (issue 35): diagnostics within 100 ms of a change.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

ROOT = Path(__file__).resolve().parent.parent


def write_files(folder: Path) -> Path:
    """The agent file (300 lines with its include), its fragment and its ref'd subagent."""
    fragment = ["# shared settings", "model: openai:gpt-4.1", "todos: true", "limits:"]
    fragment += ["  tool_calls:"] + [f"    lookup_{i}: {i + 5}" for i in range(10)]
    fragment += ["filesystem:", "  tools: [ls, read_file, write_file, edit_file, glob, grep]"]
    fragment += ["vars:"] + [f"  v{i}: value {i}" for i in range(20)]
    (folder / "_shared.yaml").write_text("\n".join(fragment) + "\n", encoding="utf-8")
    (folder / "helper.yaml").write_text(
        "version: 1\nname: helper\ndescription: Helps\nprompt: You help.\n", encoding="utf-8"
    )
    (folder / "tools.py").write_text(
        "".join(f"def lookup_{i}(term: str) -> str:\n    return term\n\n\n" for i in range(10)),
        encoding="utf-8",
    )
    lines = [
        "version: 1",
        "name: big",
        "description: A large agent, for timing the language server",
        "include: [_shared.yaml]",
        "prompt: |",
    ]
    lines += [f"  Line {i} of the instructions, about {{{{ vars.v{i % 20} }}}}." for i in range(60)]
    lines += ["tools:"]
    for i in range(10):
        lines += [f"  - import: ./tools.py:lookup_{i}"]
    lines += ["interrupt_on:"] + [f"  lookup_{i}: true" for i in range(5)]
    lines += ["permissions:", "  deny:"] + [f"    - tool: lookup_{i}" for i in range(5, 8)]
    lines += ["general_purpose_agent: false", "subagents:", "  - ref: helper.yaml"]
    index = 0
    while len(lines) < 300 - 6:
        lines += [
            f"  - name: worker-{index}",
            f"    description: Worker number {index}",
            "    prompt: |",
            f"      You are worker {index}. Do the part of the task you are given.",
            "    interrupt_on:",
            "      write_file: true",
        ]
        index += 1
    agent = folder / "big.yaml"
    lines += [f"# note {n}" for n in range(300 - len(lines))]
    agent.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return agent


class Client:
    """A minimal LSP client over a child's pipes: requests, notifications, and the
    `publishDiagnostics` notifications queued with the time they were read."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.diagnostics: queue.Queue[tuple[float, str, list[Any]]] = queue.Queue()
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: BinaryIO) -> None:
        while True:
            length = 0
            while (header := stream.readline()) not in (b"\r\n", b""):
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            if not length:
                return
            message = json.loads(stream.read(length))
            if message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                self.diagnostics.put((time.perf_counter(), params["uri"], params["diagnostics"]))
            elif "id" in message and "method" not in message:
                self.answers.put(message)

    def send(self, message: dict[str, Any]) -> float:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        sent = time.perf_counter()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return sent

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.answers.get(timeout=60)

    def notify(self, method: str, params: Any) -> float:
        return self.send({"method": method, "params": params})

    def wait(self, uri: str) -> tuple[float, list[Any]]:
        while True:
            at, found, diagnostics = self.diagnostics.get(timeout=60)
            if found == uri:
                return at, diagnostics

    def close(self) -> None:
        self.request("shutdown", None)
        self.notify("exit", None)
        self.process.wait(timeout=10)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def figures(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {
        "median": round(statistics.median(ms), 1),
        "p90": round(percentile(ms, 0.9), 1),
        "max": round(max(ms), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=60)
    parser.add_argument("--debounce", type=float, default=30.0, help="milliseconds")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-lsp-"))
    agent = write_files(folder)
    fragment = folder / "_shared.yaml"
    text = agent.read_text(encoding="utf-8")
    command = [sys.executable, "-m", "runner", "lsp", "--debounce", str(args.debounce)]
    env_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env_path}" if env_path else str(ROOT)

    started = time.perf_counter()
    client = Client(command, folder)
    client.request(
        "initialize", {"processId": None, "rootUri": folder.as_uri(), "capabilities": {}}
    )
    start_s = time.perf_counter() - started
    client.notify("initialized", {})
    uri, fragment_uri = agent.as_uri(), fragment.as_uri()
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}},
    )
    _, first = client.wait(uri)
    assert first == [], first
    fragment_text = fragment.read_text(encoding="utf-8")
    client.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": fragment_uri,
                "languageId": "yaml",
                "version": 1,
                "text": fragment_text,
            }
        },
    )
    client.wait(fragment_uri)

    typed: list[float] = []
    with_problem = 0
    for version in range(2, args.changes + 2):
        edited = text.replace("Worker number 3", f"Worker number 3, edit {version}")
        if version % 3 == 0:
            edited = edited.replace("  lookup_0: true", "  lookup_00: true")
        sent = client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": edited}],
            },
        )
        at, diagnostics = client.wait(uri)
        typed.append(at - sent)
        with_problem += bool(diagnostics)
    assert with_problem == sum(1 for v in range(2, args.changes + 2) if v % 3 == 0)

    through_include: list[float] = []
    for version in range(2, args.changes // 2 + 2):
        edited = fragment_text.replace("value 7", f"value 7.{version}")
        sent = client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": fragment_uri, "version": version},
                "contentChanges": [{"text": edited}],
            },
        )
        at, _ = client.wait(uri)
        through_include.append(at - sent)
    client.close()

    from runner.lsp.diagnostics import check
    from runner.lsp.documents import Overlay

    alone: list[float] = []
    for _ in range(args.changes):
        began = time.perf_counter()
        check(agent, "agent", Overlay({str(agent): text, str(fragment): fragment_text}))
        alone.append(time.perf_counter() - began)

    lines = len(text.splitlines()) + len(fragment_text.splitlines())
    print(
        f"agent file: {len(text.splitlines())} lines, "
        f"and a {len(fragment_text.splitlines())}-line include"
    )
    print(f"server start (spawn to initialize answer): {start_s * 1000:.0f} ms")
    rows = [
        ("change -> diagnostics (agent file)", figures(typed)),
        ("change in the include -> agent's diagnostics", figures(through_include)),
        ("the check alone, in process", figures(alone)),
    ]
    print(f"{'':48} {'median':>8} {'p90':>8} {'max':>8}   (ms; debounce {args.debounce:g} ms)")
    for name, row in rows:
        print(f"{name:48} {row['median']:8.1f} {row['p90']:8.1f} {row['max']:8.1f}")
    print(
        json.dumps(
            {
                "lines": lines,
                "debounce_ms": args.debounce,
                "start_ms": round(start_s * 1000),
                **{name: row for name, row in rows},
            }
        )
    )


if __name__ == "__main__":
    main()
