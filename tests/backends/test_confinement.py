"""Property tests: whatever paths and symlinks an agent meets, nothing outside the root is touched.

Hypothesis builds a root directory with symbolic links of every awkward kind (to a directory or a
file outside, dangling ones, relative escapes, loops, chains, links inside) and throws generated
paths at every file operation of the filesystem and composite backends. After each example the
directory outside must be byte-for-byte unchanged, no result may carry its contents or name one of
its files, and an audit hook checks that the backends opened, listed or created nothing outside.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.backends import (
    Backend,
    BackendError,
    CompositeBackend,
    FilesystemBackend,
    StateBackend,
)

SECRET = "SECRET-OUTSIDE"

_recording: list[tuple[str, str]] | None = None
_AUDITED = {"open", "os.scandir", "os.listdir", "os.mkdir", "os.remove", "os.rename", "os.symlink"}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Record absolute paths opened, listed or created. A name opened relative to a directory
    descriptor (how the backends resolve every path) is recorded with that directory's path when
    the event carries the descriptor (os.mkdir does; open does not: those are judged by their
    effects, which `check` and `check_seen` test)."""
    if _recording is None or event not in _AUDITED or not args:
        return
    target = args[0]
    if not isinstance(target, str | bytes | os.PathLike):
        return
    name = os.fsdecode(target)
    if not os.path.isabs(name):
        dir_fd = args[2] if event == "os.mkdir" and len(args) > 2 else None
        if not isinstance(dir_fd, int) or dir_fd < 0:
            return
        name = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), name)
    _recording.append((event, name))


sys.addaudithook(_audit)


@contextmanager
def recording() -> Iterator[list[tuple[str, str]]]:
    global _recording
    _recording = []
    try:
        yield _recording
    finally:
        _recording = None


def snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry under `directory`: file bytes, link targets, directories."""
    found: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                found[path] = "link:" + os.readlink(path)
            elif os.path.isdir(path):
                found[path] = "dir"
            else:
                found[path] = Path(path).read_bytes()
    return found


LINK_PLACES = ["l1", "sub/l2", "sub/deeper/l3"]
TARGETS = [
    "outside_dir",
    "outside_file",
    "outside_missing",
    "relative_escape",
    "relative_escape_file",
    "inside_dir",
    "inside_file",
    "chain",
    "loop",
    "parent",
]


def build(top: Path, links: list[tuple[str, str]]) -> tuple[Path, Path]:
    outside, root = top / "outside", top / "root"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{SECRET} content\n")
    (outside / "dir" / "inner.txt").write_text(f"{SECRET} inner content\n")
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "top.txt").write_text("content top\n")
    (root / "sub" / "a.txt").write_text("content a\n")
    targets = {
        "outside_dir": str(outside / "dir"),
        "outside_file": str(outside / "secret.txt"),
        "outside_missing": str(outside / "new.txt"),
        "relative_escape": "../../outside/dir",
        "relative_escape_file": "../../../outside/secret.txt",
        "inside_dir": str(root / "sub"),
        "inside_file": str(root / "top.txt"),
        "chain": "l1",
        "loop": "loop_self",
        "parent": "..",
    }
    for place, kind in links:
        link = root / place
        if not os.path.lexists(link):
            target = targets[kind]
            if kind == "loop":
                target = link.name
            os.symlink(target, link)
    return outside, root


NAMES = "l1 l2 l3 sub deeper top.txt a.txt new.txt secret.txt dir inner.txt outside root"
SEGMENT = st.sampled_from([*NAMES.split(), "..", ".", "", "~", "C:", "*", "**", "loop_self"])
PATH = st.lists(SEGMENT, min_size=0, max_size=5).map(lambda parts: "/" + "/".join(parts)) | (
    st.lists(SEGMENT, min_size=1, max_size=4).map("/".join)
)
LINKS = st.lists(st.tuples(st.sampled_from(LINK_PLACES), st.sampled_from(TARGETS)), max_size=4)
OPERATION = st.sampled_from(["read", "write", "edit", "ls", "glob", "grep", "grep_file"])


def run(backend: Backend, operation: str, path: str) -> tuple[list[str], list[str]]:
    """The operation on `path`: every string the agent would see, and the paths it was shown."""
    seen: list[str] = []
    listed: list[str] = []
    try:
        if operation == "read":
            seen.append(backend.read(path).content)
        elif operation == "write":
            seen.append(backend.write(path, "PAYLOAD").path)
        elif operation == "edit":
            seen.append(backend.edit(path, "content", "EDITED", replace_all=True).path)
        elif operation == "ls":
            listed += [info.path for info in backend.ls(path)]
        elif operation == "glob":
            listed += [info.path for info in backend.glob(path.lstrip("/") or "*", "/")]
            listed += [info.path for info in backend.glob("**/*", path)]
        elif operation == "grep":
            seen += [f"{m.path}:{m.text}" for m in backend.grep("content", path)]
        else:
            seen += [f"{m.path}:{m.text}" for m in backend.grep(SECRET, path, "*.txt")]
    except BackendError as exc:
        seen.append(str(exc))
    return seen + listed, listed


def check(
    outside: Path, roots: list[Path], before: dict[str, bytes | str], events: list[Any]
) -> None:
    assert snapshot(outside) == before
    real_roots = [os.path.realpath(root) for root in roots]
    for event, target in events:
        if target == os.devnull:  # a subprocess's stdin
            continue
        real = os.path.realpath(target)
        assert any(real == r or real.startswith(r + os.sep) for r in real_roots), (event, target)


def check_seen(seen: list[str], outside: Path) -> None:
    for text in seen:
        assert SECRET not in text
        assert str(outside) not in text


def example(make: Any, links: list[tuple[str, str]], ops: list[tuple[str, str]]) -> None:
    """Build the layout, run `ops` on the backend `make(root)` gives: (backend, roots, host_of),
    where `host_of(agent_path)` is the host path a listed path stands for (None: not on disk)."""
    top = Path(tempfile.mkdtemp(prefix="confine-"))
    try:
        outside, root = build(top, links)
        backend, roots, host_of = make(root)
        before = snapshot(outside)
        for operation, path in ops:
            with recording() as events:
                seen, listed = run(backend, operation, path)
            check_seen(seen, outside)
            check(outside, roots, before, events)
            # Every path shown to the agent stands for a place inside the root.
            shown = [host for host in map(host_of, listed) if host is not None]
            check(outside, roots, before, [("listed", host) for host in shown])
    finally:
        shutil.rmtree(top)


SETTINGS = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)


@SETTINGS
@given(links=LINKS, ops=st.lists(st.tuples(OPERATION, PATH), min_size=1, max_size=8))
def test_filesystem_never_touches_outside(
    links: list[tuple[str, str]], ops: list[tuple[str, str]]
) -> None:
    def make(root: Path) -> tuple[Backend, list[Path], Callable[[str], str | None]]:
        return FilesystemBackend(root, ripgrep=False), [root], lambda p: f"{root}{p}"

    example(make, links, ops)


@settings(SETTINGS, max_examples=120)
@given(links=LINKS, ops=st.lists(st.tuples(OPERATION, PATH), min_size=1, max_size=8))
def test_filesystem_with_ripgrep_never_leaks_outside(
    links: list[tuple[str, str]], ops: list[tuple[str, str]]
) -> None:
    def make(root: Path) -> tuple[Backend, list[Path], Callable[[str], str | None]]:
        return FilesystemBackend(root), [root], lambda p: f"{root}{p}"

    # ripgrep runs in a child process the audit hook cannot see; its results are still checked,
    # and so is the outside tree.
    example(make, links, [(op, path) for op, path in ops if op.startswith("grep")])


@SETTINGS
@given(
    links=LINKS,
    ops=st.lists(
        st.tuples(OPERATION, PATH | PATH.map(lambda p: "/r" + p) | PATH.map(lambda p: "/s" + p)),
        min_size=1,
        max_size=8,
    ),
)
def test_composite_never_touches_outside(
    links: list[tuple[str, str]], ops: list[tuple[str, str]]
) -> None:
    def make(root: Path) -> tuple[Backend, list[Path], Callable[[str], str | None]]:
        # The route's directory is inside the default root, so its links escape it too.
        route_root = root / "sub"
        backend = CompositeBackend(
            FilesystemBackend(root, ripgrep=False),
            {"/r/": FilesystemBackend(route_root, ripgrep=False), "/s/": StateBackend({})},
        )

        def host_of(path: str) -> str | None:
            if path == "/s" or path.startswith("/s/"):
                return None
            if path == "/r" or path.startswith("/r/"):
                return f"{route_root}{path[2:]}"
            return f"{root}{path}"

        return backend, [root], host_of

    example(make, links, ops)


def test_the_audit_hook_sees_what_it_must(tmp_path: Path) -> None:
    """The property tests rely on the hook: make sure it records opens, listings and mkdirs."""
    with recording() as events:
        (tmp_path / "x").mkdir()
        (tmp_path / "f").write_text("x")
        os.listdir(tmp_path)
    kinds = {event for event, _ in events}
    assert {"os.mkdir", "open", "os.listdir"} <= kinds
