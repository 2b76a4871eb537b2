"""The `filesystem` backend: a real directory, `root_dir`, usually seen by the agent as `/`.

In virtual mode (the default) an agent path names a place under `root_dir` and nothing else:
`validate_path` refuses `..`, `~` and Windows syntax, and every operation then goes through
`beneath.Root`, which walks the path from a descriptor of the root one component at a time
without ever letting the kernel follow a symbolic link. A link inside the root that points inside
it is followed by that walk; one that leads out refuses the path. The file found is opened from
its directory's descriptor and only that descriptor is used afterwards, so no process sharing the
directory can slip a link in between a check and an open. Regular files with more than one hard
link are neither read nor changed (the other name may be outside the root). Directory walks
(`glob`, `grep`) never follow links (see `search.py`). Turning virtual mode off makes agent paths
host paths: only for trusted agents.

Reads are capped at `max_file_size_bytes` (files over it cannot be read or edited, and grep skips
them). Text is UTF-8: `read` shows undecodable bytes as replacement characters, `edit` refuses a
file that is not valid UTF-8 rather than corrupt it, and files with NUL bytes count as binary.
Names on disk that are not valid UTF-8 are left out of listings: no agent could name them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runner.backends.base import SyncBackend
from runner.backends.beneath import EDIT_FLAGS, READ_FLAGS, Root, is_plain_file
from runner.backends.paths import (
    compile_glob,
    file_filter,
    is_within,
    join_path,
    normalize_glob,
    validate_path,
)
from runner.backends.protocol import (
    FILE_NOT_FOUND,
    BackendError,
    EditResult,
    FileInfo,
    GrepMatch,
    ReadResult,
    WriteResult,
    too_large,
)
from runner.backends.search import find_ripgrep, grep_tree, search_bytes
from runner.backends.text import (
    check_grep_pattern,
    grep_regex,
    iso_from_timestamp,
    read_lines,
    replace_exact,
)

__all__ = ["DEFAULT_MAX_FILE_SIZE", "FilesystemBackend"]

MEGABYTE = 1024 * 1024
DEFAULT_MAX_FILE_SIZE = 10 * MEGABYTE
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _megabytes(size: int) -> str:
    return f"{size / MEGABYTE:.3g} MB"


def _join_relative(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _os_error(exc: OSError, verb: str, path: str) -> BackendError:
    reason = (exc.strerror or type(exc).__name__).replace("{", "{{").replace("}", "}}")
    return BackendError(f"Cannot {verb} {{0}}: {reason}", path)


def _nameable(name: str) -> bool:
    """Whether a name on disk is valid UTF-8, so an agent can see it and use it."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_a_directory(agent: str) -> BackendError:
    return BackendError("{0} is a directory, not a file; use ls to list it", agent)


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
        self.virtual_mode = virtual_mode
        self.max_file_size = max_file_size_bytes
        self.ripgrep: str | None = find_ripgrep() if ripgrep is True else (ripgrep or None)
        # Outside virtual mode agent paths are host paths: the same walk, from `/`.
        self._tree = Root(self.root if virtual_mode else "/")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.root!r}, virtual_mode={self.virtual_mode})"

    def _parts(self, path: str) -> tuple[str, list[str]]:
        """(normal agent path, its components from the tree's root)."""
        agent = validate_path(path)
        return agent, agent[1:].split("/") if agent != "/" else []

    # ------------------------------------------------------------------ files

    def _open_file(self, agent: str, parts: list[str], flags: int, verb: str) -> int:
        """A descriptor of the regular file at `parts`, or an error for the agent."""
        try:
            fd = self._tree.open(parts, flags, agent=agent)
        except (FileNotFoundError, NotADirectoryError):
            raise BackendError(FILE_NOT_FOUND, agent) from None
        except IsADirectoryError:
            raise _is_a_directory(agent) from None
        except BackendError:
            raise
        except OSError as exc:
            raise _os_error(exc, verb, agent) from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise _is_a_directory(agent)
            if not stat.S_ISREG(info.st_mode):
                raise BackendError("{0} is not a regular file", agent)
            if self.virtual_mode and not is_plain_file(info):
                raise BackendError(
                    f"{{0}} has {info.st_nlink} hard links; the file tools do not use files "
                    "with other names, which may lie outside the root directory",
                    agent,
                )
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _content(self, agent: str, fd: int) -> bytes:
        """The bytes of the open regular file, within the size limit and not binary."""
        size = os.fstat(fd).st_size
        data = b""
        if size <= self.max_file_size:
            data = os.pread(fd, self.max_file_size + 1, 0)  # it may have grown since fstat
            while len(data) <= self.max_file_size and (more := os.pread(fd, 1 << 20, len(data))):
                data += more
        if max(size, len(data)) > self.max_file_size:
            raise BackendError(
                f"{{0}} is {_megabytes(max(size, len(data)))}, over the "
                f"{_megabytes(self.max_file_size)} limit for reading files",
                agent,
            )
        if b"\0" in data:
            raise BackendError(
                "{0} is a binary file (it contains NUL bytes) and cannot be read as text", agent
            )
        return data

    @staticmethod
    def _encode(agent: str, content: str) -> bytes:
        try:
            return content.encode("utf-8")
        except UnicodeEncodeError:
            raise BackendError("The content for {0} is not valid Unicode text", agent) from None

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    def read(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        agent, parts = self._parts(path)
        fd = self._open_file(agent, parts, READ_FLAGS, "read")
        try:
            data = self._content(agent, fd)
        finally:
            os.close(fd)
        return read_lines(agent, data.decode("utf-8", errors="replace"), offset, limit)

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        """The file's bytes as they are (images), at most `max_bytes` and the size limit."""
        agent, parts = self._parts(path)
        limit = min(max_bytes, self.max_file_size)
        fd = self._open_file(agent, parts, READ_FLAGS, "read")
        try:
            size, data = os.fstat(fd).st_size, b""
            while size <= limit and len(data) <= limit:
                more = os.pread(fd, limit + 1 - len(data), len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
        if max(size, len(data)) > limit:
            raise too_large(agent, max(size, len(data)), limit)
        return data

    def write(self, path: str, content: str) -> WriteResult:
        return self.write_bytes(path, self._encode(validate_path(path), content))

    def write_bytes(self, path: str, data: bytes) -> WriteResult:
        """Create a file holding `data` as it is: a file the caller puts there (an attachment of
        `agentctl run --attach`); the agent's tools write text with `write`."""
        agent, parts = self._parts(path)
        if not parts:
            raise BackendError(
                "{0} is a directory, not a file; choose a file path inside it", agent
            )
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOCTTY", 0)
        try:
            fd = self._tree.open(parts, flags, 0o666, agent=agent, create_dirs=True)
        except FileExistsError:
            if self._is_dir(parts, agent):
                raise BackendError(
                    "{0} is a directory, not a file; choose a file path inside it", agent
                ) from None
            raise BackendError(
                "File {0} already exists; read it and use edit_file to change it", agent
            ) from None
        except NotADirectoryError as exc:
            raise BackendError(
                "Cannot create {0}: {1} is a file, not a directory", agent, str(exc.filename)
            ) from None
        except BackendError:
            raise
        except OSError as exc:
            raise _os_error(exc, "write", agent) from None
        try:
            self._write_all(fd, data)
        except OSError as exc:
            raise _os_error(exc, "write", agent) from None
        finally:
            os.close(fd)
        return WriteResult(agent)

    def edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        agent, parts = self._parts(path)
        # One descriptor for reading and writing back: the file changed is the file read.
        fd = self._open_file(agent, parts, EDIT_FLAGS, "edit")
        try:
            try:
                text = self._content(agent, fd).decode("utf-8")
            except UnicodeDecodeError:
                raise BackendError(
                    "{0} is not valid UTF-8 text, so edit_file cannot change it safely", agent
                ) from None
            content, occurrences = replace_exact(agent, text, old_string, new_string, replace_all)
            data = self._encode(agent, content)
            try:
                os.lseek(fd, 0, os.SEEK_SET)
                self._write_all(fd, data)
                os.ftruncate(fd, len(data))
            except OSError as exc:
                raise _os_error(exc, "write", agent) from None
        finally:
            os.close(fd)
        return EditResult(agent, occurrences)

    # ------------------------------------------------------------------ directories

    def _is_dir(self, parts: list[str], agent: str) -> bool:
        try:
            return stat.S_ISDIR(self._tree.lstat(parts, agent=agent).st_mode)
        except OSError:
            return False

    def _open_directory(self, agent: str, parts: list[str], missing: str) -> tuple[int, list[str]]:
        """(descriptor, real components) of the directory at `parts`, or an error."""
        try:
            return self._tree.walk_dirs(parts, agent=agent)
        except FileNotFoundError:
            raise BackendError(missing, agent) from None
        except NotADirectoryError:
            try:
                info = self._tree.lstat(parts, agent=agent)
            except OSError:
                raise BackendError(missing, agent) from None
            if stat.S_ISDIR(info.st_mode):  # swapped meanwhile
                raise BackendError(missing, agent) from None
            raise BackendError(
                "{0} is a file, not a directory; use read_file to read it", agent
            ) from None
        except BackendError:
            raise
        except OSError as exc:
            raise _os_error(exc, "open", agent) from None

    def ls(self, path: str) -> list[FileInfo]:
        agent, parts = self._parts(path)
        dir_fd, real = self._open_directory(agent, parts, "Directory not found: {0}")
        infos: list[FileInfo] = []
        try:
            with os.scandir(dir_fd) as scan:
                for entry in scan:
                    if _nameable(entry.name):
                        info = self._entry_info(join_path(agent, entry.name), entry, real)
                        if info is not None:
                            infos.append(info)
        except OSError as exc:
            raise _os_error(exc, "list", agent) from None
        finally:
            os.close(dir_fd)
        return sorted(infos, key=lambda info: info.path)

    def _entry_info(self, child: str, entry: os.DirEntry[str], real: list[str]) -> FileInfo | None:
        """What `ls` shows of an entry: a link shows its target, if that lies inside the root
        (None: leave the entry out)."""
        try:
            if entry.is_symlink():
                if self.virtual_mode:
                    info = self._tree.lstat([*real, entry.name], agent=child)
                else:
                    info = entry.stat()
            else:
                info = entry.stat(follow_symlinks=False)
        except BackendError:
            return None  # it leads outside the root, or through too many links
        except OSError:  # a dangling link inside the root
            return FileInfo(child, False)
        is_dir = stat.S_ISDIR(info.st_mode)
        size = None if is_dir else info.st_size
        return FileInfo(child, is_dir, size, iso_from_timestamp(info.st_mtime))

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        base, relative_pattern, within = normalize_glob(pattern, path)
        matcher = compile_glob(relative_pattern)
        agent, parts = self._parts(base)
        dir_fd, _ = self._open_directory(agent, parts, "Directory not found: {0}")
        start_relative = "/".join(matcher.literal_prefix)
        found: list[FileInfo] = []
        try:
            for segment in matcher.literal_prefix:
                try:
                    inner = os.open(segment, _DIRECTORY, dir_fd=dir_fd)
                except OSError:  # missing, a file, or a link: walks never follow links
                    return []
                os.close(dir_fd)
                dir_fd = inner
            for item in self._tree.walk(
                dir_fd,
                descend=lambda d: matcher.may_match_under(_join_relative(start_relative, d)),
            ):
                relative = _join_relative(start_relative, item.relative)
                agent_path = join_path(agent, relative)
                if not (matcher.matches(relative) and is_within(agent_path, within)):
                    continue
                if not _nameable(relative):
                    continue
                try:
                    info = item.entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found.append(
                    FileInfo(agent_path, False, info.st_size, iso_from_timestamp(info.st_mtime))
                )
        finally:
            os.close(dir_fd)
        return sorted(found, key=lambda info: info.path)

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]:
        check_grep_pattern(pattern)
        compiled = grep_regex(pattern) if regex else None
        accept = file_filter(glob)
        agent, parts = self._parts(path or "/")
        try:
            fd = self._tree.open(parts, READ_FLAGS, agent=agent)
        except (FileNotFoundError, NotADirectoryError):
            raise BackendError("Path not found: {0}", agent) from None
        except BackendError:
            raise
        except OSError as exc:
            raise _os_error(exc, "search", agent) from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                hits = grep_tree(
                    self._tree,
                    fd,
                    pattern,
                    accept=accept,
                    glob=glob,
                    max_size=self.max_file_size,
                    ripgrep=self.ripgrep,
                    plain_only=self.virtual_mode,
                    regex=compiled,
                )
                return [
                    GrepMatch(join_path(agent, rel), line, text)
                    for rel, line, text in hits
                    if _nameable(rel)
                ]
            name = agent.rsplit("/", 1)[-1]
            if (
                not stat.S_ISREG(info.st_mode)
                or info.st_size > self.max_file_size
                or (self.virtual_mode and not is_plain_file(info))
                or not accept(name)
            ):
                return []
            data = os.pread(fd, self.max_file_size + 1, 0)
        finally:
            os.close(fd)
        if len(data) > self.max_file_size:
            return []
        return [
            GrepMatch(agent, line, text)
            for _, line, text in search_bytes(
                name, data, pattern.encode("utf-8") if compiled is None else compiled
            )
        ]
