"""The `store` backend: files in a LangGraph `BaseStore` under a namespace; they outlive a thread.

Each file is one item: key = the agent path, value = a `FileData` dict (`content`, `created_at`,
`modified_at`). The store is the one the graph was compiled with (in-memory, SQLite, Postgres), and
the backend is made per tool call from the store the runtime passes in. Listing, glob and grep page
through the store's `search` (items of child namespaces are ignored); reads and writes address keys
directly, and a write checks its path and parent directories in one batch, so its cost does not
grow with the number of files.

Items written by others are read leniently: `content` may be a string or a list of lines, and
missing timestamps fall back to the item's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from runner.backends.mapping import (
    check_creatable,
    file_bytes,
    file_text,
    glob_files,
    grep_files,
    list_directory,
    missing_file_error,
)
from runner.backends.paths import parent_dirs, validate_path
from runner.backends.protocol import (
    EditResult,
    FileData,
    FileInfo,
    GrepMatch,
    ReadResult,
    WriteResult,
)
from runner.backends.text import now_iso, read_lines, replace_exact

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, GetOp, Item

__all__ = ["StoreBackend"]

PAGE_SIZE = 500
"""Items fetched per `search` call while listing."""


def _file_data(item: Item | None) -> FileData | None:
    """The item as a text file, or None when it is missing or holds something else."""
    if item is None:
        return None
    value: Any = item.value
    content = value.get("content") if isinstance(value, dict) else None
    if isinstance(content, list) and all(isinstance(line, str) for line in content):
        content = "\n".join(content)
    if not isinstance(content, str):
        return None
    created = value.get("created_at")
    modified = value.get("modified_at")
    data = FileData(
        content=content,
        created_at=created if isinstance(created, str) else item.created_at.isoformat(),
        modified_at=modified if isinstance(modified, str) else item.updated_at.isoformat(),
    )
    if value.get("encoding") == "base64":
        data["encoding"] = "base64"
    return data


class StoreBackend:
    """Files as items of `store` under `namespace`."""

    def __init__(self, store: BaseStore, namespace: Sequence[str]) -> None:
        self.store = store
        self.namespace = tuple(namespace)

    # Listing: every file of the namespace, page by page.

    def _page(self, page: Sequence[Item]) -> Iterator[tuple[str, FileData]]:
        for item in page:
            data = _file_data(item)
            if item.namespace == self.namespace and item.key.startswith("/") and data:
                yield item.key, data

    def _items(self) -> Iterator[tuple[str, FileData]]:
        offset = 0
        while True:
            page = self.store.search(self.namespace, limit=PAGE_SIZE, offset=offset)
            yield from self._page(page)
            if len(page) < PAGE_SIZE:
                return
            offset += len(page)

    async def _aitems(self) -> AsyncIterator[tuple[str, FileData]]:
        offset = 0
        while True:
            page = await self.store.asearch(self.namespace, limit=PAGE_SIZE, offset=offset)
            for entry in self._page(page):
                yield entry
            if len(page) < PAGE_SIZE:
                return
            offset += len(page)

    async def _all_items(self) -> list[tuple[str, FileData]]:
        return [entry async for entry in self._aitems()]

    # Single files.

    def _creation_ops(self, path: str) -> list[GetOp]:
        from langgraph.store.base import GetOp

        return [GetOp(self.namespace, p) for p in [*parent_dirs(path), path]]

    def _new_file(self, path: str, content: str, found: Sequence[Item | None]) -> FileData:
        checked = [*parent_dirs(path), path]
        existing = zip(checked, found, strict=True)
        check_creatable(path, {p: _file_data(item) is not None for p, item in existing})
        now = now_iso()
        return FileData(content=content, created_at=now, modified_at=now)

    def _edited(
        self, path: str, current: FileData, old: str, new: str, replace_all: bool
    ) -> tuple[FileData, int]:
        content, occurrences = replace_exact(path, file_text(path, current), old, new, replace_all)
        edited = FileData(content=content, created_at=current["created_at"], modified_at=now_iso())
        return edited, occurrences

    def ls(self, path: str) -> list[FileInfo]:
        return list_directory(self._items(), validate_path(path))

    async def als(self, path: str) -> list[FileInfo]:
        return list_directory(await self._all_items(), validate_path(path))

    def _get(self, path: str) -> FileData:
        data = _file_data(self.store.get(self.namespace, path))
        if data is None:
            raise missing_file_error(path, self._items())
        return data

    async def _aget(self, path: str) -> FileData:
        data = _file_data(await self.store.aget(self.namespace, path))
        if data is None:
            raise missing_file_error(path, await self._all_items())
        return data

    def read(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        path = validate_path(path)
        return read_lines(path, file_text(path, self._get(path)), offset, limit)

    async def aread(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        path = validate_path(path)
        return read_lines(path, file_text(path, await self._aget(path)), offset, limit)

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        path = validate_path(path)
        return file_bytes(path, self._get(path), max_bytes)

    async def aread_bytes(self, path: str, max_bytes: int) -> bytes:
        path = validate_path(path)
        return file_bytes(path, await self._aget(path), max_bytes)

    def write(self, path: str, content: str) -> WriteResult:
        path = validate_path(path)
        found = cast("list[Item | None]", self.store.batch(self._creation_ops(path)))
        data = self._new_file(path, content, found)
        self.store.put(self.namespace, path, dict(data))
        return WriteResult(path)

    def write_bytes(self, path: str, data: bytes) -> WriteResult:
        """`write` for a binary file the caller puts there (an attachment): kept as base64."""
        import base64

        path = validate_path(path)
        found = cast("list[Item | None]", self.store.batch(self._creation_ops(path)))
        stored = dict(self._new_file(path, "", found))
        stored.update(content=base64.b64encode(data).decode("ascii"), encoding="base64")
        self.store.put(self.namespace, path, stored)
        return WriteResult(path)

    async def awrite(self, path: str, content: str) -> WriteResult:
        path = validate_path(path)
        found = cast("list[Item | None]", await self.store.abatch(self._creation_ops(path)))
        data = self._new_file(path, content, found)
        await self.store.aput(self.namespace, path, dict(data))
        return WriteResult(path)

    def edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        path = validate_path(path)
        data, occurrences = self._edited(path, self._get(path), old_string, new_string, replace_all)
        self.store.put(self.namespace, path, dict(data))
        return EditResult(path, occurrences)

    async def aedit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        path = validate_path(path)
        data, occurrences = self._edited(
            path, await self._aget(path), old_string, new_string, replace_all
        )
        await self.store.aput(self.namespace, path, dict(data))
        return EditResult(path, occurrences)

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        return glob_files(self._items(), pattern, path)

    async def aglob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        return glob_files(await self._all_items(), pattern, path)

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]:
        return grep_files(self._items(), pattern, path, glob, regex)

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]:
        return grep_files(await self._all_items(), pattern, path, glob, regex)
