"""`agentctl test --live` (and `--compare`, `--baseline`, `--report`): repeated live runs of the
cases, their figures, the regressions against a baseline and what changed between two versions.

The work is `runner.testing.evals`, `.baseline`, `.compare` and `.html_report`; this module only
puts the command line's choices together and prints.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import click

from runner.spec.budgets import PriceSpec
from runner.testing.baseline import Limits, Regression
from runner.testing.compare import CaseComparison
from runner.testing.evals import CURRENT, CaseStats, EvalResult
from runner.testing.suite import SuiteResult

__all__ = ["EvalRequest", "evaluate", "write_junit_report"]


@dataclass(frozen=True)
class EvalRequest:
    """What `agentctl test` was asked for, in live mode."""

    paths: tuple[str, ...]
    model: str | None = None
    record: bool = False
    judge_model: str | None = None
    pattern: str | None = None
    jobs: int = 1
    repeat: int = 1
    price: PriceSpec | None = None
    judge_price: PriceSpec | None = None
    junit: str | None = None
    jsonl: bool = False
    save_baseline: str | None = None
    baseline: str | None = None
    limits: Limits = field(default_factory=Limits)
    compare: str | None = None
    report: str | None = None


@dataclass
class Outcome:
    result: EvalResult
    elapsed: float
    regressions: list[Regression] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    comparisons: list[CaseComparison] = field(default_factory=list)
    code: int = 0
    report_written: bool = False


def evaluate(request: EvalRequest) -> int:
    """Run, compare, write the files asked for, print; the exit code."""
    from runner.testing.baseline import compare_baseline, load_baseline

    before = load_baseline(request.baseline) if request.baseline else None
    started = time.monotonic()
    result, other = _run(request)
    outcome = Outcome(result, elapsed=time.monotonic() - started, code=result.exit_code)
    if before is not None:
        outcome.regressions, outcome.notes = compare_baseline(before, result, request.limits)
    if other is not None:
        from runner.testing.compare import compare_versions

        outcome.comparisons = compare_versions(result, other, CURRENT)
    if outcome.regressions and outcome.code == 0:
        outcome.code = 1
    if not _write_files(request, outcome):
        outcome.code = 2
    if request.jsonl:
        _print_jsonl(outcome)
    else:
        _print_text(request, outcome)
    return outcome.code


def _run(request: EvalRequest) -> tuple[EvalResult, str | None]:
    """The live runs (of both versions with --compare); the other version's label."""
    from runner.testing import live_report
    from runner.testing.evals import Version, run_evals
    from runner.testing.execution import RunOptions

    versions = [Version(CURRENT)]
    other = None
    if request.compare is not None:
        from runner.testing.compare import OtherVersion

        other = OtherVersion(request.compare)
        versions.insert(0, other.version())

    def show(stats: CaseStats) -> None:
        if request.jsonl:
            click.echo(live_report.json_case(stats))
        else:
            click.echo("\n".join(live_report.case_lines(stats, label=other is not None)))

    options = RunOptions(
        workdir=Path("."),
        model=request.model,
        record=request.record,
        judge_model=request.judge_model,
        live=True,
        price=request.price,
        judge_price=request.judge_price,
    )
    try:
        result = run_evals(
            request.paths,
            options=options,
            versions=versions,
            pattern=request.pattern,
            jobs=request.jobs,
            repeat=request.repeat,
            on_stats=show,
        )
    finally:
        if other is not None:
            other.close()
    return result, other.ref if other is not None else None


def _write_files(request: EvalRequest, outcome: Outcome) -> bool:
    from runner.testing.baseline import save_baseline

    written = True
    if request.save_baseline:
        try:
            save_baseline(outcome.result, request.save_baseline)
        except OSError as exc:
            click.echo(
                f"{request.save_baseline}: cannot write the baseline ({exc.strerror})", err=True
            )
            written = False
    if request.report:
        from runner.testing.html_report import write_html_report

        try:
            write_html_report(
                request.report,
                outcome.result,
                regressions=outcome.regressions,
                comparisons=outcome.comparisons,
                exit_code=outcome.code,
                baseline=request.baseline,
            )
        except OSError as exc:
            click.echo(f"{request.report}: cannot write the report ({exc.strerror})", err=True)
            written = False
        else:
            outcome.report_written = True
    regressed: dict[str, list[str]] = {}
    for regression in outcome.regressions:
        regressed.setdefault(regression.id, []).append(regression.message)
    suite = outcome.result.as_suite()
    if request.junit and not write_junit_report(suite, request.junit, regressed):
        written = False
    return written


def _print_jsonl(outcome: Outcome) -> None:
    from runner.testing import live_report, report

    for problem in outcome.result.problems:
        click.echo(report.json_problem(problem))
    for comparison in outcome.comparisons:
        click.echo(live_report.json_comparison(comparison))
    for regression in outcome.regressions:
        click.echo(json.dumps(regression.as_dict(), ensure_ascii=False))
    for note in outcome.notes:
        click.echo(json.dumps({"type": "note", "message": note}, ensure_ascii=False))
    click.echo(
        live_report.summary_json(
            outcome.result,
            outcome.elapsed,
            exit_code=outcome.code,
            regressions=len(outcome.regressions),
        )
    )


def _print_text(request: EvalRequest, outcome: Outcome) -> None:
    from runner.testing import live_report, report

    result = outcome.result
    for problem in result.problems:
        click.echo(str(problem), err=True)
    for stats in result.current:
        if stats.status in ("failed", "error"):
            click.echo("")
            click.echo("\n".join(report.details(stats.as_result())))
    if request.pattern and not result.current and not result.problems:
        click.echo(f"no case matches -k {request.pattern!r}", err=True)
    for comparison in outcome.comparisons:
        click.echo("")
        click.echo("\n".join(live_report.comparison_lines(comparison)))
    if request.baseline is not None:
        click.echo("")
        click.echo(f"against the baseline {request.baseline}:")
        for regression in outcome.regressions:
            click.echo(f"REGRESSION {regression.id}: {regression.message}")
        for note in outcome.notes:
            click.echo(f"note: {note}")
        if not outcome.regressions:
            click.echo("no regressions")
    if result.workdir is not None:
        click.echo(f"\nfailed runs' threads are kept under {result.workdir}")
    if outcome.report_written:
        click.echo(f"report: {request.report}")
    click.echo("")
    click.echo(live_report.summary(result, outcome.elapsed, regressions=len(outcome.regressions)))


def write_junit_report(
    suite: SuiteResult, path: str, regressions: dict[str, list[str]] | None = None
) -> bool:
    """Write the JUnit XML (`regressions`: per case id, its regressions against a baseline);
    False (and the reason on stderr) when it cannot be written."""
    from runner.testing.junit import write_junit

    try:
        write_junit(suite, path, regressions)
    except OSError as exc:
        click.echo(f"{path}: cannot write the JUnit report ({exc.strerror})", err=True)
        return False
    return True
