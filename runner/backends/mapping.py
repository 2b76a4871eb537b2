"""`ls`, `glob` and `grep` over a flat map of path to `FileData`: the state and store backends.

Those backends hold files, not directories: a directory exists while some file lies under it, and
`/` always exists. Listing one therefore scans the keys once; the backends hand these functions an
iterable of `(path, FileData)` pairs (a dict's items, or a store's paginated search) so the rules
live here once.
"""

from __future__ import annotations

from collections.abc import Iterable

from runner.backends.paths import (
    compile_glob,
    file_filter,
    is_within,
    join_path,
    normalize_glob,
    relative_to,
    validate_path,
)
from runner.backends.protocol import (
    FILE_NOT_FOUND,
    BackendError,
    FileData,
    FileInfo,
    GrepMatch,
    too_large,
)
from runner.backends.text import check_grep_pattern, grep_regex, grep_text

__all__ = [
    "check_creatable",
    "file_bytes",
    "file_info",
    "file_text",
    "glob_files",
    "grep_files",
    "list_directory",
    "missing_file_error",
]

Items = Iterable[tuple[str, FileData]]


def _is_binary(data: FileData) -> bool:
    return data.get("encoding") == "base64"


def _decoded_size(base64_text: str) -> int:
    return len(base64_text) * 3 // 4 - base64_text[-2:].count("=")


def file_info(path: str, data: FileData) -> FileInfo:
    content = data["content"]
    size = _decoded_size(content) if _is_binary(data) else len(content.encode("utf-8"))
    return FileInfo(path, False, size, data["modified_at"])


def file_text(path: str, data: FileData) -> str:
    """The text of a stored file; a binary one is refused (read it with `read_bytes`)."""
    if _is_binary(data):
        raise BackendError("{0} is a binary file and cannot be read as text", path)
    return data["content"]


def file_bytes(path: str, data: FileData, max_bytes: int) -> bytes:
    """The bytes of a stored file: base64-decoded when it is binary, else its UTF-8 text."""
    import base64
    import binascii

    content = data["content"]
    if not _is_binary(data):
        raw = content.encode("utf-8")
    elif _decoded_size(content) > max_bytes:
        raise too_large(path, _decoded_size(content), max_bytes)
    else:
        try:
            raw = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise BackendError("{0} is stored as base64 but is not valid base64", path) from None
    if len(raw) > max_bytes:
        raise too_large(path, len(raw), max_bytes)
    return raw


def _require_directory(path: str, *, has_children: bool, is_file: bool) -> None:
    if has_children or path == "/":
        return
    if is_file:
        raise BackendError("{0} is a file, not a directory; use read_file to read it", path)
    raise BackendError("Directory not found: {0}", path)


def list_directory(items: Items, path: str) -> list[FileInfo]:
    """The files and directories directly under `path` (a normal agent path), sorted by path."""
    entries: dict[tuple[str, bool], FileInfo] = {}
    is_file = False
    for key, data in items:
        if key == path:
            is_file = True
        elif is_within(key, path):
            head, below, _ = relative_to(key, path).partition("/")
            child = join_path(path, head)
            entries[(child, bool(below))] = (
                FileInfo(child, True) if below else file_info(child, data)
            )
    _require_directory(path, has_children=bool(entries), is_file=is_file)
    return [entries[key] for key in sorted(entries)]


def glob_files(items: Items, pattern: str, path: str) -> list[FileInfo]:
    """The files matching `pattern` under `path` (see `paths.normalize_glob`), sorted by path."""
    base, relative_pattern, within = normalize_glob(pattern, path)
    matcher = compile_glob(relative_pattern)
    found: list[FileInfo] = []
    has_children = is_file = False
    for key, data in items:
        if key == base:
            is_file = True
        elif is_within(key, base):
            has_children = True
            if is_within(key, within) and matcher.matches(relative_to(key, base)):
                found.append(file_info(key, data))
    _require_directory(base, has_children=has_children, is_file=is_file)
    return sorted(found, key=lambda info: info.path)


def grep_files(
    items: Items, pattern: str, path: str | None, glob: str | None, regex: bool = False
) -> list[GrepMatch]:
    """Lines containing `pattern` (matching it, with `regex`) in the file `path` or the files
    under it that pass `glob`."""
    check_grep_pattern(pattern)
    compiled = grep_regex(pattern) if regex else None
    base = validate_path(path or "/")
    accept = file_filter(glob)
    matches: list[GrepMatch] = []
    exists = base == "/"
    for key, data in items:
        if key == base:
            relative = key.rsplit("/", 1)[-1]
        elif is_within(key, base):
            relative = relative_to(key, base)
        else:
            continue
        exists = True
        if accept(relative) and not _is_binary(data):
            matches.extend(grep_text(key, data["content"], pattern, compiled))
    if not exists:
        raise BackendError("Path not found: {0}", base)
    return sorted(matches, key=lambda match: (match.path, match.line))


def missing_file_error(path: str, items: Items) -> BackendError:
    """The error for reading or editing `path` that holds no file: not found, or a directory."""
    if path == "/" or any(is_within(key, path) for key, _ in items):
        return BackendError("{0} is a directory, not a file; use ls to list it", path)
    return BackendError(FILE_NOT_FOUND, path)


def check_creatable(path: str, existing: dict[str, bool]) -> None:
    """Refuse to create `path` when it exists or a directory above it is a file.

    `existing` says, for `path` and each of its `parent_dirs`, whether a file is stored there: the
    backends look those few keys up directly, so the cost does not grow with the number of files.
    """
    if path == "/":
        raise BackendError("{0} is a directory, not a file; choose a file path inside it", path)
    if existing.get(path):
        raise BackendError("File {0} already exists; read it and use edit_file to change it", path)
    for parent, is_file in existing.items():
        if parent != path and is_file:
            raise BackendError("Cannot create {0}: {1} is a file, not a directory", path, parent)
