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
    problems: tuple[Problem, ...] = ()
    """Why the file does not load now (`collect_agents(keep_broken=True)` only): it is served
    under `name` anyway, and runs work once the file is fixed and saved."""
    shared: tuple[str, ...] = ()
    """The folders every thread of the server shares (`root_dir` without `{thread_id}`),
    accepted by `shared_workspace`."""


def collect_agents(
    targets: Iterable[str | Path],
    *,
    vars: Mapping[str, Any] | None = None,
    shared_workspace: bool = False,
    keep_broken: bool = False,
    allow_empty: bool = False,
) -> list[ServedAgent]:
    """Every agent file under `targets` (files, or folders by `agentctl validate`'s rule).

    Raises `SpecError` with every problem of every file when any file has one: a file that does
    not validate, two files with one `name`, no agent file at all, or (unless `shared_workspace`)
    a `filesystem`/`local_shell` backend whose folder every thread would share. With
    `keep_broken` (`serve --dev`), a file that does not validate is returned with its problems
    instead, named by its `name:` if it has a readable one, else by its file name.
    `allow_empty` (`serve --edit`): a folder without agent files is no problem (the page makes
    them).
    """
    from runner.check.validate import find_specs, validate_file
    from runner.errors import display_path
    from runner.load.any import load_any
    from runner.load.workflow import agents_in

    problems: list[Problem] = []
    found: list[ServedAgent] = []
    by_name: dict[str, Path] = {}
    broken: list[tuple[Path, tuple[Problem, ...]]] = []
    for path, problem in find_specs(targets):
        if allow_empty and problem is not None and path.is_dir() and problem.path == "":
            continue  # an empty folder
        file_problems = [problem] if problem else validate_file(path, vars=vars)
        if file_problems and keep_broken and path.is_file():
            broken.append((path, tuple(file_problems)))
            continue
        if file_problems:
            problems += file_problems
            continue
        spec = load_any(path, vars=vars, require_inputs=False)
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
        shared = [
            pair for prefix, agent in agents_in(spec) for pair in shared_workspaces(agent, prefix)
        ]
        if not shared_workspace and shared:
            fix = (
                "an agent file of another tool works on its project folder: pass "
                "--shared-workspace to serve it there, or convert it (agentctl convert FILE --to "
                "yaml) and write {thread_id} into root_dir"
                if path.suffix in (".md", ".toml")
                else "write {thread_id} into root_dir for a folder per thread (root_dir: "
                "./workspace/{thread_id}), or pass --shared-workspace"
            )
            problems += [
                Problem(
                    shown,
                    0,
                    0,
                    where,
                    f"{root} would be one folder shared by every thread of the server; {fix}",
                )
                for where, root in shared
            ]
        found.append(
            ServedAgent(
                spec.name,
                path.resolve(),
                spec.description,
                shared=tuple(dict.fromkeys(root for _, root in shared)),
            )
        )
    for path, broken_problems in broken:
        name = _name_of_broken(path)
        if name in by_name:
            name = path.stem
        if name in by_name:
            problems.append(
                Problem(display_path(path), 0, 0, "name", f"{name!r} is already served")
            )
            continue
        by_name[name] = path
        found.append(ServedAgent(name, path.resolve(), None, broken_problems))
    if problems:
        raise SpecError(problems)
    if not found and not allow_empty:
        raise SpecError("no agent files to serve under " + ", ".join(str(t) for t in targets))
    return found


def _name_of_broken(path: Path) -> str:
    """The `name:` of an agent file that does not validate, when it has a usable one."""
    import re

    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        data = None
    name = data.get("name") if isinstance(data, dict) else None
    if isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        return name
    return path.stem


def shared_workspaces(spec: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(key path, folder) of each `filesystem`/`local_shell` backend of the agent and its inline
    subagents whose `root_dir` has no `{thread_id}` (key paths after `prefix`, for an agent of a
    workflow)."""
    from runner.backends import THREAD_PLACEHOLDER
    from runner.spec import CompositeBackendSpec, FilesystemBackendSpec, LocalShellBackendSpec

    owners: list[tuple[str, Any]] = [(prefix, spec)]
    owners += [
        (f"{prefix}subagents[{i}].", sub)
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
