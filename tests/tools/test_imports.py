"""`path/to/file.py:name` imports of tools: a file module is imported once, and a thread that
asks for it while another imports it waits for the whole module (a server builds graphs in
several threads at once)."""

from __future__ import annotations

import threading
from pathlib import Path

from runner.errors import Problem
from runner.tools.imports import import_object


def _locate(message: str) -> Problem:
    return Problem("agent.yaml", 1, 1, "tools[0].import", message)


def test_threads_importing_one_file_at_once_each_get_the_whole_module(tmp_path: Path) -> None:
    slow = tmp_path / "slow_tools.py"
    slow.write_text(
        "import time\ntime.sleep(0.3)  # the module is half-run meanwhile\n\n"
        "def step(n: int) -> str:\n    return str(n)\n"
    )
    found: list[object] = []
    failed: list[BaseException] = []

    def load() -> None:
        try:
            found.append(import_object(f"{slow}:step", _locate))
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed, failed
    assert len(found) == 4 and len({id(f) for f in found}) == 1
