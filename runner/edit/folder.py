"""The served agents folder, the only place the editor reads or writes.

A path from the page is relative to the folder and must stay in it: an absolute path, a `..`
part, a backslash or a NUL is refused before the disk is touched, and the path the disk resolves
it to (symlinks followed) must still be inside the folder's own resolved path, so a symlink
pointing out is refused too. Only YAML files are written.

A saved file always gets a newer modification time than the file it replaces, so a server
that rebuilds an agent when its file's mtime changes (`agentctl serve`) takes every save.

A save names the version it was made from (the SHA-256 of the text the editor loaded); when the
file on disk is no longer that version, nothing is written and the caller gets the file as it is
now (`Conflict`): someone else's edit is never overwritten silently.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AgentsFolder", "Conflict", "OutsideFolder", "version_of"]

WRITABLE_SUFFIXES = (".yaml", ".yml")
MAX_FILE_BYTES = 1024 * 1024
"""An agent file larger than this is not opened in the editor (nor saved)."""


class OutsideFolder(ValueError):
    """A path the editor may not use: outside the folder, or not a file it edits."""


@dataclass(frozen=True)
class Conflict(Exception):
    """The file changed on disk since the editor loaded it: its text now (None: deleted)."""

    path: str
    content: str | None
    version: str | None


def version_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class AgentsFolder:
    """The folder `agentctl serve --edit` serves: reads, lists and saves inside it only."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self._saving = threading.Lock()

    def resolve(self, relative: str, *, writing: bool = False) -> Path:
        """The file at `relative` (a POSIX path inside the folder), or OutsideFolder."""
        if not isinstance(relative, str) or not relative.strip():
            raise OutsideFolder("no path given")
        if "\x00" in relative or "\\" in relative:
            raise OutsideFolder(f"{relative!r}: not a path inside the agents folder")
        if relative.startswith("/") or (len(relative) > 1 and relative[1] == ":"):
            raise OutsideFolder(f"{relative}: an absolute path; give one relative to the folder")
        parts = relative.split("/")
        if any(part in ("..", ".", "") for part in parts):
            raise OutsideFolder(f"{relative}: '..', '.' and empty parts are not allowed")
        real = Path(os.path.realpath(self.root.joinpath(*parts)))
        if real == self.root or self.root not in real.parents:
            raise OutsideFolder(f"{relative}: outside the agents folder {self.root}")
        if writing and not real.name.endswith(WRITABLE_SUFFIXES):
            raise OutsideFolder(f"{relative}: only YAML files (.yaml, .yml) are edited here")
        return real

    def relative(self, path: Path) -> str:
        return Path(os.path.realpath(path)).relative_to(self.root).as_posix()

    def read(self, relative: str) -> tuple[str, str]:
        """(text, version) of a file of the folder; LookupError when it is not there."""
        path = self.resolve(relative)
        if path.is_dir():
            raise OutsideFolder(f"{relative}: a folder, not a file")
        if not path.exists():
            raise LookupError(f"{relative}: no such file in the agents folder")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise OutsideFolder(f"{relative}: larger than {MAX_FILE_BYTES // 1024} KB")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise OutsideFolder(f"{relative}: not UTF-8 text") from None
        return text, version_of(text)

    def files(self) -> list[str]:
        """The YAML files of the folder (hidden folders and node_modules skipped), sorted."""
        found = []
        for directory, folders, names in os.walk(self.root):
            folders[:] = sorted(f for f in folders if not f.startswith(".") and f != "node_modules")
            for name in names:
                if name.endswith(WRITABLE_SUFFIXES) and not name.startswith("."):
                    try:
                        found.append(self.relative(Path(directory, name)))
                    except ValueError:  # a symlink out of the folder
                        continue
        return sorted(found)

    def save(self, relative: str, text: str, *, base: str | None) -> str:
        """Write `text` to the file if it is still at version `base` (None: a new file that must
        not exist yet); the new version. Raises Conflict, without writing, otherwise."""
        path = self.resolve(relative, writing=True)
        if len(text.encode("utf-8")) > MAX_FILE_BYTES:
            raise OutsideFolder(f"{relative}: larger than {MAX_FILE_BYTES // 1024} KB")
        with self._saving:
            if path.is_dir():
                raise OutsideFolder(f"{relative}: a folder, not a file")
            try:
                current: str | None = path.read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                current = None
            now = None if current is None else version_of(current)
            if now != base:
                raise Conflict(relative, current, now)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.resolve(relative, writing=True)  # a folder made meanwhile may be a symlink out
            # Written beside, then renamed over: a run reading the file never sees half of it.
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
            try:
                with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                    out.write(text)
                before = path.stat() if current is not None else None
                if before is not None:
                    os.chmod(temporary, before.st_mode & 0o777)
                os.replace(temporary, path)
                if before is not None and path.stat().st_mtime_ns <= before.st_mtime_ns:
                    # Serve rebuilds an agent when its file's mtime changes: two saves within
                    # one tick of a coarse clock (or a file dated ahead) must still differ.
                    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1000))
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        return version_of(text)
