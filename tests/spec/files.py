"""Writing small trees of spec files for tests."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (relative name -> text, dedented) under `root`; return the first one."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root / next(iter(files))
