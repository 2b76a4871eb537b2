"""The `agentctl` program's entry point: its console script, and `python -m runner`."""

from __future__ import annotations

import gc
from typing import Any


def main() -> Any:
    """`runner.cli.main()`, with the cyclic garbage collector held off from before the CLI is
    imported: importing click and the command table makes objects that live as long as the
    process, and the collections they set off free nothing (0.5% of the instructions of an
    `agentctl validate` of one file). `runner.cli.startup` lets it run again where each command
    starts its work, as when `runner.cli.main` holds it itself."""
    was_on = gc.isenabled()
    gc.disable()
    from runner.cli import main, startup

    if was_on:
        startup.hold(off_already=True)
    return main()
