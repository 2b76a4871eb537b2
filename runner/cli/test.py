"""`agentctl test`: run the cases of `*.test.yaml` files and report them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from runner.cli.options import otel_options

if TYPE_CHECKING:
    from runner.spec.budgets import PriceSpec


def _price(ctx: click.Context, param: click.Parameter, value: str | None) -> PriceSpec | None:
    """`--price 0.4,1.6`: USD per million input and output tokens."""
    if value is None:
        return None
    from runner.spec.budgets import PriceSpec

    try:
        tokens_in, tokens_out = (float(part) for part in value.split(","))
        return PriceSpec(input=tokens_in, output=tokens_out)
    except ValueError:
        raise click.BadParameter(
            f"expected INPUT,OUTPUT in USD per million tokens (e.g. 0.4,1.6), found {value!r}"
        ) from None


@click.command(short_help="Run agent test files (*.test.yaml), offline or live.")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("-k", "pattern", metavar="PATTERN", help="Only cases whose FILE::NAME has PATTERN.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run this many cases in parallel.",
)
@click.option("--model", metavar="MODEL", help="Run every case live on this model.")
@click.option(
    "--live",
    is_flag=True,
    help="Evaluate: run each case on the agent's own model (or --model), not its cassette, "
    "--repeat times, and report pass rates, tokens, cost and time.",
)
@click.option("--record", is_flag=True, help="With --model or --live: write each case's cassette.")
@click.option("--judge-model", metavar="MODEL", help="The model that grades `judge` checks.")
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run each case N times and report its pass rate.",
)
@click.option(
    "--price",
    metavar="IN,OUT",
    callback=_price,
    help="Live: USD per million input,output tokens of --model (else the agent's model.price).",
)
@click.option(
    "--judge-price",
    metavar="IN,OUT",
    callback=_price,
    help="Live: USD per million input,output tokens of the judge model (its cost is apart).",
)
@click.option("--junit", "junit", metavar="FILE", help="Also write a JUnit XML report.")
@click.option(
    "--output",
    type=click.Choice(["text", "jsonl"]),
    default="text",
    show_default=True,
    help="Human text, or one JSON object per case.",
)
@otel_options
def test(
    paths: tuple[str, ...],
    pattern: str | None,
    jobs: int,
    model: str | None,
    record: bool,
    judge_model: str | None,
    repeat: int,
    junit: str | None,
    output: str,
    live: bool = False,
    price: PriceSpec | None = None,
    judge_price: PriceSpec | None = None,
) -> int:
    """Run the cases of agent test files: PATHS are files or folders (searched recursively for
    `*.test.yaml`), default `.`. Each case runs on its own thread, with its own copy of the
    agent's folders and its own store; cases replay their cassettes unless --model runs them live.

    Exits 0 when every case passed (skipped ones allowed), 1 when a case failed, 2 when a test or
    agent file is bad. A `judge` check without a judge model is skipped, never passed.

    With --otel (or OTEL_EXPORTER_OTLP_ENDPOINT set) each turn of each case is sent as one
    OpenTelemetry trace.

    With --live each case runs --repeat times (-j at once) on the agent's own model or --model,
    never on its cassette, and passes when its pass rate reaches its `pass_rate:` (default 1.0);
    see docs/evals.md.
    """
    from runner.testing import report
    from runner.testing.suite import run_suite

    if record and not (model or live):
        raise click.UsageError(
            "--record needs --model or --live: it records a live model's replies"
        )
    started = time.monotonic()
    jsonl = output == "jsonl"
    if live:
        return _evaluate(
            paths or (".",),
            model=model,
            record=record,
            judge_model=judge_model,
            pattern=pattern,
            jobs=jobs,
            repeat=repeat,
            price=price,
            judge_price=judge_price,
            junit=junit,
            jsonl=jsonl,
        )
    for flag, given in (("--price", price), ("--judge-price", judge_price)):
        if given is not None:
            raise click.UsageError(f"{flag} needs --live")

    def show(result: report.CaseResult) -> None:
        click.echo(report.json_line(result) if jsonl else report.case_line(result))

    suite = run_suite(
        paths or (".",),
        model=model,
        record=record,
        judge_model=judge_model,
        pattern=pattern,
        jobs=jobs,
        repeat=repeat,
        on_result=show,
    )
    seconds = time.monotonic() - started
    if jsonl:
        for problem in suite.problems:
            click.echo(report.json_problem(problem))
        click.echo(report.summary_json(suite, seconds))
    else:
        for problem in suite.problems:
            click.echo(str(problem), err=True)
        broken = [r for r in suite.results if r.status in ("failed", "error")]
        for result in broken:
            click.echo("")
            click.echo("\n".join(report.details(result)))
        if pattern and not suite.results and not suite.problems:
            click.echo(f"no case matches -k {pattern!r}", err=True)
        click.echo("")
        click.echo(report.summary(suite, seconds))
    if junit:
        from runner.testing.junit import write_junit

        try:
            write_junit(suite, junit)
        except OSError as exc:
            click.echo(f"{junit}: cannot write the JUnit report ({exc.strerror})", err=True)
            return 2
    return suite.exit_code


def _evaluate(paths: tuple[str, ...], *, junit: str | None, jsonl: bool, **given: Any) -> int:
    """`--live`: repeated live runs of every case, with their figures."""
    from pathlib import Path

    from runner.testing import live_report
    from runner.testing.evals import CaseStats, run_evals
    from runner.testing.execution import RunOptions

    started = time.monotonic()
    versions_shown = 1

    def show(stats: CaseStats) -> None:
        if jsonl:
            click.echo(live_report.json_case(stats))
        else:
            click.echo("\n".join(live_report.case_lines(stats, label=versions_shown > 1)))

    options = RunOptions(
        workdir=Path("."),
        model=given["model"],
        record=given["record"],
        judge_model=given["judge_model"],
        live=True,
        price=given["price"],
        judge_price=given["judge_price"],
    )
    result = run_evals(
        paths,
        options=options,
        pattern=given["pattern"],
        jobs=given["jobs"],
        repeat=given["repeat"],
        judge_model=given["judge_model"],
        on_stats=show,
    )
    elapsed = time.monotonic() - started
    code = result.exit_code
    from runner.testing import report

    if jsonl:
        for problem in result.problems:
            click.echo(report.json_problem(problem))
        click.echo(live_report.summary_json(result, elapsed, exit_code=code))
    else:
        for problem in result.problems:
            click.echo(str(problem), err=True)
        for stats in result.current:
            if stats.status in ("failed", "error"):
                click.echo("")
                click.echo("\n".join(report.details(stats.as_result())))
        if given["pattern"] and not result.current and not result.problems:
            click.echo(f"no case matches -k {given['pattern']!r}", err=True)
        if result.workdir is not None:
            click.echo(f"failed runs' threads are kept under {result.workdir}")
        click.echo("")
        click.echo(live_report.summary(result, elapsed))
    if junit:
        from runner.testing.junit import write_junit

        try:
            write_junit(result.as_suite(), junit)
        except OSError as exc:
            click.echo(f"{junit}: cannot write the JUnit report ({exc.strerror})", err=True)
            return 2
    return code
