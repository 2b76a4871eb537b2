"""Agent paths and glob patterns: one set of rules for every backend and for the file tools.

An agent path is an absolute POSIX path (`/dir/file.txt`). `validate_path` is the single gate every
path passes before a backend uses it: it refuses what could escape a root or means something else
on another system (`..`, `~`, `C:\\`, `\\\\server`, NUL bytes) with a message the agent can act
on, and returns the normal form (`//a/./b/` becomes `/a/b`). A backend that maps paths to a real
directory adds its own symlink check on top (see `filesystem.py`); the rules here are lexical.

Glob patterns follow the same syntax everywhere so `glob` means one thing on every backend:
`*` and `?` stay within one path segment (and match leading dots), `**` as a whole segment matches
any number of directories (at the end, everything below: `a/**` is what is inside `a`), `[abc]`
and `[!abc]` are character classes, `{a,b}` alternatives, and a backslash escapes the next
character. A relative pattern is matched against the path relative to the base directory; an
absolute one against the whole path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from runner.backends.protocol import BackendError, PathError

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_PATH_DEPTH",
    "GlobMatcher",
    "compile_glob",
    "file_filter",
    "is_within",
    "join_path",
    "normalize_glob",
    "parent_dirs",
    "relative_to",
    "validate_path",
]

MAX_PATH_BYTES = 4096
"""The longest agent path, in UTF-8 bytes (the usual PATH_MAX)."""
MAX_PATH_DEPTH = 256
"""The most directories an agent path may name."""
MAX_NAME_BYTES = 255
"""The longest file or directory name, in UTF-8 bytes (the usual NAME_MAX)."""

_WINDOWS = re.compile(r"^(?:[A-Za-z]:|\\\\)")
_EXAMPLE = "use paths like /dir/file.txt"


def _escape_braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _shorten(path: str) -> str:
    return path if len(path) <= 120 else path[:100] + "..." + path[-17:]


def validate_path(path: str, *, allowed_prefixes: Iterable[str] | None = None) -> str:
    """The normal form of an agent path, or a `PathError` saying what is wrong and what to use.

    With `allowed_prefixes` (such as `["/memories/"]`) the path must be one of those directories
    or lie under one of them.
    """
    if not isinstance(path, str) or not path.strip():
        raise PathError(f"Path must not be empty; {_EXAMPLE}")
    if "\0" in path:
        raise PathError("Path contains a NUL byte: {0}", path)
    if _WINDOWS.match(path):
        raise PathError("Windows paths are not supported: {0}; " + _EXAMPLE, path)
    if "\\" in path:
        raise PathError(
            "Backslashes are not allowed in paths: {0}; separate directories with '/'", path
        )
    if path.startswith("~"):
        raise PathError("Home-directory paths are not allowed: {0}; " + _EXAMPLE, path)
    segments = path.split("/")
    if ".." in segments:
        raise PathError("Path traversal is not allowed: {0}", path)
    if not path.startswith("/"):
        raise PathError("Path must be absolute (start with '/'): {0}; " + _EXAMPLE, path)
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathError("Path is not valid Unicode text: {0}", path) from None
    if len(encoded) > MAX_PATH_BYTES:
        raise PathError(
            f"Path is {len(encoded):,} bytes long, over the limit of {MAX_PATH_BYTES:,}: {{0}}",
            _shorten(path),
        )
    if sum(1 for segment in segments if segment not in ("", ".")) > MAX_PATH_DEPTH:
        raise PathError(
            f"Path has more than {MAX_PATH_DEPTH} directories; use a shorter path",
            _shorten(path),
        )
    if any(len(segment.encode("utf-8")) > MAX_NAME_BYTES for segment in segments):
        raise PathError(
            f"Path has a name longer than {MAX_NAME_BYTES} bytes: {{0}}", _shorten(path)
        )
    normal = "/" + "/".join(segment for segment in segments if segment not in ("", "."))
    if allowed_prefixes is not None:
        prefixes = [validate_path(prefix) for prefix in allowed_prefixes]
        if not any(is_within(normal, prefix) for prefix in prefixes):
            allowed = ", ".join(prefix.rstrip("/") + "/" for prefix in prefixes) or "(none)"
            raise PathError(
                "Path {0} is outside the allowed directories: " + _escape_braces(allowed), normal
            )
    return normal


def is_within(path: str, directory: str) -> bool:
    """Whether normal path `path` is `directory` itself or lies under it."""
    return directory == "/" or path == directory or path.startswith(directory + "/")


def join_path(directory: str, relative: str) -> str:
    """`directory` joined with a path inside it, in normal form (`/a` + `b` or `/b` = `/a/b`)."""
    relative = relative.strip("/")
    if not relative:
        return directory
    return ("" if directory == "/" else directory) + "/" + relative


def relative_to(path: str, directory: str) -> str:
    """`path` relative to `directory` (which contains it); "" for the directory itself."""
    if path == directory:
        return ""
    return path[1:] if directory == "/" else path[len(directory) + 1 :]


def parent_dirs(path: str) -> list[str]:
    """The directories above `path`, outermost first, without `/`: `/a/b/c` gives `/a`, `/a/b`."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: index + 1]) for index in range(len(parts))]


def normalize_glob(pattern: str, path: str = "/") -> tuple[str, str, str]:
    """`(base, relative_pattern, within)` for a glob call.

    A relative pattern is matched under `base` = `path`. An absolute pattern (`/src/**/*.py`) is
    matched from `/`, and only results within `path` count, so every backend and route treats it
    alike.
    """
    if not isinstance(pattern, str) or not pattern.strip():
        raise BackendError("The glob pattern must not be empty; try '**/*' for every file")
    if "\0" in pattern:
        raise PathError("The glob pattern contains a NUL byte: {0}", pattern)
    if ".." in pattern.split("/"):
        raise PathError("Path traversal is not allowed in glob patterns: {0}", pattern)
    within = validate_path(path)
    if pattern.startswith("/"):
        return "/", pattern.lstrip("/") or "**", within
    return within, pattern, within


@dataclass(frozen=True)
class GlobMatcher:
    """A compiled glob: `matches(relative_path)`, plus what a directory walk may skip."""

    regex: re.Pattern[str]
    literal_prefix: tuple[str, ...]
    """Leading segments every match starts with: a walk can start there."""
    max_depth: int | None
    """Most segments a match can have (None with `**`): a walk need not go deeper."""

    def matches(self, relative_path: str) -> bool:
        return self.regex.fullmatch(relative_path) is not None

    def may_match_under(self, relative_dir: str) -> bool:
        """False when no file under `relative_dir` can match (a cheap, conservative test)."""
        parts = relative_dir.split("/") if relative_dir else []
        if self.max_depth is not None and len(parts) >= self.max_depth:
            return False
        common = min(len(parts), len(self.literal_prefix))
        return parts[:common] == list(self.literal_prefix[:common])


_MAX_ALTERNATIVES = 256
_SPECIAL = set("*?[{\\")


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> GlobMatcher:
    """Compile a relative glob pattern (see the module docstring for the syntax)."""
    if len(pattern) > MAX_PATH_BYTES:
        raise BackendError(
            f"The glob pattern is {len(pattern):,} characters long, over the limit of "
            f"{MAX_PATH_BYTES:,}; use a shorter one"
        )
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise PathError("The glob pattern is not valid Unicode text: {0}", pattern) from None
    if "\0" in pattern:
        raise PathError("The glob pattern contains a NUL byte: {0}", pattern)
    alternatives = _expand_braces(pattern)
    for alternative in alternatives:
        if ".." in alternative.split("/"):
            raise PathError("Path traversal is not allowed in glob patterns: {0}", pattern)
        if alternative.startswith("/"):
            raise PathError(
                "A brace alternative in a glob pattern cannot be an absolute path: {0}; "
                "start the whole pattern with '/' instead",
                pattern,
            )
    regexes: list[str] = []
    prefixes: list[list[str]] = []
    depths: list[int | None] = []
    for alternative in alternatives:
        segments = [s for s in alternative.split("/") if s not in ("", ".")]
        collapsed: list[str] = []
        for segment in segments:
            if not (segment == "**" and collapsed and collapsed[-1] == "**"):
                collapsed.append(segment)
        regexes.append(_translate(collapsed))
        literal: list[str] = []
        for segment in collapsed[:-1]:
            if _SPECIAL & set(segment):
                break
            literal.append(segment)
        prefixes.append(literal)
        depths.append(None if "**" in collapsed else len(collapsed))
    common = prefixes[0]
    for prefix in prefixes[1:]:
        index = 0
        while index < min(len(common), len(prefix)) and common[index] == prefix[index]:
            index += 1
        common = common[:index]
    max_depth = None if None in depths else max(d for d in depths if d is not None)
    regex = re.compile("|".join(f"(?:{r})" for r in regexes), re.DOTALL)
    return GlobMatcher(regex, tuple(common), max_depth)


def file_filter(glob: str | None) -> Callable[[str], bool]:
    """grep's file filter: a glob with a `/` matches the path relative to the search base, one
    without matches the file name at any depth (`*.py`). None accepts every file."""
    if glob is None or not glob.strip():
        return lambda _relative: True
    if ".." in glob.split("/"):
        raise PathError("Path traversal is not allowed in glob patterns: {0}", glob)
    matcher = compile_glob(glob.lstrip("/"))
    if "/" in glob:
        return matcher.matches
    return lambda relative: matcher.matches(relative.rsplit("/", 1)[-1])


# Every `*` (within a segment) and `**` (across segments) but the last is matched by an atomic
# lazy group: taking the earliest place where the next fixed-length piece matches never loses a
# match, and it keeps patterns like `*a*a*a*a*b` linear instead of exponential in the name length.


def _translate(segments: list[str]) -> str:
    groups: list[list[str]] = [[]]
    for segment in segments:
        if segment == "**":
            groups.append([])
        else:
            groups[-1].append(_translate_segment(segment))
    if len(groups) == 1:
        return "/".join(groups[0])
    first, *middle, last = ("/".join(group) for group in groups)
    out = first + "/" if first else ""
    out += "".join(f"(?>(?:[^/]+/)*?{piece}/)" for piece in middle)
    return out + (f"(?:[^/]+/)*{last}" if last else ".*")


def _translate_segment(segment: str) -> str:
    pieces: list[list[str]] = [[]]
    index = 0
    while index < len(segment):
        char = segment[index]
        index += 1
        if char == "*":
            if pieces[-1] or len(pieces) == 1:
                pieces.append([])
        elif char == "?":
            pieces[-1].append("[^/]")
        elif char == "\\" and index < len(segment):
            pieces[-1].append(re.escape(segment[index]))
            index += 1
        elif char == "[" and (end := _class_end(segment, index)) is not None:
            body = segment[index:end]
            index = end + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = "".join(c if c == "-" else re.escape(c) for c in body)
            pieces[-1].append(f"[^/{body}]" if negate else f"[{body}]")
        else:
            pieces[-1].append(re.escape(char))
    if len(pieces) == 1:
        return "".join(pieces[0])
    first, *middle, last = ("".join(piece) for piece in pieces)
    return first + "".join(f"(?>[^/]*?{piece})" for piece in middle) + "[^/]*" + last


def _class_end(segment: str, start: int) -> int | None:
    """The index of the `]` closing a class opened just before `start`, or None (a literal `[`)."""
    end = start
    if end < len(segment) and segment[end] in "!^":
        end += 1
    if end < len(segment) and segment[end] == "]":
        end += 1
    end = segment.find("]", end)
    return None if end == -1 else end


def _expand_braces(pattern: str) -> list[str]:
    """`a{b,c}d` gives `abd`, `acd`; nested braces work; a brace without a comma is literal."""
    results: list[str] = []
    pending = [pattern]
    while pending:
        current = pending.pop()
        span = _first_brace_group(current)
        if span is None:
            results.append(current)
        else:
            start, end, options = span
            pending.extend(current[:start] + option + current[end:] for option in reversed(options))
        if len(results) + len(pending) > _MAX_ALTERNATIVES:
            raise BackendError(
                f"The glob pattern {{0}} expands to more than {_MAX_ALTERNATIVES} alternatives; "
                "use fewer brace groups",
                pattern,
            )
    return list(dict.fromkeys(results))


def _first_brace_group(pattern: str) -> tuple[int, int, list[str]] | None:
    """The first `{...}` to close that holds a comma at its own level: (start, end after `}`,
    options). Braces without a comma, and unbalanced ones, are literal."""
    open_groups: list[tuple[int, list[int]]] = []  # where each open `{` is, and its commas
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 1
        elif char == "{":
            open_groups.append((index, []))
        elif char == "," and open_groups:
            open_groups[-1][1].append(index)
        elif char == "}" and open_groups:
            start, commas = open_groups.pop()
            if commas:
                bounds = [start, *commas, index]
                options = [pattern[a + 1 : b] for a, b in pairwise(bounds)]
                return start, index + 1, options
        index += 1
    return None
