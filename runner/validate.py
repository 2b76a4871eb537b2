"""Static checks of agent files: what `agentctl validate` runs.

A file is valid when it loads (`runner.load_spec`: YAML, schema, paths, prompts, refs) and passes
the static checks that need no model and no network. Nothing here imports langchain.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from runner.errors import Problem, SpecError
from runner.loader import display_path, load_spec
from runner.spec import AgentSpec

__all__ = ["SPEC_SUFFIXES", "find_specs", "validate_file"]

SPEC_SUFFIXES = (".yaml", ".yml")
CASSETTE_SUFFIXES = (".cassette.yaml", ".cassette.yml")


def is_agent_file_name(path: Path) -> bool:
    """The directory rule: `*.yaml` / `*.yml` files, except cassettes (`*.cassette.yaml`) and
    names starting with `_` or `.` (include fragments like `_base.yaml`)."""
    name = path.name
    return (
        name.endswith(SPEC_SUFFIXES)
        and not name.endswith(CASSETTE_SUFFIXES)
        and not name.startswith(("_", "."))
    )


def find_specs(targets: Iterable[str | Path]) -> Iterator[tuple[Path, Problem | None]]:
    """Each target file, or the agent files directly inside each target directory."""
    for target in targets:
        path = Path(target)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and is_agent_file_name(p))
            if not found:
                yield path, Problem(display_path(path), 0, 0, "", "no agent files (*.yaml) here")
            for spec in found:
                yield spec, None
        elif path.exists():
            yield path, None
        else:
            yield path, Problem(display_path(path), 0, 0, "", "no such file or directory")


def validate_file(
    path: str | Path,
    *,
    vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Every problem in the agent file at `path` (an empty list when it is valid)."""
    try:
        spec = load_spec(path, vars=vars, env=env)
    except SpecError as exc:
        return exc.problems
    return sorted(set(skill_problems(spec)))


def skill_problems(spec: AgentSpec, seen: set[str] | None = None) -> list[Problem]:
    """Problems in the host skills folders of an agent, its inline subagents and its ref'd
    files: a missing folder (located at the spec's key), a bad SKILL.md (located in it)."""
    from runner.skills import discover
    from runner.spec import InlineSubagent, RefSubagent

    seen = set() if seen is None else seen
    if spec.source in seen:
        return []
    seen.add(spec.source or "")
    problems: list[Problem] = []
    cores: list[tuple[tuple[str | int, ...], Any]] = [((), spec)]
    cores += [
        (("subagents", i), s) for i, s in enumerate(spec.subagents) if isinstance(s, InlineSubagent)
    ]
    for where, core in cores:
        for index, entry in enumerate(core.skills):
            if entry.host is None:
                continue  # in the backend: checked when the agent runs
            folder = Path(entry.host)
            if not folder.is_dir():
                problems.append(
                    spec.problem(
                        (*where, "skills", index),
                        f"skills folder not found: {display_path(folder)}",
                    )
                )
                continue
            problems.extend(discover([(folder, "/skills/")]).problems)
    for entry in spec.subagents:
        if isinstance(entry, RefSubagent) and entry._spec is not None:
            problems.extend(skill_problems(entry._spec, seen))
    return problems
