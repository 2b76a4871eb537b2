"""Races and links made by another process: what `execute` (or anything sharing the directory)
can do while the file tools run.

- A process keeps swapping a directory of the root for a link to a directory outside, and a file
  of the root for a link to a file outside, while every file operation runs hundreds of times:
  no read may return the outside content, no write or edit may land outside.
- A file hard-linked into the root from outside is neither read, changed nor searched.

The swapping runs in its own process, so it really interleaves with the tools (a thread would
mostly wait for the GIL).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.backends import (
    Backend,
    BackendError,
    CompositeBackend,
    FilesystemBackend,
    LocalShellBackend,
    StateBackend,
)

SECRET = "SECRET-OUTSIDE"
TRIES = 300

FLIPPER = """
import os, sys
root, outside = sys.argv[1], sys.argv[2]
d, d_real = os.path.join(root, "d"), os.path.join(root, "d_real")
f, f_real = os.path.join(root, "f.txt"), os.path.join(root, "f_real")
print("ready", flush=True)
while True:
    for real, link, target in ((d_real, d, outside), (f_real, f, os.path.join(outside, "secret.txt"))):
        try:
            os.rename(link, real)
            os.symlink(target, link)
            os.unlink(link)
            os.rename(real, link)
        except OSError:
            pass
"""


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    outside, root = tmp_path / "outside", tmp_path / "root"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET} file\n")
    (root / "d").mkdir(parents=True)
    (root / "d" / "secret.txt").write_text("inside d\n")
    (root / "f.txt").write_text("inside f\n")
    flipper = subprocess.Popen(
        [sys.executable, "-c", FLIPPER, str(root), str(outside)], stdout=subprocess.PIPE
    )
    assert flipper.stdout is not None
    assert flipper.stdout.readline().strip() == b"ready"
    try:
        yield outside, root
    finally:
        flipper.kill()
        flipper.wait()


def backends(root: Path) -> dict[str, Backend]:
    return {
        "filesystem": FilesystemBackend(root, ripgrep=False),
        "filesystem-rg": FilesystemBackend(root),
        "local_shell": LocalShellBackend(root),
        "composite": CompositeBackend(FilesystemBackend(root), {"/mem/": StateBackend({})}),
    }


def attempt(backend: Backend, index: int, mode: str) -> list[str]:
    """One round of every operation through the swapped places; returns what the agent saw."""
    calls: list[tuple[str, tuple[object, ...]]] = [
        ("read", ("/d/secret.txt",)),
        ("read", ("/f.txt",)),
        ("write", (f"/d/new{index}.txt", "PAYLOAD")),
        ("edit", ("/d/secret.txt", "inside", "inside")),
        ("edit", ("/f.txt", "inside", "inside")),
        ("ls", ("/d",)),
        ("glob", ("d/*",)),
        ("grep", ("SECRET", "/d")),
        ("grep", ("SECRET", "/f.txt")),
        ("grep", ("SECRET", "/")),
    ]
    seen: list[str] = []
    for method, args in calls:
        try:
            if mode == "sync":
                result = getattr(backend, method)(*args)
            else:
                result = asyncio.run(getattr(backend, "a" + method)(*args))
        except BackendError as exc:
            seen.append(str(exc))
            continue
        except Exception as exc:  # anything else would end the agent's run
            seen.append(f"CRASH {method}{args}: {type(exc).__name__}: {exc}")
            continue
        seen.append(repr(result))
    return seen


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_swapped_links_never_let_a_tool_out(layout: tuple[Path, Path], mode: str) -> None:
    outside, root = layout
    escapes: list[str] = []
    tries = TRIES if mode == "sync" else TRIES // 3
    for name, backend in backends(root).items():
        for index in range(tries):
            for text in attempt(backend, index, mode):
                if SECRET in text or text.startswith("CRASH"):
                    escapes.append(f"{name}: {text[:120]}")
            written = sorted(p.name for p in outside.iterdir())
            if written != ["secret.txt"]:
                escapes.append(f"{name}: wrote {written}")
                for extra in outside.iterdir():
                    if extra.name != "secret.txt":
                        extra.unlink()
            if (outside / "secret.txt").read_text() != f"{SECRET} file\n":
                escapes.append(f"{name}: changed the outside file")
                (outside / "secret.txt").write_text(f"{SECRET} file\n")
    assert escapes == []


def test_a_file_hard_linked_from_outside_is_left_alone(tmp_path: Path) -> None:
    outside, root = tmp_path / "outside", tmp_path / "root"
    outside.mkdir()
    root.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET} file\n")
    os.link(outside / "secret.txt", root / "linked.txt")
    for backend in backends(root).values():
        with pytest.raises(BackendError, match="hard links"):
            backend.read("/linked.txt")
        with pytest.raises(BackendError, match="hard links"):
            backend.edit("/linked.txt", SECRET, "CHANGED")
        assert backend.grep(SECRET) == []
        assert backend.grep(SECRET, "/linked.txt") == []
    assert (outside / "secret.txt").read_text() == f"{SECRET} file\n"
