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
        load_spec(path, vars=vars, env=env)
    except SpecError as exc:
        return exc.problems
    return []
