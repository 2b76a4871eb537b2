"""Each case runs apart from the others and from the real workspace.

A case gets a folder of its own holding its database (its thread, checkpoints and LangGraph store)
and a copy of every directory an agent of the spec works in (`filesystem` / `local_shell`
`root_dir`, subagents' included). The spec is pointed at the copies before it is built, so the
agent never sees the real folders. A root inside another root (a subagent working in a subfolder
of the main agent's) stays inside the other's copy, so both see the same files, as they would
without the test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.backends.paths import validate_path
from runner.errors import BuildError
from runner.spec import (
    AgentSpec,
    CompositeBackendSpec,
    FilesystemBackendSpec,
    InlineSubagent,
    LocalShellBackendSpec,
    RefSubagent,
)

__all__ = ["directory_for", "fixture_files", "isolate_roots", "route"]

DirectoryBackend = FilesystemBackendSpec | LocalShellBackendSpec

_NOT_COPIED = shutil.ignore_patterns(".git", ".venv", "node_modules", "__pycache__")
"""Folders a workspace may hold that no test needs (and that can be large)."""


def _leaves(backend: Any) -> Iterator[DirectoryBackend]:
    if isinstance(backend, CompositeBackendSpec):
        yield from _leaves(backend.default)
        for route in backend.routes.values():
            yield from _leaves(route)
    elif isinstance(backend, DirectoryBackend):
        yield backend


def _directory_backends(
    spec: AgentSpec, seen: set[int] | None = None
) -> Iterator[DirectoryBackend]:
    """Every directory backend of the spec and of its subagents (ref'd files included)."""
    seen = set() if seen is None else seen
    if id(spec) in seen:
        return
    seen.add(id(spec))
    yield from _leaves(spec.backend)
    for entry in spec.subagents:
        if isinstance(entry, InlineSubagent):
            yield from _leaves(entry.backend)
        elif isinstance(entry, RefSubagent) and entry._spec is not None:
            yield from _directory_backends(entry._spec, seen)


def isolate_roots(spec: AgentSpec, into: Path, *, copy: bool = True) -> dict[str, Path]:
    """Copy each directory the spec's backends work in under `into` (an empty folder for each
    instead, without `copy`) and point the spec at the copies. Returns {original root: its
    copy}."""
    backends = list(_directory_backends(spec))
    for backend in backends:
        if not backend.virtual_mode:
            raise BuildError(
                f"the {backend.kind} backend at {backend.root_dir} has `virtual_mode: false`: its "
                "agent reaches host paths outside its root, so a test cannot give it a copy to "
                "work in; test it with `virtual_mode: true`"
            )
    roots = sorted({os.path.realpath(b.root_dir) for b in backends}, key=len)
    copies: dict[str, Path] = {}
    for index, root in enumerate(roots):
        outer = next((r for r in copies if root.startswith(r.rstrip(os.sep) + os.sep)), None)
        if outer is not None:
            copies[root] = copies[outer] / os.path.relpath(root, outer)
            continue
        folder = into / f"{index}-{Path(root).name or 'root'}"
        if copy and os.path.isdir(root):
            shutil.copytree(root, folder, symlinks=True, ignore=_NOT_COPIED)
        copies[root] = folder
    for made in copies.values():
        made.mkdir(parents=True, exist_ok=True)
    for backend in backends:
        backend.root_dir = str(copies[os.path.realpath(backend.root_dir)])
    return copies


def route(spec: AgentSpec, path: str) -> tuple[Any, str]:
    """The backend spec of the main agent that holds `path` (the longest matching route of a
    composite wins, as in the agent; None for the default state backend) and the path inside it."""
    path = validate_path(path)
    backend: Any = spec.backend
    if not isinstance(backend, CompositeBackendSpec):
        return backend, path
    best, chosen = "", backend.default
    for prefix, leaf in backend.routes.items():
        normal = validate_path(prefix)
        inside = path == normal or path.startswith(normal.rstrip("/") + "/")
        if inside and len(normal) > len(best):
            best, chosen = normal, leaf
    return chosen, ("/" + path[len(best) :].lstrip("/")) if best else path


def directory_for(spec: AgentSpec, path: str) -> Path | None:
    """Where the main agent's file `path` is on disk when a directory backend in virtual mode
    holds it; None for state and store backends."""
    backend, inner = route(spec, path)
    if not isinstance(backend, DirectoryBackend):
        return None
    return Path(backend.root_dir) / inner.lstrip("/")


def fixture_files(fixtures: dict[str, str]) -> dict[str, str]:
    """The files of the test file's `fixtures` (agent folder -> host folder) as agent path ->
    text, ready to seed like a case's `files`."""
    from runner.errors import SpecError

    found: dict[str, str] = {}
    for at, folder in fixtures.items():
        base = Path(folder)
        for path in sorted(base.rglob("*")):
            parts = path.relative_to(base).parts
            if not path.is_file() or _NOT_COPIED(str(base), list(parts[:-1])):
                continue  # (a file under .git, .venv, node_modules, __pycache__)
            inner = "/".join(parts)
            try:
                found[at.rstrip("/") + "/" + inner] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SpecError(f"fixtures: {at}: cannot read {path} as text: {exc}") from None
    return found
