"""A tool slow enough to be cancelled while it runs (tests/cli/test_turns.py)."""

import time


def nap(seconds: float) -> str:
    """Sleep for a while, then say so."""
    time.sleep(seconds)
    return "rested"
