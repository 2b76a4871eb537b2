"""Opening paths beneath a root directory, so that no path can lead out of it, by construction.

Checking a path as a string and opening it afterwards leaves a gap: between the two, a process
that shares the directory (the agent's own `execute`, say) can swap a directory for a symbolic
link to `/etc`. So the root is opened once, and every path below it is walked from that
descriptor one component at a time with `openat(..., O_NOFOLLOW)`: each step opens a name inside
a directory that is already open, and a symbolic link is never followed by the kernel. When a
component is a link, its target is read (`readlinkat`) and walked the same way, from the root for
an absolute target and from the directory holding the link for a relative one; `..` steps back to
a directory already open, and a `..` above the root, or an absolute target that is not inside the
root's real path, refuses the path. The file is then opened from the directory descriptor it was
found in, and the caller works on that descriptor only: what is checked is what is used.

Directory walks (`walk`) go further: they never follow a link at all, and open each directory
they enter from its parent's descriptor.

Limits that keep hostile input cheap: at most `MAX_LINKS` symbolic links per path (the kernel's
own limit) and at most `MAX_WALK_DEPTH` directories deep in a walk, so the descriptors held stay
few whatever the tree looks like.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from typing import NamedTuple

from runner.backends.protocol import BackendError, PathError

__all__ = [
    "EDIT_FLAGS",
    "MAX_LINKS",
    "MAX_WALK_DEPTH",
    "READ_FLAGS",
    "VCS_DIRS",
    "Root",
    "WalkEntry",
    "is_plain_file",
]

MAX_LINKS = 40
MAX_WALK_DEPTH = 256
VCS_DIRS = frozenset({".git", ".hg", ".svn"})
"""Directories glob and grep never enter."""

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_LINK_ERRORS = {errno.ELOOP, errno.ENOTDIR, getattr(errno, "EMLINK", errno.ELOOP)}
"""What `openat(..., O_NOFOLLOW)` answers when the name is a symbolic link (EMLINK on BSDs)."""

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | _NOCTTY | _CLOEXEC
"""Opening for reading never blocks on a FIFO and never takes a terminal."""
EDIT_FLAGS = os.O_RDWR | os.O_NONBLOCK | _NOCTTY | _CLOEXEC
"""Reading and writing back through one descriptor."""


def _escape(agent: str) -> PathError:
    return PathError(
        "Path {0} leads outside the root directory through a symbolic link; "
        "only paths inside it can be used",
        agent,
    )


def _too_many_links(agent: str) -> BackendError:
    return BackendError(f"Path {{0}} goes through more than {MAX_LINKS} symbolic links", agent)


class WalkEntry(NamedTuple):
    """A regular file met by `Root.walk`: its path relative to the walk's start, its name, and
    the descriptor of the directory holding it (open while the entry is being handled)."""

    relative: str
    name: str
    dir_fd: int
    entry: os.DirEntry[str]


class Root:
    """A directory opened once; paths below it are resolved from its descriptor.

    A path given to the methods here is a list of components relative to the root
    (`["src", "main.py"]`), already checked by `paths.validate_path`; `agent` is the path as the
    agent wrote it, for messages.
    """

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)
        self._prefix = self.path.rstrip("/") + "/"
        self.fd = os.open(self.path, _DIRECTORY & ~os.O_NOFOLLOW)

    def __del__(self) -> None:
        fd = getattr(self, "fd", -1)
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
            self.fd = -1

    def __repr__(self) -> str:
        return f"Root({self.path!r})"

    # ------------------------------------------------------------------ resolution

    def _link_target(self, name: str, dir_fd: int) -> str | None:
        try:
            return os.readlink(name, dir_fd=dir_fd)
        except OSError:  # not a link (any more), or gone
            return None

    def _absolute_parts(self, target: str, agent: str) -> list[str]:
        """The components, from the root, of an absolute link target inside the root."""
        if target == self.path or target.rstrip("/") == self.path.rstrip("/"):
            return []
        if self.path == "/" or target.startswith(self._prefix):
            return target[len(self._prefix) :].split("/")
        raise _escape(agent)

    @staticmethod
    def _open_dir(part: str, at: int, *, create: bool, real: list[str]) -> int | None:
        """The directory `part` in `at`, opened without following a link: None when it is a
        symbolic link (or answers like one), created first with `create` when missing."""
        try:
            return os.open(part, _DIRECTORY, dir_fd=at)
        except FileNotFoundError:
            if not create:
                raise FileNotFoundError(
                    errno.ENOENT, "No such directory", "/" + "/".join([*real, part])
                ) from None
        except OSError as exc:
            if exc.errno in _LINK_ERRORS:
                return None
            raise
        with contextlib.suppress(FileExistsError):  # made meanwhile, or a dangling link
            os.mkdir(part, 0o777, dir_fd=at)
        try:
            return os.open(part, _DIRECTORY, dir_fd=at)
        except OSError as exc:
            if exc.errno in _LINK_ERRORS:
                return None
            raise

    def walk_dirs(
        self, parts: list[str], *, agent: str, create: bool = False
    ) -> tuple[int, list[str]]:
        """A descriptor (the caller closes it) of the directory `parts` names, and the real
        components of that directory from the root.

        Links inside the root are followed; anything leading out raises `PathError`. A missing
        component raises `FileNotFoundError` (or is created with `create`), a component that is
        not a directory `NotADirectoryError`; both carry the real path from the root (`/a/b`) as
        `filename`.
        """
        fds: list[int] = []  # descriptors of the directories in `real`, deepest last
        real: list[str] = []
        pending = list(reversed(parts))
        hops = 0
        try:
            while pending:
                part = pending.pop()
                if part in ("", "."):
                    continue
                if part == "..":
                    if not real:
                        raise _escape(agent)
                    os.close(fds.pop())
                    real.pop()
                    continue
                at = fds[-1] if fds else self.fd
                fd = self._open_dir(part, at, create=create, real=real)
                if fd is not None:
                    fds.append(fd)
                    real.append(part)
                    continue
                target = self._link_target(part, at)
                if target is None:
                    raise NotADirectoryError(
                        errno.ENOTDIR, "Not a directory", "/" + "/".join([*real, part])
                    )
                hops += 1
                if hops > MAX_LINKS:
                    raise _too_many_links(agent)
                if target.startswith("/"):
                    inner = self._absolute_parts(target, agent)
                    while fds:
                        os.close(fds.pop())
                    real = []
                    pending.extend(reversed(inner))
                else:
                    pending.extend(reversed(target.split("/")))
            result = fds.pop() if fds else os.dup(self.fd)
            return result, real
        finally:
            for fd in fds:
                os.close(fd)

    def open(
        self,
        parts: list[str],
        flags: int,
        mode: int = 0o666,
        *,
        agent: str,
        create_dirs: bool = False,
    ) -> int:
        """A descriptor of the file `parts` names, opened with `flags` from the directory it was
        found in; links inside the root are followed, the rest as `walk_dirs`. A final link is
        never followed by the kernel: with `O_CREAT | O_EXCL` it counts as an existing file."""
        hops = 0
        while True:
            if not parts or parts[-1] in ("", ".", ".."):
                dir_fd, _ = self.walk_dirs(parts, agent=agent, create=create_dirs)
                try:
                    return os.open(".", (flags & ~os.O_CREAT) | _CLOEXEC, dir_fd=dir_fd)
                finally:
                    os.close(dir_fd)
            *parent, name = parts
            dir_fd, real = self.walk_dirs(parent, agent=agent, create=create_dirs)
            try:
                try:
                    return os.open(name, flags | os.O_NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)
                except OSError as exc:
                    if exc.errno not in _LINK_ERRORS:
                        if exc.filename is None or exc.filename == name:
                            exc.filename = "/" + "/".join([*real, name])
                        raise
                    target = self._link_target(name, dir_fd)
                    if target is None:
                        raise
            finally:
                os.close(dir_fd)
            hops += 1
            if hops > MAX_LINKS:
                raise _too_many_links(agent)
            if target.startswith("/"):
                parts = self._absolute_parts(target, agent)
            else:
                parts = [*real, *target.split("/")]

    def lstat(self, parts: list[str], *, agent: str) -> os.stat_result:
        """The status of what `parts` names, links inside the root followed (`FileNotFoundError`
        for a dangling one, `PathError` for one leading out)."""
        fd = self.open(parts, READ_FLAGS, agent=agent)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def host_path(self, real: list[str]) -> str:
        """The host path of real components from the root (for messages and subprocesses)."""
        return os.path.join(self.path, *real) if real else self.path

    # ------------------------------------------------------------------ walks

    def walk(
        self, start_fd: int, *, descend: Callable[[str], bool] | None = None
    ) -> Iterator[WalkEntry]:
        """Regular files under the open directory `start_fd` (not closed here), never following
        a symbolic link and never entering `.git`, `.hg` or `.svn`.

        Each directory is opened from its parent's descriptor, so a directory swapped for a link
        while the walk runs is refused by the kernel rather than followed. `descend(relative)`
        may return False to skip a directory. At most `MAX_WALK_DEPTH` descriptors are held.
        """
        frames: list[tuple[str, int, list[str]]] = []  # a directory and its subdirectories left
        current: tuple[str, int] | None = ("", start_fd)
        try:
            while current is not None:
                relative_dir, dir_fd = current
                current = None
                subdirs: list[str] = []
                frames.append((relative_dir, dir_fd, subdirs))
                try:
                    with os.scandir(dir_fd) as scan:
                        for entry in scan:
                            try:
                                if entry.is_dir(follow_symlinks=False):
                                    if entry.name not in VCS_DIRS:
                                        subdirs.append(entry.name)
                                elif entry.is_file(follow_symlinks=False):
                                    yield WalkEntry(
                                        f"{relative_dir}/{entry.name}"
                                        if relative_dir
                                        else entry.name,
                                        entry.name,
                                        dir_fd,
                                        entry,
                                    )
                            except OSError:
                                continue
                except OSError:
                    pass
                if len(frames) >= MAX_WALK_DEPTH:
                    subdirs.clear()
                while frames and current is None:
                    parent_relative, parent_fd, remaining = frames[-1]
                    while remaining and current is None:
                        name = remaining.pop()
                        relative = f"{parent_relative}/{name}" if parent_relative else name
                        if descend is not None and not descend(relative):
                            continue
                        try:
                            current = (relative, os.open(name, _DIRECTORY, dir_fd=parent_fd))
                        except OSError:
                            continue
                    if current is None:
                        frames.pop()
                        if parent_fd != start_fd:
                            os.close(parent_fd)
        finally:
            for _, fd, _ in frames:
                if fd != start_fd:
                    os.close(fd)
            if current is not None and current[1] != start_fd:
                os.close(current[1])

    @contextlib.contextmanager
    def directories(self, dir_fd: int) -> Iterator[Callable[[str], int]]:
        """A function giving the descriptor of a directory below the open `dir_fd` by its
        relative path (`a/b`; "" is `dir_fd` itself), opened the way a walk goes, without
        following a link anywhere (`OSError` otherwise). Each directory is opened once, from
        its parent's descriptor, and all are closed on leaving the block."""
        opened: dict[str, int] = {"": dir_fd}

        def directory_of(relative: str) -> int:
            found = opened.get(relative)
            if found is not None:
                return found
            parent, _, name = relative.rpartition("/")
            if name in ("", ".", ".."):
                raise FileNotFoundError(errno.ENOENT, "Not a plain relative path", relative)
            fd = os.open(name, _DIRECTORY, dir_fd=directory_of(parent))
            opened[relative] = fd
            return fd

        try:
            yield directory_of
        finally:
            for relative, fd in opened.items():
                if relative:
                    os.close(fd)


def is_plain_file(info: os.stat_result) -> bool:
    """A regular file with one name: a file with other hard links may be one that was linked in
    from outside the root, so the file tools neither read nor change it."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink <= 1
