"""The tool names each MCP server listed when it last started, so that the language server can
offer them before the agent runs again (`interrupt_on`, `permissions`, subagent tool lists).

They are kept in `$AGENTCTL_HOME/mcp-tools.json`, by the server's address: its `url`, or its
`command` and `args` (never its `env` or `headers`, which hold secrets). Writing is best effort:
a run never fails because this file could not be written, and a file that cannot be read is
treated as empty. Nothing here imports LangChain (the language server reads it).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.threads.home import default_home

__all__ = ["known_tools", "remember_tools", "server_key"]

FILE_NAME = "mcp-tools.json"
_LOCK = threading.Lock()


def server_key(
    *, url: str | None = None, command: str | None = None, args: Sequence[Any] = ()
) -> str:
    """The address an MCP server is remembered by."""
    if url:
        return f"url {url}"
    return "command " + json.dumps([command, *(str(a) for a in args)])


def _file(home: Path | None) -> Path:
    return (home or default_home()) / FILE_NAME


def _read(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def known_tools(key: str, *, home: Path | None = None) -> list[str] | None:
    """The names the server at `key` listed when it last started; None if it never did here."""
    entry = _read(_file(home)).get(key)
    tools = entry.get("tools") if isinstance(entry, dict) else None
    if not isinstance(tools, list):
        return None
    return [t for t in tools if isinstance(t, str)]


def remember_tools(key: str, names: Sequence[str], *, home: Path | None = None) -> None:
    """Record what the server at `key` listed (unchanged lists are not rewritten)."""
    path = _file(home)
    with _LOCK:
        found = _read(path)
        if (found.get(key) or {}).get("tools") == list(names):
            return
        found[key] = {"tools": list(names)}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(
                dir=path.parent, prefix=".mcp-tools-", suffix=".tmp"
            )
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(found, out, indent=1, sort_keys=True)
            os.replace(temporary, path)
        except OSError:
            pass
