"""The editor's buffers as agentctl sees them: an overlay over the disk, and what kind of file
each one is."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlparse
from urllib.request import pathname2url

from runner.lsp._deps import (
    CASSETTE_SUFFIXES,
    SOURCE_OVERLAY,
    SPEC_SUFFIXES,
    is_cassette,
    is_test_file_name,
    read_source,
    read_yaml,
)


def uri_to_path(uri: str) -> Path | None:
    """The file of a `file:` URI (None for another scheme: an untitled buffer)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(os.path.abspath(unquote(parsed.path)))


def path_to_uri(path: str | os.PathLike[str]) -> str:
    return "file://" + pathname2url(os.path.abspath(path))


class Overlay(Mapping[str, str]):
    """Open buffers by absolute path; records each file a check read through it (`reads`), so a
    change to an included file re-checks the files that include it."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = dict(texts)
        self.reads: set[str] = set()

    def __getitem__(self, key: str) -> str:
        return self._texts[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.reads.add(key)
        return self._texts.get(key, default)


@contextmanager
def overlaid(overlay: Overlay) -> Iterator[Overlay]:
    """Every `read_source` inside reads the buffers first."""
    token = SOURCE_OVERLAY.set(overlay)
    try:
        yield overlay
    finally:
        SOURCE_OVERLAY.reset(token)


def file_kind(path: Path, text: str) -> str:
    """`test`, `cassette`, `fragment` (an include file such as `_base.yaml`), `workflow` (a
    file with a top-level `workflow:`), `agent`, or `other` (not YAML): which checks the file
    gets."""
    name = path.name
    if not name.endswith(SPEC_SUFFIXES):
        return "other"
    if is_test_file_name(path):
        return "test"
    if name.endswith(CASSETTE_SUFFIXES):
        return "cassette"
    if name.startswith(("_", ".")):
        return "fragment"
    head = "".join(text.splitlines(keepends=True)[:3])
    if "agent.schema.json" not in head and re.search(r"^(agents\s*:|-(\s|$))", text, re.M):
        value = read_yaml(text, str(path), env={}).value
        if is_cassette(path, value):
            return "cassette"
    if re.search(r"^workflow\s*:", text, re.M):
        return "workflow"
    return "agent"


def read_text(path: Path) -> str | None:
    """A file's text, the buffer's when it is open (inside `overlaid`); None if unreadable."""
    try:
        return read_source(path)
    except (OSError, ValueError):
        return None
