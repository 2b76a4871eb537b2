"""Host files made visible to the agent: skills folders (read-only) and memory files (one file).

Skills and memory named by host paths must be reachable through the file tools, or the agent
could not read a skill's body or update its memory. Each is mounted as a composite route over a
filesystem backend on the host folder, narrowed by `MountedBackend`: a skills folder is
read-only; a memory file's folder exposes that one file, so mounting `./AGENTS.md` does not show
the agent the rest of the project.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.backends.base import SyncBackend
from runner.backends.filesystem import FilesystemBackend
from runner.backends.protocol import (
    FILE_NOT_FOUND,
    BackendError,
    EditResult,
    FileInfo,
    GrepMatch,
    ReadResult,
    WriteResult,
)


@dataclass(frozen=True)
class Mount:
    """`prefix` (like `/skills/`) shows `host_dir`; `only` limits it to those file names."""

    prefix: str
    host_dir: Path
    read_only: bool = False
    only: frozenset[str] | None = None


class MountedBackend(SyncBackend):
    """A filesystem backend limited to some files, or to reading."""

    run_async_in_thread = True

    def __init__(self, mount: Mount) -> None:
        self.inner = FilesystemBackend(mount.host_dir, virtual_mode=True)
        self.read_only = mount.read_only
        self.only = {"/" + name for name in mount.only} if mount.only is not None else None

    def _visible(self, path: str) -> bool:
        return self.only is None or path in self.only

    def _check(self, path: str, *, writing: bool) -> None:
        if not self._visible(path):
            raise BackendError(FILE_NOT_FOUND, path)
        if writing and self.read_only:
            raise BackendError("{0} is read-only: it belongs to a skills folder", path)

    def ls(self, path: str) -> list[FileInfo]:
        return [info for info in self.inner.ls(path) if self._visible(info.path)]

    def read(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        self._check(path, writing=False)
        return self.inner.read(path, offset, limit)

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        self._check(path, writing=False)
        return self.inner.read_bytes(path, max_bytes)

    def write(self, path: str, content: str) -> WriteResult:
        self._check(path, writing=True)
        return self.inner.write(path, content)

    def edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        self._check(path, writing=True)
        return self.inner.edit(path, old_string, new_string, replace_all)

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        return [info for info in self.inner.glob(pattern, path) if self._visible(info.path)]

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]:
        return [
            match
            for match in self.inner.grep(pattern, path, glob, regex)
            if self._visible(match.path)
        ]
