"""The file Aegra loads the served graphs from.

Aegra imports each graph from a Python file by path (`/path/to/file.py:NAME`), executing the
file as a module of its own. This file is that module: it holds nothing, and hands every name it
is asked for to the module `graphs.register` made in this process, so `NAME` is the factory of
the agent named `NAME`.
"""

from __future__ import annotations

import sys
from typing import Any


def __getattr__(name: str) -> Any:
    from runner.serve.graphs import MODULE

    registered = sys.modules.get(MODULE)
    if registered is None or name.startswith("__"):
        raise AttributeError(name)
    return getattr(registered, name)
