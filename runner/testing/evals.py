"""Live evals: every selected case run N times on a real model, per version of the agent file.

`agentctl test --live` (and `--compare`) runs each case `repeat` times, side by side up to
`jobs`, each run isolated like an offline case (its own folder, database and thread). A case's
runs become one `CaseStats`: its pass rate against the case's (or file's) `pass_rate:`, which
expectations failed how often, and its tokens, cost and time. A case passes when its pass rate
reaches the threshold (default 1.0: every run).

Runs are ordered version by version, then case by case, then repeat by repeat, and with `jobs`
1 they run in that order, so a scripted model sees the same sequence every time.

Time is reported as the median and the 90th percentile of the runs (nearest rank: the smallest
run time that at least 90% of the runs do not exceed), tokens and cost as means per run.
"""

from __future__ import annotations

import hashlib
import math
import statistics
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner.errors import Problem
from runner.testing.execution import CaseResult, CaseStatus, RunOptions, remove_folder, run_case
from runner.testing.judge import Judge
from runner.testing.loader import LoadedTestFile
from runner.testing.suite import SuiteResult, load_all, select

__all__ = ["CURRENT", "CaseStats", "EvalResult", "Version", "percentile", "run_evals"]

CURRENT = "current"
"""The label of the agent file as it is on disk."""


@dataclass(frozen=True)
class Version:
    """A version of the agent file under test: its label and, per test file, the agent file
    it runs (None: the one the test file names)."""

    label: str
    agent_for: Callable[[LoadedTestFile], Path] | None = None


def percentile(values: list[float], share: float) -> float:
    """Nearest rank: the smallest value that `share` of the values do not exceed."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


@dataclass
class CaseStats:
    """The runs of one case on one version."""

    file: str
    name: str
    location: str
    version: str
    threshold: float
    runs: list[CaseResult] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"

    @property
    def passes(self) -> int:
        return sum(r.passes for r in self.runs)

    @property
    def rate(self) -> float:
        return self.passes / len(self.runs) if self.runs else 0.0

    @property
    def status(self) -> CaseStatus:
        if any(r.status == "error" for r in self.runs):
            return "error"
        if self.runs and all(r.status == "skipped" for r in self.runs):
            return "skipped"
        # A small tolerance: 0.8 written in YAML against 4/5 computed must pass.
        return "passed" if self.rate >= self.threshold - 1e-9 else "failed"

    @property
    def checked(self) -> Counter[str]:
        """Expectation -> the runs that checked it."""
        return Counter(name for r in self.runs for name in {c.expectation for c in r.checks})

    @property
    def failed(self) -> Counter[str]:
        """Expectation -> the runs in which it failed (a run that could not start: `error`)."""
        counts: Counter[str] = Counter()
        for run in self.runs:
            counts.update({c.expectation for c in run.failures})
            if run.status == "error":
                counts["error"] += 1
        return counts

    @property
    def tokens(self) -> float:
        return _mean(r.tokens for r in self.runs)

    @property
    def cost(self) -> float | None:
        """Mean cost per run in US dollars, None when no run has a known cost."""
        costs = [r.cost for r in self.runs if r.cost is not None]
        return _mean(costs) if costs else None

    @property
    def judge_cost(self) -> float | None:
        costs = [r.judge_cost for r in self.runs if r.judge_cost is not None]
        return sum(costs) if costs else None

    @property
    def judge_tokens(self) -> int:
        return sum(r.judge_tokens for r in self.runs)

    @property
    def time_median(self) -> float:
        return statistics.median(r.duration for r in self.runs) if self.runs else 0.0

    @property
    def time_p90(self) -> float:
        return percentile([r.duration for r in self.runs], 0.9)

    def as_result(self) -> CaseResult:
        """One `CaseResult` for the JUnit report: the first failing run's details, the status
        by the threshold."""
        failing = [r for r in self.runs if r.status in ("failed", "error")]
        shown = replace((failing or self.runs)[0])
        shown.status = self.status
        shown.runs, shown.passes = len(self.runs), self.passes
        shown.duration = sum(r.duration for r in self.runs)
        if shown.status == "failed":
            first = "; the first failing run:" if failing else ""
            shown.problems = [self.verdict + first, *shown.problems]
        return shown

    @property
    def verdict(self) -> str:
        return (
            f"{self.passes}/{len(self.runs)} runs passed ({self.rate:.0%}), "
            f"needs {self.threshold:.0%}"
        )


@dataclass
class EvalResult:
    """The live runs of every selected case, per version."""

    versions: list[str]
    stats: dict[str, list[CaseStats]] = field(default_factory=dict)
    """Version label -> one `CaseStats` per selected case, in the files' order."""
    problems: list[Problem] = field(default_factory=list)
    repeat: int = 1
    model: str | None = None
    """`--model`, else the agents' own models (as named in their files)."""
    agents: dict[str, dict[str, str]] = field(default_factory=dict)
    """Version label -> test file -> sha256 of the agent file that version runs."""
    workdir: Path | None = None

    @property
    def current(self) -> list[CaseStats]:
        return self.stats.get(CURRENT, [])

    def all_stats(self) -> list[CaseStats]:
        return [s for label in self.versions for s in self.stats.get(label, [])]

    def as_suite(self) -> SuiteResult:
        """The current version's cases as one result each (for JUnit and exit codes)."""
        return SuiteResult(results=[s.as_result() for s in self.current], problems=self.problems)

    @property
    def exit_code(self) -> int:
        return self.as_suite().exit_code


def file_hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _agent_model(loaded: LoadedTestFile, agent: Path) -> str | None:
    """The model the agent file names, for the report (None when it cannot be read)."""
    from runner.errors import RunnerError
    from runner.load.loader import is_workflow_file, load_spec

    if is_workflow_file(agent):
        return None
    try:
        spec = load_spec(agent, vars=loaded.spec.cases[0].vars)
    except RunnerError:
        return None
    return spec.model.id if spec.model is not None else None


def run_evals(
    paths: Iterable[str | Path],
    *,
    options: RunOptions,
    versions: list[Version] | None = None,
    pattern: str | None = None,
    jobs: int = 1,
    repeat: int = 1,
    workdir: Path | None = None,
    on_stats: Callable[[CaseStats], None] | None = None,
) -> EvalResult:
    """Run every selected case of the test files under `paths` `repeat` times on each version.
    `options.workdir` is replaced by a new folder under `workdir`; failed runs' folders are kept
    there (for `agentctl threads show`), the others removed."""
    versions = versions or [Version(CURRENT)]
    loaded, problems = load_all(paths)
    result = EvalResult(versions=[v.label for v in versions], problems=problems, repeat=repeat)
    chosen = [
        (file, index)
        for file in loaded
        for index, case in enumerate(file.spec.cases)
        if select(pattern, file.shown, case.name)
    ]
    if not chosen:
        return result
    runs_of: dict[tuple[str, int], LoadedTestFile] = {}
    models: set[str] = set()
    for version in versions:
        hashes = result.agents.setdefault(version.label, {})
        for file in loaded:
            agent = version.agent_for(file) if version.agent_for else file.agent_path
            runs_of[(version.label, id(file))] = replace(file, agent_path=agent)
            hashes[file.shown] = file_hash(agent)
            if options.model is None and (named := _agent_model(file, agent)):
                models.add(named)
    result.model = options.model or (", ".join(sorted(models)) or None)
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    folder_root = Path(tempfile.mkdtemp(prefix="agentctl-eval-", dir=workdir))
    options = replace(options, workdir=folder_root, live=True)
    judges = {
        id(f): Judge(model=options.judge_model, file_model=f.spec.judge_model) for f in loaded
    }
    for version in versions:
        result.stats[version.label] = [
            CaseStats(
                file=file.shown,
                name=file.spec.cases[index].name,
                location=f"{file.case_location(index).file}:{file.case_location(index).line}",
                version=version.label,
                threshold=_threshold(file, index),
            )
            for file, index in chosen
        ]
    work = [
        (version.label, slot, file, index)
        for version in versions
        for slot, (file, index) in enumerate(chosen)
        for _ in range(repeat)
    ]
    lock = threading.Lock()
    kept = False
    done: dict[tuple[str, int], list[tuple[int, CaseResult]]] = {}

    def one(number: int, item: tuple[str, int, LoadedTestFile, int]) -> None:
        nonlocal kept
        label, slot, file, index = item
        folder = folder_root / f"{number:04d}"
        run = run_case(
            runs_of[(label, id(file))], index, options, judge=judges[id(file)], folder=folder
        )
        if run.status in ("failed", "error"):
            kept = True
        else:
            remove_folder(folder)
            run.db = None
        with lock:
            runs = done.setdefault((label, slot), [])
            runs.append((number, run))
            if len(runs) == repeat:  # the case's last run: its figures are known
                stats = result.stats[label][slot]
                stats.runs = [r for _, r in sorted(runs, key=lambda pair: pair[0])]
                if on_stats is not None:
                    on_stats(stats)

    if jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, range(len(work)), work))
    else:
        for number, item in enumerate(work):
            one(number, item)
    if kept:
        result.workdir = folder_root
    else:
        remove_folder(folder_root)
    return result


def _threshold(file: LoadedTestFile, index: int) -> float:
    own = file.spec.cases[index].pass_rate
    if own is not None:
        return own
    return file.spec.pass_rate if file.spec.pass_rate is not None else 1.0


def stats_dict(stats: CaseStats) -> dict[str, Any]:
    """A case's figures as JSON (for `--output jsonl`, the baseline and the HTML report)."""
    checked, failed = stats.checked, stats.failed
    return {
        "file": stats.file,
        "case": stats.name,
        "version": stats.version,
        "status": stats.status,
        "location": stats.location,
        "runs": len(stats.runs),
        "passes": stats.passes,
        "pass_rate": round(stats.rate, 4),
        "threshold": stats.threshold,
        "expectations": {
            name: {"runs": checked.get(name, 0), "failed": failed.get(name, 0)}
            for name in sorted(set(checked) | set(failed))
        },
        "tokens": round(stats.tokens, 1),
        "cost": None if stats.cost is None else round(stats.cost, 8),
        "judge_tokens": stats.judge_tokens,
        "judge_cost": None if stats.judge_cost is None else round(stats.judge_cost, 8),
        "time_median": round(stats.time_median, 3),
        "time_p90": round(stats.time_p90, 3),
    }
