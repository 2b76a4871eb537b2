"""A tool whose side effect the crash tests count: every call appends its name to $EFFECT_LOG.

`EFFECT_GATE=NAME=PATH`: after NAME's effect, the call waits until PATH exists (the test holds
the process there, in flight, to kill it or to race another process against it).
`EFFECT_CRASH=NAME`: after NAME's effect, the call raises `SimulatedCrash`, a BaseException that
nothing catches (a crash in flight, for in-process tests).
"""

from __future__ import annotations

import os
import time


class SimulatedCrash(BaseException):
    """The process dying in the middle of a tool call."""


def record(name: str) -> str:
    """Record NAME in the effect log."""
    with open(os.environ["EFFECT_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{name}\n")
    gated, _, path = os.environ.get("EFFECT_GATE", "").partition("=")
    if gated == name:
        while not os.path.exists(path):  # the test opens the gate; no time limit of ours
            time.sleep(0.01)
    if os.environ.get("EFFECT_CRASH") == name:
        raise SimulatedCrash(f"crash in flight in {name}")
    return f"recorded {name}"
