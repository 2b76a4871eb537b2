"""The language server's features for one buffer of the page: its located problems (what
`agentctl validate` prints), completion and hover, from `runner.lsp`'s own functions.

The page sends the whole text on each request (a 300-line file is some 10 KB); it is laid over
the disk as the language server lays an editor's unsaved buffer, so includes and refs read it.
The agents each file last loaded are kept, as the language server keeps them, so completion
still names tools and subagents while the file is half-typed.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from runner.lsp import features
from runner.lsp.diagnostics import check, diagnostics_by_file
from runner.lsp.documents import Overlay, file_kind, overlaid

__all__ = ["Language"]


def _position(position: Any) -> dict[str, int]:
    return {"line": position.line, "character": position.character}


class Language:
    """Checks, completion and hover on buffers of files of the served folder."""

    def __init__(self) -> None:
        self._specs: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def problems(self, path: Path, text: str) -> list[dict[str, Any]]:
        """The problems of `text` as the file at `path`: message and range (0-based lines and
        characters, as the language server reports them), with validate's own line:col."""
        kind = file_kind(path, text)
        if kind == "other":
            return []
        overlay = Overlay({str(path): text})
        checked = check(path, kind, overlay)
        if checked.spec is not None:
            with self._lock:
                self._specs[str(path)] = [checked.spec]
        found = diagnostics_by_file(path, checked, overlay).get(str(path), [])
        return [
            {
                "message": d.message,
                "from": _position(d.range.start),
                "to": _position(d.range.end),
                "severity": "error",
            }
            for d in found
        ]

    def specs(self, path: Path) -> list[Any]:
        """The agents the file at `path` last loaded (empty until it has loaded once)."""
        with self._lock:
            return list(self._specs.get(str(path), []))

    def complete(self, path: Path, text: str, line: int, character: int) -> list[dict[str, Any]]:
        kind = file_kind(path, text)
        if kind == "other":
            return []
        with self._lock:
            specs = list(self._specs.get(str(path), []))
        with overlaid(Overlay({str(path): text})):
            items = features.complete(text, path, kind, line, character, specs)
        out = []
        for item in items:
            edit = item.text_edit
            documentation = item.documentation
            info = getattr(documentation, "value", documentation) if documentation else None
            entry: dict[str, Any] = {
                "label": item.label,
                "type": lsp.CompletionItemKind(item.kind).name.lower() if item.kind else "text",
                "info": info,
                "apply": getattr(edit, "new_text", None) or item.insert_text or item.label,
            }
            if edit is not None and hasattr(edit, "range"):
                entry["from"] = _position(edit.range.start)
                entry["to"] = _position(edit.range.end)
            out.append(entry)
        return out

    def hover(self, path: Path, text: str, line: int, character: int) -> str | None:
        kind = file_kind(path, text)
        if kind == "other":
            return None
        with self._lock:
            specs = list(self._specs.get(str(path), []))
        with overlaid(Overlay({str(path): text})):
            return features.hover(text, path, kind, line, character, specs)
