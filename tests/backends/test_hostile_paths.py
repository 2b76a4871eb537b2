"""Hostile paths and glob patterns against every backend, sync and async.

The threat list, each a strategy below:

- brace alternatives that climb out (`{..,..}/**`, `{../..,x}/{../..,y}/etc/*`), nested braces,
  absolute alternatives (`{/etc,x}/*`), `**` spanning everything;
- `..`, `~`, Windows and UNC syntax, NUL bytes, lone surrogates (not Unicode), unicode names;
- very deep paths (thousands of components) and very long names;
- symbolic links in the root leading out (to a directory, to a file, relative, chained, looping).

For every backend (state, store, filesystem, local_shell, composite with routes) and every file
operation, each call must either succeed with results that name only agent paths inside the root,
or fail with a `BackendError` the agent can read; nothing outside the root may change, and no
result may carry the outside secret. Anything else raised (RecursionError, UnicodeEncodeError,
OSError) is a failure: it would end the run instead of telling the model.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from runner.backends import (
    Backend,
    BackendError,
    CompositeBackend,
    FilesystemBackend,
    LocalShellBackend,
    StateBackend,
    StoreBackend,
)
from runner.backends.paths import validate_path
from tests.backends.test_confinement import snapshot

SECRET = "SECRET-OUTSIDE"

SEGMENTS = [
    "..",
    ".",
    "",
    "~",
    "C:",
    "\\\\server",
    "*",
    "**",
    "{..,..}",
    "{../..,x}",
    "{/etc,x}",
    "{a,{..,b}}",
    "{,..}",
    "out",
    "out_file",
    "chain",
    "loop",
    "up",
    "in",
    "a.txt",
    "sub",
    "secret.txt",
    "dir",
    "ünïcødé",
    "名前.txt",
    "\udcff",
    "\ud800",
    "x\0y",
    "n" * 300,
    "etc",
    "passwd",
    "[.][.]",
    "?" * 2,
]
SEGMENT = st.sampled_from(SEGMENTS)
PATH = st.one_of(
    st.lists(SEGMENT, max_size=6).map(lambda parts: "/" + "/".join(parts)),
    st.lists(SEGMENT, min_size=1, max_size=4).map("/".join),
    st.integers(min_value=200, max_value=3000).map(lambda n: "/" + "/".join(["d"] * n)),
    st.just("/" + "x" * 5000),
)
OPERATIONS = ["ls", "read", "write", "edit", "glob", "glob_in", "grep", "grep_glob"]
BACKENDS = ["state", "store", "filesystem", "filesystem-rg", "local_shell", "composite"]


def build(top: Path) -> tuple[Path, Path]:
    """`top/outside` holds the secret; `top/root` is the root, with links leading out."""
    outside, root = top / "outside", top / "root"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{SECRET} a\n")
    (outside / "dir" / "a.txt").write_text(f"{SECRET} inner a\n")
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("inside a\n")
    (root / "sub" / "a.txt").write_text("inside sub a\n")
    os.symlink(outside / "dir", root / "out")
    os.symlink(outside / "secret.txt", root / "out_file")
    os.symlink("../outside/dir", root / "up")
    os.symlink("out", root / "chain")
    os.symlink("loop", root / "loop")
    os.symlink("sub", root / "in")
    return outside, root


def make_backend(kind: str, root: Path) -> Backend:
    if kind == "state":
        return StateBackend({"/a.txt": _file("inside a\n"), "/sub/a.txt": _file("inside sub\n")})
    if kind == "store":
        store = InMemoryStore()
        backend = StoreBackend(store, ["files"])
        backend.write("/a.txt", "inside a\n")
        return backend
    if kind == "filesystem":
        return FilesystemBackend(root, ripgrep=False)
    if kind == "filesystem-rg":
        return FilesystemBackend(root)
    if kind == "local_shell":
        return LocalShellBackend(root, timeout=5)
    return CompositeBackend(
        FilesystemBackend(root, ripgrep=False),
        {"/sub/": FilesystemBackend(root / "sub"), "/mem/": StateBackend({})},
    )


def _file(content: str) -> Any:
    return {"content": content, "created_at": "2026-01-01", "modified_at": "2026-01-01"}


def call(backend: Backend, operation: str, path: str, mode: str) -> list[str]:
    """The operation; returns every agent path in its result (errors return none)."""
    calls: dict[str, tuple[str, tuple[Any, ...]]] = {
        "ls": ("ls", (path,)),
        "read": ("read", (path,)),
        "write": ("write", (path, f"written {SECRET[:3]}")),
        "edit": ("edit", (path, "a", "EDITED", True)),
        "glob": ("glob", (path.lstrip("/") or "*", "/")),
        "glob_in": ("glob", ("**/*", path)),
        "grep": ("grep", ("a", path)),
        "grep_glob": ("grep", ("a", "/", path.lstrip("/") or "*")),
    }
    method, args = calls[operation]
    try:
        if mode == "sync":
            result = getattr(backend, method)(*args)
        else:
            result = asyncio.run(getattr(backend, "a" + method)(*args))
    except BackendError as exc:
        assert SECRET not in str(exc)
        return []
    if method == "read":
        assert SECRET not in result.content
        return []
    if method in ("write", "edit"):
        return [result.path]
    if method == "grep":
        for match in result:
            assert SECRET not in match.text
    return [item.path for item in result]


def check_inside(paths: list[str], root: Path, kind: str) -> None:
    for path in paths:
        assert validate_path(path) == path, path
        if kind in ("state", "store"):
            continue
        host = os.path.realpath(str(root) + path)
        assert host == str(root) or host.startswith(str(root) + os.sep), (path, host)


SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", BACKENDS)
@SETTINGS
@given(ops=st.lists(st.tuples(st.sampled_from(OPERATIONS), PATH), min_size=1, max_size=6))
def test_hostile_paths_never_leave_the_root(
    kind: str, mode: str, ops: list[tuple[str, str]]
) -> None:
    top = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        outside, root = build(top)
        root = Path(os.path.realpath(root))
        backend = make_backend(kind, root)
        before = snapshot(outside)
        for operation, path in ops:
            check_inside(call(backend, operation, path, mode), root, kind)
            assert snapshot(outside) == before, (operation, path)
    finally:
        shutil.rmtree(top)


GLOB_ESCAPES = [
    "{..,..}/**",
    "{../..,../..}/*",
    "{../..,../..}/{../..,../..}/{../..,../..}/etc/*",
    "/{..,x}/secret.txt",
    "{/etc,x}/*",
    "{a,{..,b}}/**",
    "x/{..}/../*",
]


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("pattern", GLOB_ESCAPES)
def test_glob_patterns_that_climb_out_get_a_clear_error(
    kind: str, pattern: str, tmp_path: Path
) -> None:
    _, root = build(tmp_path)
    backend = make_backend(kind, root)
    with pytest.raises(BackendError) as caught:
        backend.glob(pattern)
    message = str(caught.value)
    assert "traversal" in message or "absolute" in message or "not allowed" in message, message


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/" + "/".join(["d"] * 3000), "over the limit"),
        ("/" + "/".join(["d"] * 300), "more than 256 directories"),
        ("/" + "n" * 300, "longer than 255 bytes"),
        ("/\ud800", "not valid Unicode"),
        ("/a\0b", "NUL"),
    ],
)
def test_deep_long_and_broken_paths_are_tool_errors(
    kind: str, path: str, expected: str, tmp_path: Path
) -> None:
    _, root = build(tmp_path)
    backend = make_backend(kind, root)
    operations: list[Callable[[], object]] = [
        lambda: backend.ls(path),
        lambda: backend.read(path),
        lambda: backend.write(path + "/f", "x"),
        lambda: backend.edit(path, "a", "b"),
        lambda: backend.glob("*", path),
        lambda: backend.grep("a", path),
    ]
    for operation in operations:
        with pytest.raises(BackendError, match=expected):
            operation()


def test_names_that_are_not_utf8_are_left_out(tmp_path: Path) -> None:
    """No agent can name them, and a lone surrogate in a result would break the checkpoint."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "good.txt").write_text("a\n")
    with open(os.path.join(os.fsencode(root), b"bad\xff.txt"), "w") as file:
        file.write("a\n")
    for backend in (FilesystemBackend(root), FilesystemBackend(root, ripgrep=False)):
        assert [info.path for info in backend.ls("/")] == ["/good.txt"]
        assert [info.path for info in backend.glob("*")] == ["/good.txt"]
        assert [match.path for match in backend.grep("a")] == ["/good.txt"]
