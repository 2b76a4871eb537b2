"""Composite routing: longest prefix, prefixes stripped inside and restored outside, shadowing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from runner.backends import (
    BackendError,
    CompositeBackend,
    FilesystemBackend,
    LocalShellBackend,
    StateBackend,
    StoreBackend,
    can_execute,
    merge_files,
)
from runner.backends.state import PrefixedFiles


@pytest.fixture
def parts(tmp_path: Path) -> dict[str, Any]:
    state: dict[str, Any] = {"files": {}}
    return {
        "state": state,
        "default": FilesystemBackend(tmp_path / "default"),
        "mem": StoreBackend(InMemoryStore(), ("memories",)),
        "deep": StoreBackend(InMemoryStore(), ("deep",)),
    }


def composite(parts: dict[str, Any]) -> CompositeBackend:
    return CompositeBackend(
        parts["default"],
        {
            "/memories/": parts["mem"],
            "/memories/deep/": parts["deep"],
            "/scratch/": StateBackend(PrefixedFiles(parts["state"]["files"], "/scratch")),
        },
    )


def write(parts: dict[str, Any], path: str, content: str) -> None:
    result = composite(parts).write(path, content)
    if result.files_update:
        parts["state"]["files"] = merge_files(parts["state"]["files"], result.files_update)


def test_longest_prefix_wins_and_inner_paths_are_stripped(parts: dict[str, Any]) -> None:
    write(parts, "/top.txt", "default")
    write(parts, "/memories/m.md", "memory")
    write(parts, "/memories/deep/d.md", "deep memory")
    assert parts["default"].read("/top.txt").content == "default"
    assert parts["mem"].read("/m.md").content == "memory"
    assert parts["deep"].read("/d.md").content == "deep memory"
    assert [i.path for i in parts["mem"].glob("**")] == ["/m.md"]


def test_results_carry_the_full_paths(parts: dict[str, Any]) -> None:
    backend = composite(parts)
    result = backend.write("/scratch/notes/a.txt", "scratch text")
    assert result.path == "/scratch/notes/a.txt"
    assert list(result.files_update or {}) == ["/scratch/notes/a.txt"]
    parts["state"]["files"] = merge_files(parts["state"]["files"], result.files_update)
    backend = composite(parts)
    assert backend.read("/scratch/notes/a.txt").content == "scratch text"
    edited = backend.edit("/scratch/notes/a.txt", "scratch", "SCRATCH")
    assert (edited.path, list(edited.files_update or {})) == (
        "/scratch/notes/a.txt",
        ["/scratch/notes/a.txt"],
    )
    assert [i.path for i in backend.ls("/scratch/notes")] == ["/scratch/notes/a.txt"]
    assert [m.path for m in backend.grep("scratch", "/scratch")] == ["/scratch/notes/a.txt"]
    assert [i.path for i in backend.glob("**/*.txt", "/scratch")] == ["/scratch/notes/a.txt"]


def test_errors_name_the_agents_paths(parts: dict[str, Any]) -> None:
    write(parts, "/memories/f", "a file")
    backend = composite(parts)
    cases = [
        (lambda: backend.read("/memories/nope.md"), "File not found: '/memories/nope.md'"),
        (
            lambda: backend.write("/memories/f/x", "x"),
            "Cannot create '/memories/f/x': '/memories/f' is a file, not a directory",
        ),
        (lambda: backend.ls("/memories/none"), "Directory not found: '/memories/none'"),
        (
            lambda: backend.read("/memories/deep"),
            "'/memories/deep' is a directory, not a file; use ls to list it",
        ),
        (lambda: backend.grep("x", "/scratch/none"), "Path not found: '/scratch/none'"),
    ]
    for call, expected in cases:
        with pytest.raises(BackendError) as caught:
            call()
        assert str(caught.value) == expected


def test_ls_root_shows_routes_and_hides_what_they_shadow(parts: dict[str, Any]) -> None:
    parts["default"].write("/memories/shadowed.md", "hidden by the route")
    parts["default"].write("/scratch", "a file where a route is mounted")
    write(parts, "/top.txt", "x")
    backend = composite(parts)
    assert [(i.path, i.is_dir) for i in backend.ls("/")] == [
        ("/memories", True),
        ("/scratch", True),
        ("/top.txt", False),
    ]
    assert [(i.path, i.is_dir) for i in backend.ls("/memories")] == [("/memories/deep", True)]
    assert backend.glob("**/shadowed.md") == []
    assert backend.grep("hidden") == []


def test_glob_and_grep_over_a_directory_search_every_backend(parts: dict[str, Any]) -> None:
    for path in ["/a.md", "/docs/b.md", "/memories/c.md", "/memories/deep/d.md", "/scratch/e.md"]:
        write(parts, path, f"needle in {path}\n")
    write(parts, "/memories/other.txt", "needle")
    backend = composite(parts)
    everything = ["/a.md", "/docs/b.md", "/memories/c.md", "/memories/deep/d.md", "/scratch/e.md"]
    assert [i.path for i in backend.glob("**/*.md")] == everything
    assert [i.path for i in backend.glob("*.md")] == ["/a.md"]
    assert [i.path for i in backend.glob("memories/**/*.md")] == everything[2:4]
    assert [i.path for i in backend.glob("*.md", "/memories")] == ["/memories/c.md"]
    assert [i.path for i in backend.glob("/memories/deep/*", "/memories")] == [everything[3]]
    assert [m.path for m in backend.grep("needle", glob="*.md")] == everything
    assert [m.path for m in backend.grep("needle", "/memories", "deep/*.md")] == [everything[3]]
    assert [m.path for m in backend.grep("needle", "/memories")] == [
        "/memories/c.md",
        "/memories/deep/d.md",
        "/memories/other.txt",
    ]
    assert [i.path for i in asyncio.run(backend.aglob("**/*.md"))] == everything
    assert [m.path for m in asyncio.run(backend.agrep("needle", glob="*.md"))] == everything


def test_a_directory_that_only_holds_routes_exists(tmp_path: Path) -> None:
    store = StoreBackend(InMemoryStore(), ("x",))
    store.write("/inner.txt", "hello")
    backend = CompositeBackend(FilesystemBackend(tmp_path), {"/x/y/": store})
    assert [(i.path, i.is_dir) for i in backend.ls("/")] == [("/x", True)]
    assert [(i.path, i.is_dir) for i in backend.ls("/x")] == [("/x/y", True)]
    assert [i.path for i in backend.glob("**", "/x")] == ["/x/y/inner.txt"]
    assert [m.path for m in backend.grep("hello", "/x")] == ["/x/y/inner.txt"]
    with pytest.raises(BackendError) as caught:
        backend.ls("/nothing")
    assert str(caught.value) == "Directory not found: '/nothing'"


def test_execute_goes_to_the_default_backend(tmp_path: Path) -> None:
    shell = LocalShellBackend(tmp_path / "shell")
    store = StoreBackend(InMemoryStore(), ("m",))
    with_shell = CompositeBackend(shell, {"/memories/": store})
    assert can_execute(with_shell)
    result = with_shell.execute("pwd")
    assert result.output.strip() == shell.root
    assert asyncio.run(with_shell.aexecute("echo $((1 + 2))")).output == "3\n"

    no_shell = CompositeBackend(StateBackend({}), {"/shell/": shell})
    assert not can_execute(no_shell)
    with pytest.raises(BackendError) as caught:
        no_shell.execute("echo hi")
    assert str(caught.value) == (
        "Command execution is not available: this agent's default backend cannot run commands"
    )


def test_routes_are_normalised_and_root_is_refused(tmp_path: Path) -> None:
    backend = CompositeBackend(StateBackend({}), {"/a//b/": StateBackend({})})
    assert list(backend.routes) == ["/a/b"]
    with pytest.raises(ValueError, match="a route cannot be '/'"):
        CompositeBackend(StateBackend({}), {"/": StateBackend({})})
