"""Load `*.test.yaml` files with the machinery agent files use: `read_yaml` (positions, ${ENV}),
`problems_from_validation` (located, "did you mean") and `SpecError` carrying every problem.

After loading, the paths a test file names (its agent, `replay:` cassettes) are absolute, resolved
against the test file, and each case knows where it is written (for located failures).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from runner.check.validate import is_test_file_name
from runner.errors import Problem, SpecError, display_path
from runner.load.problems import not_a_mapping, problems_from_validation
from runner.load.source import (
    KeyPath,
    SourceMap,
    SourceTooLarge,
    read_source,
    read_yaml,
)

if TYPE_CHECKING:  # the models are loaded with the first test file read
    from runner.testing.spec import TestFileSpec

__all__ = [
    "LoadedTestFile",
    "find_test_files",
    "load_test_file",
    "test_file_problems",
]


@dataclass
class LoadedTestFile:
    """A valid test file: its spec, where it is, and where each of its keys is written."""

    __test__ = False

    path: Path
    spec: TestFileSpec
    agent_path: Path
    locate: Callable[[KeyPath, str], Problem] = field(repr=False)

    @property
    def shown(self) -> str:
        return display_path(self.path)

    def case_location(self, index: int) -> Problem:
        return self.locate(("cases", index), "")


def load_test_file(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> LoadedTestFile:
    """Read and validate a test file. Raises `SpecError` listing every problem, located."""
    path = Path(path)
    shown = display_path(path)
    try:
        text = read_source(path)
    except FileNotFoundError:
        raise SpecError(Problem(shown, 0, 0, "", "file not found")) from None
    except IsADirectoryError:
        raise SpecError(Problem(shown, 0, 0, "", "is a directory, not a test file")) from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            Problem(shown, 0, 0, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})")
        ) from None
    except OSError as exc:
        raise SpecError(Problem(shown, 0, 0, "", f"cannot read: {exc.strerror}")) from None
    except SourceTooLarge as exc:
        raise SpecError(Problem(shown, 0, 0, "", str(exc))) from None
    doc = read_yaml(text, shown, os.environ if env is None else env)
    if doc.problems and doc.value is None:
        raise SpecError(sorted(doc.problems))
    if not isinstance(doc.value, dict):
        raise SpecError(not_a_mapping(doc, shown, "version:, agent:, cases:"))
    smap = SourceMap(doc.pos)
    problems = list(doc.problems)
    from runner.testing.spec import TestFileSpec

    spec: TestFileSpec | None = None
    try:
        spec = TestFileSpec.model_validate(doc.value)
    except ValidationError as exc:
        failed = {(p.file, p.path) for p in doc.problems}
        problems.extend(
            p
            for p in problems_from_validation(exc, doc.value, smap, TestFileSpec)
            if (p.file, p.path) not in failed
        )
    if spec is not None:
        problems.extend(_check(spec, path, smap))
    if problems or spec is None:
        raise SpecError(sorted(set(problems)))
    base = path.resolve().parent
    if spec.judge_model is not None:
        spec.judge_model = _replay_path(spec.judge_model, base)
    spec.fixtures = {at: str(_host_path(folder, base)) for at, folder in spec.fixtures.items()}
    for case in spec.cases:
        if case.model is not None:
            case.model = _replay_path(case.model, base)
        if case.expect.judge is not None and case.expect.judge.model is not None:
            case.expect.judge.model = _replay_path(case.expect.judge.model, base)
    return LoadedTestFile(
        path=path,
        spec=spec,
        agent_path=_host_path(spec.agent, base),
        locate=lambda keypath, message: smap.problem(keypath, message),
    )


def test_file_problems(path: Path) -> list[Problem]:
    """What `agentctl test` rejects before running a case of the test file at `path`: the test
    file itself, and the agent file loaded with each case's `vars` (`agentctl validate` of a
    test file)."""
    from runner.load.loader import load_spec

    try:
        loaded = load_test_file(path)
    except SpecError as exc:
        return list(exc.problems)
    problems: set[Problem] = set()
    from runner.load.loader import is_workflow_file

    workflow = is_workflow_file(loaded.agent_path)
    for index, case in enumerate(loaded.spec.cases):
        try:
            if workflow:
                from runner.check.workflow import load_checked_workflow

                load_checked_workflow(loaded.agent_path, vars=case.vars)
            else:
                load_spec(loaded.agent_path, vars=case.vars)
        except SpecError as exc:
            for problem in exc.problems:
                if problem.file == "--var":  # a case's `vars`, not the command line's
                    message = problem.message.split(" (--allow-unused-var")[0]
                    name = problem.path
                    if not name:
                        name, _, message = message.partition(": ")
                    problem = loaded.locate(("cases", index, "vars", name), message)
                problems.add(problem)
    return sorted(problems)


def _check(spec: TestFileSpec, path: Path, smap: SourceMap) -> Iterator[Problem]:
    """What the models cannot see: the agent file exists, fixture folders exist, case names are
    unique, cassettes named by `replay:` exist."""
    base = path.resolve().parent
    agent = _host_path(spec.agent, base)
    if not agent.is_file():
        reason = "is a directory, not an agent file" if agent.is_dir() else "file not found"
        yield smap.problem(("agent",), f"{reason}: {display_path(agent)}")
    for at, folder in spec.fixtures.items():
        host = _host_path(folder, base)
        if not host.is_dir():
            reason = "is a file, not a folder" if host.is_file() else "folder not found"
            yield smap.problem(("fixtures", at), f"{reason}: {display_path(host)}")
    from runner.load.loader import is_workflow_file

    workflow = agent.is_file() and is_workflow_file(agent)
    seen: dict[str, int] = {}
    for index, case in enumerate(spec.cases):
        why = None if workflow else case.needs_message()
        if why is not None:  # an agent's run starts with a message; a workflow's by itself
            yield smap.problem(("cases", index), why)
        if case.name in seen:
            first = smap.value_loc(("cases", seen[case.name], "name")).line
            yield smap.problem(
                ("cases", index, "name"),
                f"another case has this name (line {first}); each case needs its own",
            )
        seen.setdefault(case.name, index)
        if case.model is not None:
            target = _replay_target(case.model, base)
            if target is not None and not target.is_file():
                yield smap.problem(
                    ("cases", index, "model"), f"cassette not found: {display_path(target)}"
                )


def _host_path(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _replay_target(model: str, base: Path) -> Path | None:
    provider, _, rest = model.partition(":")
    return _host_path(rest, base) if provider == "replay" and rest else None


def _replay_path(model: str, base: Path) -> str:
    target = _replay_target(model, base)
    return f"replay:{target}" if target is not None else model


def find_test_files(
    targets: Iterable[str | Path],
) -> Iterator[tuple[Path, Problem | None]]:
    """Each target file, and the `*.test.yaml` files under each target folder (recursively,
    skipping hidden folders, virtualenvs and `node_modules`); a problem for a target that does not
    exist or a folder without test files."""
    for target in targets:
        path = Path(target)
        if path.is_dir():
            found = sorted(_walk(path))
            if not found:
                yield (
                    path,
                    Problem(display_path(path), 0, 0, "", "no test files (*.test.yaml) here"),
                )
            for file in found:
                yield file, None
        elif path.exists():
            yield path, None
        else:
            yield path, Problem(display_path(path), 0, 0, "", "no such file or directory")


_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv"})


def _walk(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        for name in files:
            candidate = Path(root) / name
            if is_test_file_name(candidate):
                yield candidate
