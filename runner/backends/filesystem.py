"""The `filesystem` backend: a real directory, `root_dir`, usually seen by the agent as `/`.

In virtual mode (the default) an agent path names a place under `root_dir` and nothing else:
`validate_path` refuses `..`, `~` and Windows syntax, and every path is then fully resolved (all
symbolic links followed, as the OS would) and refused with a `PathError` unless the result is still
inside `root_dir`. The resolved path, not the agent's, is what gets opened, with `O_NOFOLLOW`, so a
link outside is never followed even by accident. Directory walks (`glob`, `grep`) do not follow
links at all (see `search.py`). Turning virtual mode off makes agent paths host paths: only for
trusted agents.

Reads are capped at `max_file_size_bytes` (files over it cannot be read or edited, and grep skips
them). Text is UTF-8: `read` shows undecodable bytes as replacement characters, `edit` refuses a
file that is not valid UTF-8 rather than corrupt it, and files with NUL bytes count as binary.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runner.backends.base import SyncBackend
from runner.backends.paths import (
    compile_glob,
    file_filter,
    is_within,
    join_path,
    normalize_glob,
    parent_dirs,
    validate_path,
)
from runner.backends.protocol import (
    FILE_NOT_FOUND,
    BackendError,
    EditResult,
    FileInfo,
    GrepMatch,
    PathError,
    ReadResult,
    WriteResult,
)
from runner.backends.search import find_ripgrep, grep_file, grep_tree, walk_files
from runner.backends.text import (
    check_grep_pattern,
    iso_from_timestamp,
    read_lines,
    replace_exact,
)

__all__ = ["DEFAULT_MAX_FILE_SIZE", "FilesystemBackend"]

MEGABYTE = 1024 * 1024
DEFAULT_MAX_FILE_SIZE = 10 * MEGABYTE


def _megabytes(size: int) -> str:
    return f"{size / MEGABYTE:.3g} MB"


def _join_relative(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _os_error(exc: OSError, verb: str, path: str) -> BackendError:
    reason = (exc.strerror or type(exc).__name__).replace("{", "{{").replace("}", "}}")
    return BackendError(f"Cannot {verb} {{0}}: {reason}", path)


class FilesystemBackend(SyncBackend):
    """Files in the host directory `root_dir` (created when missing)."""

    run_async_in_thread = True

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        *,
        virtual_mode: bool = True,
        max_file_size_bytes: int = DEFAULT_MAX_FILE_SIZE,
        ripgrep: str | bool = True,
    ) -> None:
        """`ripgrep`: True finds `rg` (see `search.find_ripgrep`), False always uses Python, a
        string is the `rg` executable to use."""
        root = Path(root_dir).expanduser()
        root.mkdir(parents=True, exist_ok=True)
        self.root = os.path.realpath(root)
        self._root_slash = self.root.rstrip("/") + "/"
        self.virtual_mode = virtual_mode
        self.max_file_size = max_file_size_bytes
        self.ripgrep: str | None = find_ripgrep() if ripgrep is True else (ripgrep or None)
        self._nofollow = os.O_NOFOLLOW if virtual_mode else 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.root!r}, virtual_mode={self.virtual_mode})"

    def _inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self._root_slash)

    def _host(self, path: str) -> tuple[str, str]:
        """(normal agent path, host path); in virtual mode the host path is fully resolved and
        inside the root, or the path is refused."""
        agent = validate_path(path)
        if not self.virtual_mode:
            return agent, agent
        real = os.path.realpath(os.path.join(self.root, agent.lstrip("/")))
        if not self._inside(real):
            raise PathError(
                "Path {0} leads outside the root directory through a symbolic link; "
                "only paths inside it can be used",
                agent,
            )
        return agent, real

    def _load(self, agent: str, host: str, verb: str) -> bytes:
        """The bytes of the regular text file at `host`, or an error for the agent."""
        try:
            fd = os.open(host, os.O_RDONLY | os.O_NONBLOCK | self._nofollow)
        except FileNotFoundError:
            raise BackendError(FILE_NOT_FOUND, agent) from None
        except OSError as exc:
            raise _os_error(exc, verb, agent) from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise BackendError("{0} is a directory, not a file; use ls to list it", agent)
            if not stat.S_ISREG(info.st_mode):
                raise BackendError("{0} is not a regular file", agent)
            data = b""
            if info.st_size <= self.max_file_size:
                with os.fdopen(os.dup(fd), "rb") as file:
                    data = file.read(self.max_file_size + 1)  # it may have grown since fstat
        finally:
            os.close(fd)
        if max(info.st_size, len(data)) > self.max_file_size:
            raise BackendError(
                f"{{0}} is {_megabytes(max(info.st_size, len(data)))}, over the "
                f"{_megabytes(self.max_file_size)} limit for reading files",
                agent,
            )
        if b"\0" in data:
            raise BackendError(
                "{0} is a binary file (it contains NUL bytes) and cannot be read as text", agent
            )
        return data

    def _store(self, agent: str, host: str, content: str, flags: int) -> None:
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise BackendError("The content for {0} is not valid Unicode text", agent) from None
        try:
            fd = os.open(host, os.O_WRONLY | flags | self._nofollow, 0o666)
        except FileExistsError:
            if os.path.isdir(host):
                raise BackendError(
                    "{0} is a directory, not a file; choose a file path inside it", agent
                ) from None
            raise BackendError(
                "File {0} already exists; read it and use edit_file to change it", agent
            ) from None
        except OSError as exc:
            raise _os_error(exc, "write", agent) from None
        with os.fdopen(fd, "wb") as file:
            file.write(data)

    def _directory(self, agent: str, host: str, missing: str) -> None:
        try:
            info = os.stat(host)
        except FileNotFoundError:
            raise BackendError(missing, agent) from None
        except OSError as exc:
            raise _os_error(exc, "open", agent) from None
        if not stat.S_ISDIR(info.st_mode):
            raise BackendError("{0} is a file, not a directory; use read_file to read it", agent)

    def ls(self, path: str) -> list[FileInfo]:
        agent, host = self._host(path)
        self._directory(agent, host, "Directory not found: {0}")
        try:
            with os.scandir(host) as scan:
                entries = list(scan)
        except OSError as exc:
            raise _os_error(exc, "list", agent) from None
        infos: list[FileInfo] = []
        for entry in entries:
            child = join_path(agent, entry.name)
            try:
                if (
                    self.virtual_mode
                    and entry.is_symlink()
                    and not self._inside(os.path.realpath(entry.path))
                ):
                    continue
                info = entry.stat()
            except OSError:  # a dangling link inside the root
                infos.append(FileInfo(child, False))
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            size = None if is_dir else info.st_size
            infos.append(FileInfo(child, is_dir, size, iso_from_timestamp(info.st_mtime)))
        return sorted(infos, key=lambda info: info.path)

    def read(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        agent, host = self._host(path)
        text = self._load(agent, host, "read").decode("utf-8", errors="replace")
        return read_lines(agent, text, offset, limit)

    def write(self, path: str, content: str) -> WriteResult:
        agent, host = self._host(path)
        if agent == "/":
            raise BackendError(
                "{0} is a directory, not a file; choose a file path inside it", agent
            )
        for parent in parent_dirs(agent):
            parent_host = self._host(parent)[1]
            if os.path.exists(parent_host) and not os.path.isdir(parent_host):
                raise BackendError(
                    "Cannot create {0}: {1} is a file, not a directory", agent, parent
                )
        try:
            os.makedirs(os.path.dirname(host), exist_ok=True)
        except OSError as exc:
            raise _os_error(exc, "create", agent) from None
        self._store(agent, host, content, os.O_CREAT | os.O_EXCL)
        return WriteResult(agent)

    def edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        agent, host = self._host(path)
        try:
            text = self._load(agent, host, "edit").decode("utf-8")
        except UnicodeDecodeError:
            raise BackendError(
                "{0} is not valid UTF-8 text, so edit_file cannot change it safely", agent
            ) from None
        content, occurrences = replace_exact(agent, text, old_string, new_string, replace_all)
        self._store(agent, host, content, os.O_TRUNC)
        return EditResult(agent, occurrences)

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        base, relative_pattern, within = normalize_glob(pattern, path)
        agent, host = self._host(base)
        self._directory(agent, host, "Directory not found: {0}")
        matcher = compile_glob(relative_pattern)
        start, start_relative = host, "/".join(matcher.literal_prefix)
        for segment in matcher.literal_prefix:
            start = os.path.join(start, segment)
            if os.path.islink(start) or not os.path.isdir(start):
                return []
        found: list[FileInfo] = []
        for relative, entry in walk_files(
            start, descend=lambda d: matcher.may_match_under(_join_relative(start_relative, d))
        ):
            relative = _join_relative(start_relative, relative)
            agent_path = join_path(agent, relative)
            if matcher.matches(relative) and is_within(agent_path, within):
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found.append(
                    FileInfo(agent_path, False, info.st_size, iso_from_timestamp(info.st_mtime))
                )
        return sorted(found, key=lambda info: info.path)

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None
    ) -> list[GrepMatch]:
        check_grep_pattern(pattern)
        accept = file_filter(glob)
        agent, host = self._host(path or "/")
        try:
            info = os.stat(host)
        except FileNotFoundError:
            raise BackendError("Path not found: {0}", agent) from None
        except OSError as exc:
            raise _os_error(exc, "search", agent) from None
        if stat.S_ISDIR(info.st_mode):
            hits = grep_tree(
                host,
                pattern,
                accept=accept,
                glob=glob,
                max_size=self.max_file_size,
                ripgrep=self.ripgrep,
            )
            return [GrepMatch(join_path(agent, rel), line, text) for rel, line, text in hits]
        name = agent.rsplit("/", 1)[-1]
        if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_file_size or not accept(name):
            return []
        return [
            GrepMatch(agent, line, text)
            for _, line, text in grep_file(host, name, pattern, ripgrep=self.ripgrep)
        ]
