"""Tools whose results can be far too large for a model's context, for the eviction tests."""

from __future__ import annotations

FILLER = "abcdefghij" * 10


def log_line(number: int) -> str:
    """Line `number` (from 1) of `export_log`: 99 characters."""
    return f"event {number:05} " + FILLER[:87]


def export_log(lines: int = 20_000) -> str:
    """Export the event log, one line per event (20,000 lines are 2,000,000 characters)."""
    return "".join(log_line(n) + "\n" for n in range(1, lines + 1))


def characters(count: int) -> str:
    """Return exactly `count` characters."""
    return "x" * count
