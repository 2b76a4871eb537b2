"""The agent files a server serves: found, validated and checked before anything starts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import Problem, SpecError

__all__ = ["ServedAgent", "collect_agents", "shared_workspaces"]


@dataclass(frozen=True)
class ServedAgent:
    """One agent file, served as the graph (assistant) named after its `name`."""

    name: str
    path: Path
    description: str | None


def collect_agents(
    targets: Iterable[str | Path],
    *,
    vars: Mapping[str, Any] | None = None,
    shared_workspace: bool = False,
) -> list[ServedAgent]:
    """Every agent file under `targets` (files, or folders by `agentctl validate`'s rule).

    Raises `SpecError` with every problem of every file when any file has one: a file that does
    not validate, two files with one `name`, no agent file at all, or (unless `shared_workspace`)
    a `filesystem`/`local_shell` backend whose folder every thread would share.
    """
    from runner.loader import display_path, load_spec
    from runner.validate import find_specs, validate_file

    problems: list[Problem] = []
    found: list[ServedAgent] = []
    by_name: dict[str, Path] = {}
    for path, problem in find_specs(targets):
        file_problems = [problem] if problem else validate_file(path, vars=vars)
        if file_problems:
            problems += file_problems
            continue
        spec = load_spec(path, vars=vars)
        shown = display_path(path)
        if spec.name in by_name:
            problems.append(
                Problem(
                    shown,
                    0,
                    0,
                    "name",
                    f"{spec.name!r} is also the name of {display_path(by_name[spec.name])}; "
                    "each served agent needs its own name (it names the graph)",
                )
            )
            continue
        by_name[spec.name] = path
        if not shared_workspace:
            problems += [
                Problem(
                    shown,
                    0,
                    0,
                    where,
                    f"{root} would be one folder shared by every thread of the server; write "
                    "{thread_id} into root_dir for a folder per thread (root_dir: "
                    "./workspace/{thread_id}), or pass --shared-workspace",
                )
                for where, root in shared_workspaces(spec)
            ]
        found.append(ServedAgent(spec.name, path.resolve(), spec.description))
    if problems:
        raise SpecError(problems)
    if not found:
        raise SpecError("no agent files to serve under " + ", ".join(str(t) for t in targets))
    return found


def shared_workspaces(spec: Any) -> list[tuple[str, str]]:
    """(key path, folder) of each `filesystem`/`local_shell` backend of the agent and its inline
    subagents whose `root_dir` has no `{thread_id}`."""
    from runner.backends import THREAD_PLACEHOLDER
    from runner.spec import CompositeBackendSpec, FilesystemBackendSpec, LocalShellBackendSpec

    owners: list[tuple[str, Any]] = [("", spec)]
    owners += [
        (f"subagents[{i}].", sub)
        for i, sub in enumerate(spec.subagents)
        if getattr(sub, "backend", None) is not None
    ]
    found: list[tuple[str, str]] = []
    for prefix, owner in owners:
        backend = owner.backend
        if backend is None:
            continue
        leaves = [(f"{prefix}backend", backend)]
        if isinstance(backend, CompositeBackendSpec):
            leaves = [(f"{prefix}backend.default", backend.default)] + [
                (f"{prefix}backend.routes.{route}", leaf) for route, leaf in backend.routes.items()
            ]
        for where, leaf in leaves:
            directory = isinstance(leaf, FilesystemBackendSpec | LocalShellBackendSpec)
            if directory and THREAD_PLACEHOLDER not in leaf.root_dir:
                found.append((f"{where}.root_dir", leaf.root_dir))
    return found
