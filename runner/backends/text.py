"""The text rules every backend shares, so `read`, `edit` and `grep` agree to the line.

A file's lines are its content split on `\\n`; a final newline does not start another line, and
an empty file has no lines. `grep` uses the same lines: a match's `line` is the 1-based number
`read` shows for it, and its `text` is the line without `\\n` (and without a `\\r` before it). A
file with a NUL character is binary: `grep` skips it on every backend, as ripgrep does.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from runner.backends.protocol import BackendError, GrepMatch, ReadResult

__all__ = [
    "check_grep_pattern",
    "grep_regex",
    "grep_text",
    "iso_from_timestamp",
    "now_iso",
    "read_lines",
    "replace_exact",
    "split_lines",
]


def now_iso() -> str:
    """The current time, ISO 8601 in UTC."""
    return datetime.now(UTC).isoformat()


def iso_from_timestamp(timestamp: float) -> str:
    """A POSIX timestamp (such as `st_mtime`) as ISO 8601 in UTC."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def split_lines(content: str) -> list[str]:
    """The lines of `content` (see the module docstring)."""
    if not content:
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


def read_lines(path: str, content: str, offset: int, limit: int) -> ReadResult:
    """Lines `offset` (0-based) to `offset + limit` of `content`, the file at agent path `path`."""
    if offset < 0:
        raise BackendError(f"offset must be 0 or more, got {offset}")
    if limit < 1:
        raise BackendError(f"limit must be at least 1, got {limit}")
    lines = split_lines(content)
    if offset >= len(lines) and offset > 0:
        raise BackendError(
            f"Line offset {offset} is past the end of {{0}}, which has {_lines(len(lines))}",
            path,
        )
    return ReadResult("\n".join(lines[offset : offset + limit]), offset + 1, len(lines))


def replace_exact(
    path: str, content: str, old_string: str, new_string: str, replace_all: bool
) -> tuple[str, int]:
    """`content` with `old_string` replaced, and how many occurrences were replaced."""
    if not old_string:
        raise BackendError("old_string must not be empty; to create a file use write_file")
    if old_string == new_string:
        raise BackendError("old_string and new_string are identical; there is nothing to change")
    count = content.count(old_string)
    if count == 0:
        raise BackendError(
            "old_string was not found in {0}; it must match the file exactly, including "
            "whitespace and indentation: read the file and copy the text",
            path,
        )
    if count > 1 and not replace_all:
        raise BackendError(
            f"old_string occurs {count} times in {{0}}; include more surrounding lines to make "
            "it unique, or set replace_all to replace every occurrence",
            path,
        )
    return content.replace(old_string, new_string, -1 if replace_all else 1), (
        count if replace_all else 1
    )


def check_grep_pattern(pattern: str) -> None:
    """Refuse patterns no backend can search for line by line."""
    if not isinstance(pattern, str) or pattern == "":
        raise BackendError("The grep pattern must not be empty")
    if "\0" in pattern:
        raise BackendError("The grep pattern must not contain a NUL character")
    if "\n" in pattern or "\r" in pattern:
        raise BackendError(
            "The grep pattern must be a single line; grep matches one line at a time"
        )
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise BackendError("The grep pattern is not valid Unicode text") from None


def grep_regex(pattern: str) -> re.Pattern[str]:
    """`pattern` (already checked) as the regular expression `grep(regex=True)` searches each
    line for (Python `re` syntax, searched anywhere in the line), or a BackendError saying why
    it is not one."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise BackendError(
            f"The grep pattern is not a valid regular expression ({exc}); fix it, or search "
            "for literal text with regex false"
        ) from None


def grep_text(
    path: str, content: str, pattern: str, regex: re.Pattern[str] | None = None
) -> list[GrepMatch]:
    """The lines of `content` containing `pattern` literally, or matching `regex` when given;
    none for a binary (NUL) file."""
    if "\0" in content:
        return []
    if regex is not None:
        return [
            GrepMatch(path, number, text)
            for number, line in enumerate(split_lines(content), start=1)
            if regex.search(text := line.removesuffix("\r"))
        ]
    if pattern not in content:
        return []
    return [
        GrepMatch(path, number, line.removesuffix("\r"))
        for number, line in enumerate(split_lines(content), start=1)
        if pattern in line
    ]
