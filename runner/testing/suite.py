"""Find test files, select cases, run them (side by side with `jobs`), and collect the results.

Exit codes: 0 every case passed (skipped ones allowed), 1 a case failed, 2 a test file or an
agent file is bad (or a case could not start).
"""

from __future__ import annotations

import fnmatch
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import Problem, SpecError
from runner.testing.execution import CaseResult, RunOptions, remove_folder, run_case
from runner.testing.judge import Judge
from runner.testing.loader import LoadedTestFile, find_test_files, load_test_file

__all__ = ["SuiteResult", "run_suite", "select"]


@dataclass
class SuiteResult:
    results: list[CaseResult] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    """Bad test files (and paths that hold none)."""
    workdir: Path | None = None
    """Where the failed cases' threads and files were kept (None when nothing was kept)."""

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def exit_code(self) -> int:
        if self.problems or self.count("error"):
            return 2
        return 1 if self.count("failed") else 0


def select(pattern: str | None, file: str, name: str) -> bool:
    """`-k`: a case runs when the pattern is in `file::name` (case-insensitive), or matches it as
    a glob."""
    if not pattern:
        return True
    ident = f"{file}::{name}"
    return pattern.lower() in ident.lower() or fnmatch.fnmatch(ident, pattern)


def load_all(paths: Iterable[str | Path]) -> tuple[list[LoadedTestFile], list[Problem]]:
    loaded: list[LoadedTestFile] = []
    problems: list[Problem] = []
    for path, problem in find_test_files(paths):
        if problem is not None:
            problems.append(problem)
            continue
        try:
            loaded.append(load_test_file(path))
        except SpecError as exc:
            problems.extend(exc.problems)
    return loaded, problems


def run_suite(
    paths: Iterable[str | Path],
    *,
    model: str | None = None,
    record: bool = False,
    judge_model: str | None = None,
    pattern: str | None = None,
    jobs: int = 1,
    repeat: int = 1,
    workdir: Path | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
) -> SuiteResult:
    """Run every selected case of the test files under `paths`. `on_result` sees each result
    as it is known (from worker threads when `jobs` > 1, one call at a time). The cases' folders
    go into a new folder under `workdir` (default: the system's temporary folder); the folders
    of failed cases are kept there, for `agentctl threads show`."""
    import threading

    loaded, problems = load_all(paths)
    suite = SuiteResult(problems=problems)
    chosen = [
        (file, index)
        for file in loaded
        for index, case in enumerate(file.spec.cases)
        if select(pattern, file.shown, case.name)
    ]
    work = [
        (number, file, index)
        for number, (file, index) in enumerate(item for item in chosen for _ in range(repeat))
    ]
    if not work:
        return suite
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="agentctl-test-", dir=workdir))
    options = RunOptions(workdir=workdir, model=model, record=record, judge_model=judge_model)
    judges = {id(f): Judge(model=judge_model, file_model=f.spec.judge_model) for f in loaded}
    lock = threading.Lock()
    kept = False

    def one(item: tuple[int, LoadedTestFile, int]) -> CaseResult:
        nonlocal kept
        number, file, index = item
        folder = workdir / f"{number:04d}"
        result = run_case(file, index, options, judge=judges[id(file)], folder=folder)
        if result.status in ("failed", "error"):
            kept = True
        else:
            remove_folder(folder)
            result.db = None
        if repeat == 1 and on_result is not None:
            with lock:
                on_result(result)
        return result

    if jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(one, work))
    else:
        results = [one(item) for item in work]
    suite.results = _merge_repeats(results, repeat) if repeat > 1 else results
    if repeat > 1 and on_result is not None:
        for result in suite.results:
            on_result(result)
    if kept:
        suite.workdir = workdir
    else:
        remove_folder(workdir)
    return suite


def _merge_repeats(results: list[CaseResult], repeat: int) -> list[CaseResult]:
    """One result per case from its `repeat` runs: the first failing run's details (else the
    first run's), with how many of them passed. A case passes only when every run passed."""
    merged: list[CaseResult] = []
    for start in range(0, len(results), repeat):
        runs = results[start : start + repeat]
        errors = [r for r in runs if r.status == "error"]
        failed = [r for r in runs if r.status == "failed"]
        shown = (errors or failed or runs)[0]
        shown.runs = len(runs)
        shown.passes = sum(r.passes for r in runs)
        shown.duration = sum(r.duration for r in runs)
        merged.append(shown)
    return merged
