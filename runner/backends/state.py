"""The `state` backend: files live in the thread's graph state, under the `files` key.

Files are private to the thread and saved with its checkpoints, so they vanish with the thread and
come back when it resumes. A backend is made for one tool call from the state that call sees; it
never changes that state. A write or edit returns `files_update` with ONLY the changed file, and
the tool returns it as a state update that the `merge_files` reducer applies, so the backend's cost
per write does not depend on how many files exist.

Why `merge_files` copies the dict instead of updating it in place: LangGraph hands the channel's
value out by reference (to `stream_mode="values"` consumers, to a checkpoint that a background
thread is still saving, to conditional edges reading fresh state), so mutating it rewrites history.
Measured with LangGraph 1.2 and an in-memory checkpointer, an in-place reducer made every streamed
snapshot show the final files and saved checkpoints with files from later steps. Copying the
mapping costs a few microseconds per thousand files.

The graph keeps `files` as a LangGraph `DeltaChannel` (`runner.backends.files_channel`, which
holds the state schema): a checkpoint stores the updates its step wrote, and the whole mapping
only every few steps, so `merge_file_writes`, the channel's reducer, folds a batch of updates.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from runner.backends.base import SyncBackend
from runner.backends.mapping import (
    check_creatable,
    file_bytes,
    file_text,
    glob_files,
    grep_files,
    list_directory,
    missing_file_error,
)
from runner.backends.paths import is_within, join_path, parent_dirs, relative_to, validate_path
from runner.backends.protocol import (
    EditResult,
    FileData,
    FileInfo,
    GrepMatch,
    ReadResult,
    WriteResult,
)
from runner.backends.text import now_iso, read_lines, replace_exact

__all__ = ["PrefixedFiles", "StateBackend", "merge_file_writes", "merge_files"]

FilesMapping = Mapping[str, FileData | None]


def merge_files(
    left: Mapping[str, FileData] | None, right: Mapping[str, FileData | None] | None
) -> dict[str, FileData]:
    """The `files` reducer: `right` adds or replaces files, a `None` value deletes one.

    Neither argument is changed (see the module docstring for why that matters).
    """
    return merge_file_writes(left, [right])


def merge_file_writes(
    current: Mapping[str, FileData] | None, writes: Sequence[Mapping[str, FileData | None] | None]
) -> dict[str, FileData]:
    """`merge_files` over a batch of updates, oldest first: the `files` channel's reducer.

    A `DeltaChannel` rebuilds a checkpoint's files by replaying the updates since the last
    snapshot in one call, so the result must not depend on how they are batched; it does not,
    as each update only adds, replaces or deletes whole files (`tests/backends/test_state.py`).
    """
    merged = dict(current or {})
    for update in writes:
        for path, data in (update or {}).items():
            if data is None:
                merged.pop(path, None)
            else:
                merged[path] = data
    return merged


class PrefixedFiles(Mapping[str, FileData | None]):
    """The files under `prefix` seen as if `prefix` were `/`: a state backend mounted on a route.

    A composite route `/scratch/` keeps its files in the same `files` state as everything else,
    under their full paths (`/scratch/a.txt`); this view lets its `StateBackend` see `/a.txt`.
    """

    def __init__(self, files: FilesMapping, prefix: str) -> None:
        self._files = files
        self._prefix = prefix

    def __getitem__(self, key: str) -> FileData | None:
        return self._files[join_path(self._prefix, key)]

    def __iter__(self) -> Iterator[str]:
        for key in self._files:
            if key != self._prefix and is_within(key, self._prefix):
                yield "/" + relative_to(key, self._prefix)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class StateBackend(SyncBackend):
    """Files in a mapping of path to `FileData`, normally `state["files"]` of one tool call."""

    def __init__(self, files: FilesMapping | None = None) -> None:
        self._files: FilesMapping = files if files is not None else {}

    def _items(self) -> Iterator[tuple[str, FileData]]:
        for path, data in self._files.items():
            if data is not None:
                yield path, data

    def _file(self, path: str) -> FileData:
        data = self._files.get(path)
        if data is None:
            raise missing_file_error(path, self._items())
        return data

    def ls(self, path: str) -> list[FileInfo]:
        return list_directory(self._items(), validate_path(path))

    def read(self, path: str, offset: int = 0, limit: int = 100) -> ReadResult:
        path = validate_path(path)
        return read_lines(path, file_text(path, self._file(path)), offset, limit)

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        path = validate_path(path)
        return file_bytes(path, self._file(path), max_bytes)

    def write(self, path: str, content: str) -> WriteResult:
        path = validate_path(path)
        check_creatable(
            path, {p: self._files.get(p) is not None for p in [*parent_dirs(path), path]}
        )
        now = now_iso()
        data = FileData(content=content, created_at=now, modified_at=now)
        return WriteResult(path, files_update={path: data})

    def write_bytes(self, path: str, data: bytes) -> WriteResult:
        """`write` for a binary file the caller puts there (an attachment): kept as base64."""
        import base64

        written = self.write(path, "")
        stored = FileData(
            content=base64.b64encode(data).decode("ascii"),
            created_at=now_iso(),
            modified_at=now_iso(),
            encoding="base64",
        )
        return WriteResult(written.path, files_update={written.path: stored})

    def edit(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        path = validate_path(path)
        current = self._file(path)
        content, occurrences = replace_exact(
            path, file_text(path, current), old_string, new_string, replace_all
        )
        data = FileData(content=content, created_at=current["created_at"], modified_at=now_iso())
        return EditResult(path, occurrences, files_update={path: data})

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        return glob_files(self._items(), pattern, path)

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, regex: bool = False
    ) -> list[GrepMatch]:
        return grep_files(self._items(), pattern, path, glob, regex)
