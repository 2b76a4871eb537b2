"""Checks across keys that a field validator cannot locate precisely.

Each returns `(key_path, message)` pairs; the loader turns key paths into file:line:col. They take
plain values so the loader can run them on raw data too, when validation failed elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from runner.spec.agent import AgentSpec, RefSubagent

KeyPath = tuple[str | int, ...]

GENERAL_PURPOSE = "general-purpose"


def subagent_name(entry: object) -> str | None:
    """The name the main agent calls a subagent by (a loaded ref falls back to its file's name)."""
    name = getattr(entry, "name", None)
    if name is None and isinstance(entry, RefSubagent) and entry._spec is not None:
        name = entry._spec.name
    return name


def spec_subagent_names(spec: AgentSpec) -> list[tuple[int, str | None, bool]]:
    """(index, name, name comes from a ref'd file) for each subagent of a loaded spec."""
    return [
        (index, subagent_name(entry), isinstance(entry, RefSubagent) and entry.name is None)
        for index, entry in enumerate(spec.subagents)
    ]


def check_subagent_names(
    names: Iterable[tuple[int, str | None, bool]], *, general_purpose: bool
) -> list[tuple[KeyPath, str]]:
    """Subagent names are unique, and `general-purpose` is reserved while the built-in is on."""
    problems: list[tuple[KeyPath, str]] = []
    seen: dict[str, int] = {}
    for index, name, from_ref in names:
        if name is None:
            continue
        where: KeyPath = ("subagents", index, "ref" if from_ref else "name")
        if name == GENERAL_PURPOSE and general_purpose:
            problems.append(
                (
                    where,
                    f"the name {GENERAL_PURPOSE!r} is taken by the built-in subagent; rename "
                    "this one or set `general_purpose_agent: false`",
                )
            )
        elif name in seen and from_ref:
            problems.append(
                (
                    where,
                    f"the ref'd file's name {name!r} is already used by subagents[{seen[name]}]; "
                    "set another `name:` next to `ref:`",
                )
            )
        elif name in seen:
            problems.append(
                (
                    where,
                    f"subagent name {name!r} is already used by subagents[{seen[name]}]; "
                    "names must be unique",
                )
            )
        else:
            seen[name] = index
    return problems


def file_inputs(spec: AgentSpec) -> set[str]:
    """The names declared `type: file` by any agent of the tree: the spec (its `include:` files
    are merged into it) and every `ref:` subagent file, at any depth. A caller's vars reach
    every file of the tree, so a client that may not choose a file the server reads must be
    refused each of these names, not only the main agent's."""
    names: set[str] = set()
    pending, seen = [spec], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        names.update(n for n, declared in current.inputs.items() if declared.kind == "file")
        pending.extend(e._spec for e in current.subagents if isinstance(e, RefSubagent) and e._spec)
    return names
