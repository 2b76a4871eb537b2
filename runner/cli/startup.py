"""The cyclic garbage collector held off while a command starts.

Starting `agentctl run` imports LangChain and LangGraph and builds the agent: some 300,000
objects that live as long as the process, and next to no cyclic garbage. CPython's collector
does not know that: it examines the young objects every 2,000 allocations and the survivors
again every tenth time, about 60 ms of CPU over the import of `langchain.agents` alone, for
nothing it can free. So the program (`runner.cli.main`) holds the collector off for the commands
in `HELD`, and each of them calls `started()` once it has what it needs and begins the work
whose garbage can grow (the turns of a run, the files of a folder). `started()` freezes what
start-up made (moves it out of every later collection's sight: its few cycles, if any, stay)
and lets the collector run as before for the rest of the process.

`main(argv)` called from Python (the tests) never holds it off.
"""

from __future__ import annotations

import gc

HELD = frozenset({"run", "validate"})
"""The commands that call `started()` on every path to their work."""

_held = False


def hold() -> None:
    """Hold the collector off until `started()` (no-op when it is already off)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def started() -> None:
    """Start-up is over: freeze what it made and let the collector run again (no-op unless
    `hold()` turned it off)."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
