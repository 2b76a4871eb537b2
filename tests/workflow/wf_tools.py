"""Tools the test workflows call: each call is appended to the file $WF_LOG (one JSON line), and
`crash_after` raises while the file $WF_CRASH exists (a crash after its side effect)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def _log(name: str, **args: Any) -> None:
    with Path(os.environ["WF_LOG"]).open("a") as log:
        log.write(json.dumps({"tool": name, **args}) + "\n")


def publish(body: str) -> str:
    """Publish a text."""
    _log("publish", body=body)
    return f"published {len(body)} characters"


def stats(words: list[str]) -> dict[str, Any]:
    """Count words."""
    _log("stats", words=words)
    return {"count": len(words), "first": words[0] if words else None}


def crash_after(text: str) -> str:
    """Record a side effect, then fail while $WF_CRASH exists (and, when it holds a text, the
    text is that one)."""
    _log("crash_after", text=text)
    flag = Path(os.environ["WF_CRASH"])
    if flag.exists() and flag.read_text() in ("", text):
        raise RuntimeError("simulated crash")
    return "ok"


def calls(log: Path) -> list[dict[str, Any]]:
    """The calls logged so far."""
    return [json.loads(line) for line in log.read_text().splitlines() if line]


class _Gauge:
    """How many `busy` calls run at once, and the most seen."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.now = 0
        self.most = 0


GAUGE = _Gauge()


def busy(n: int) -> int:
    """Hold a slot for a moment."""
    import time

    with GAUGE.lock:
        GAUGE.now += 1
        GAUGE.most = max(GAUGE.most, GAUGE.now)
    time.sleep(0.02)
    with GAUGE.lock:
        GAUGE.now -= 1
    return n * 10


def gate(text: str) -> str:
    """Record a call; for the text named by $WF_GATE (`TEXT=PATH`), then wait until PATH
    exists (the test kills the process while it waits)."""
    _log("gate", text=text)
    name, _, path = os.environ.get("WF_GATE", "").partition("=")
    if name == text:
        import time

        while not Path(path).exists():
            time.sleep(0.01)
    return f"passed {text}"


def slow(text: str) -> str:
    """Record a call, then take a moment (the random-kill test's side effect in flight)."""
    import time

    _log("slow", text=text)
    time.sleep(0.15)
    return f"noted {text}"
