"""How the file tools write their results: listings, numbered lines, grep output, previews of
large results, images, and what a finished command reports."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from runner.backends import (
    BackendError,
    FileInfo,
    GrepMatch,
)
from runner.backends.text import split_lines
from runner.middleware.filesystem.texts import (
    LIST_TRUNCATED,
    LONG_LINE,
)


def number_lines(content: str, start_line: int) -> str:
    """`cat -n` style rows; a line over 5,000 characters continues in rows `N.1`, `N.2`, ..."""
    rows = []
    for offset, line in enumerate(content.split("\n")):
        number = start_line + offset
        if len(line) <= LONG_LINE:
            rows.append(f"{number:>6}\t{line}")
            continue
        chunks = [line[i : i + LONG_LINE] for i in range(0, len(line), LONG_LINE)]
        rows.append(f"{number:>6}\t{chunks[0]}")
        rows.extend(f"{f'{number}.{k}':>6}\t{chunk}" for k, chunk in enumerate(chunks[1:], 1))
    return "\n".join(rows)


def _when(modified_at: str) -> str:
    """An ISO 8601 time as `2026-11-24 15:50:07 UTC` (as given when it does not parse)."""
    try:
        moment = datetime.fromisoformat(modified_at)
    except ValueError:
        return modified_at
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if moment.tzinfo else "")


def ls_line(info: FileInfo) -> str:
    """One `ls` entry: `/a.md (21 bytes, modified 2026-11-24 15:50:07 UTC)`; a folder is its
    path ending in `/` on every backend (the state and store backends keep no folder times)."""
    if info.is_dir:
        return f"{info.path.rstrip('/')}/"
    details = [] if info.size is None else [f"{info.size:,} bytes"]
    if info.modified_at:
        details.append(f"modified {_when(info.modified_at)}")
    return f"{info.path} ({', '.join(details)})" if details else info.path


def truncate_lines(lines: list[str], max_chars: int) -> str:
    """Lines joined, cut at a line boundary when longer than `max_chars`."""
    total = 0
    for index, line in enumerate(lines):
        total += len(line) + 1
        if total > max_chars:
            return "\n".join(lines[:index]) + LIST_TRUNCATED.format(more=len(lines) - index)
    return "\n".join(lines)


def _line_start(line: str, number: int, budget: int) -> tuple[int, str]:
    """(characters shown, rows) for the start of `line` that fits in `budget` characters."""
    keep = budget
    while True:
        text = number_lines(line[:keep], number)
        if len(text) <= budget or keep <= 1:
            return keep, text
        keep = max(1, keep - (len(text) - budget))


def preview(content: str, *, head: int = 5, tail: int = 5, width: int = 1000) -> str:
    """The first and last lines of `content`, each cut to `width` characters, numbered as
    read_file numbers them."""
    lines = [line[:width] for line in split_lines(content)]
    if len(lines) <= head + tail:
        return number_lines("\n".join(lines), 1)
    skipped = len(lines) - head - tail
    return (
        number_lines("\n".join(lines[:head]), 1)
        + f"\n... [{skipped:,} lines not shown] ...\n"
        + number_lines("\n".join(lines[-tail:]), len(lines) - tail + 1)
    )


def format_grep(matches: list[GrepMatch], mode: str) -> list[str]:
    if mode == "content":
        return [f"{m.path}:{m.line}: {m.text}" for m in matches]
    counts: dict[str, int] = {}
    for match in matches:
        counts[match.path] = counts.get(match.path, 0) + 1
    if mode == "count":
        return [f"{path}: {count}" for path, count in counts.items()]
    return list(counts)


REGEX_SYNTAX = re.compile(r"[\\^$|*+?()\[\]{}]")


LITERAL_NOTE = (
    " (grep searched for the pattern as literal text; to search for a regular expression, "
    "call grep again with regex true)"
)


def no_matches(pattern: str, regex: bool = False) -> str:
    """grep's answer when nothing matched; when the pattern looks like a regular expression
    but was searched literally, it says so, so the model does not conclude the text is absent."""
    note = LITERAL_NOTE if not regex and REGEX_SYNTAX.search(pattern) else ""
    return f"No matches for {pattern!r}{note}"


DEFAULT_CONTEXT_LINES = 2
"""Lines shown before and after each match in grep's `content` mode, unless the call asks."""


@dataclass(frozen=True)
class ContextWindow:
    """Matches of one file close enough to share their context: lines `first`..`last`."""

    path: str
    first: int
    last: int
    matches: list[GrepMatch]


def context_windows(matches: list[GrepMatch], context: int) -> list[ContextWindow]:
    """The matches (sorted by path, then line) grouped into the line ranges shown around them:
    ranges that overlap or touch are merged, as grep -C merges them."""
    windows: list[ContextWindow] = []
    for match in matches:
        first, last = max(1, match.line - context), match.line + context
        previous = windows[-1] if windows else None
        if previous is not None and previous.path == match.path and first <= previous.last + 1:
            windows[-1] = ContextWindow(
                match.path, previous.first, last, [*previous.matches, match]
            )
        else:
            windows.append(ContextWindow(match.path, first, last, [match]))
    return windows


def window_text(read: Callable[..., Any], window: ContextWindow) -> list[str] | None:
    """The lines of `window` as `read` gives them, or None when the file cannot be read now."""
    try:
        return _lines_of(read(window.path, window.first - 1, window.last - window.first + 1))
    except (BackendError, OSError):
        return None


async def awindow_text(
    read: Callable[..., Awaitable[Any]], window: ContextWindow
) -> list[str] | None:
    try:
        return _lines_of(await read(window.path, window.first - 1, window.last - window.first + 1))
    except (BackendError, OSError):
        return None


def _lines_of(result: Any) -> list[str]:
    return [line.removesuffix("\r") for line in result.content.split("\n")]


def format_context(windows: list[ContextWindow], texts: list[list[str] | None]) -> list[str]:
    """grep -C style rows: `path:12: text` for a matching line, `path-13- text` for a line of
    context, `--` between windows. A window whose file was not read (beyond the budget, or gone)
    shows its matching lines only."""
    rows: list[str] = []
    for index, window in enumerate(windows):
        if index:
            rows.append("--")
        lines = texts[index] if index < len(texts) else None
        if lines is None:
            rows.extend(f"{m.path}:{m.line}: {m.text}" for m in window.matches)
            continue
        matched = {m.line for m in window.matches}
        for number, text in enumerate(lines, start=window.first):
            mark = ":" if number in matched else "-"
            rows.append(f"{window.path}{mark}{number}{mark} {text}")
    return rows


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image read_file returns (Anthropic's limit for one image)."""


def is_image_path(path: str) -> bool:
    return path.lower().endswith(IMAGE_SUFFIXES)


def image_type(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes, told from their first bytes (the name may
    be wrong: a JPEG saved as .png is sent as a JPEG)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def sanitize_id(tool_call_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tool_call_id)[:120] or "result"


def execution_report(result: Any) -> str:
    """What the model reads of a finished command: its output, exit code and truncation."""
    parts = [result.output.rstrip("\n")]
    if result.exit_code is not None:
        status = "succeeded" if result.exit_code == 0 else "failed"
        parts.append(f"[Command {status} with exit code {result.exit_code}]")
    if result.truncated:
        parts.append("[Output was truncated due to size limits: its middle is not shown]")
    return "\n".join(p for p in parts if p)
