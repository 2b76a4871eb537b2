"""Async twins for backends whose work is synchronous, written once.

The state backend's work is pure Python on a dict, so its async twins simply call the sync method
(a thread hop would cost more than the work). The filesystem backends block on disk and on
ripgrep, so theirs run the sync method in a worker thread and never block the event loop.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from runner.backends.protocol import EditResult, FileInfo, GrepMatch, ReadResult, WriteResult

__all__ = ["SyncBackend"]

_T = TypeVar("_T")


class SyncBackend(ABC):
    """A backend written synchronously; the `a`-prefixed twins of the protocol come from here."""

    run_async_in_thread: ClassVar[bool] = False
    """True when the sync methods block (disk, subprocesses): the twins then use a thread."""

    @abstractmethod
    def ls(self, path: str) -> list[FileInfo]: ...

    @abstractmethod
    def read(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult: ...

    @abstractmethod
    def read_bytes(self, path: str, max_bytes: int) -> bytes: ...

    @abstractmethod
    def write(self, path: str, content: str) -> WriteResult: ...

    @abstractmethod
    def edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult: ...

    @abstractmethod
    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]: ...

    @abstractmethod
    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]: ...

    async def _twin(self, method: Callable[..., _T], *args: Any) -> _T:
        if self.run_async_in_thread:
            return await asyncio.to_thread(method, *args)
        return method(*args)

    async def als(self, path: str) -> list[FileInfo]:
        return await self._twin(self.ls, path)

    async def aread(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        return await self._twin(self.read, path, offset, limit)

    async def aread_bytes(self, path: str, max_bytes: int) -> bytes:
        return await self._twin(self.read_bytes, path, max_bytes)

    async def awrite(self, path: str, content: str) -> WriteResult:
        return await self._twin(self.write, path, content)

    async def aedit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        return await self._twin(self.edit, path, old_string, new_string, replace_all)

    async def aglob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        return await self._twin(self.glob, pattern, path)

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]:
        return await self._twin(self.grep, pattern, path, glob, regex)
