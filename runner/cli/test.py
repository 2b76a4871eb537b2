"""`agentctl test`: run the cases of `*.test.yaml` files and report them."""

from __future__ import annotations

import time

import click

from runner.cli.options import otel_options


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
@click.option("--record", is_flag=True, help="With --model: write each case's cassette.")
@click.option("--judge-model", metavar="MODEL", help="The model that grades `judge` checks.")
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run each case N times and report its pass rate.",
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
) -> int:
    """Run the cases of agent test files: PATHS are files or folders (searched recursively for
    `*.test.yaml`), default `.`. Each case runs on its own thread, with its own copy of the
    agent's folders and its own store; cases replay their cassettes unless --model runs them live.

    Exits 0 when every case passed (skipped ones allowed), 1 when a case failed, 2 when a test or
    agent file is bad. A `judge` check without a judge model is skipped, never passed.

    With --otel (or OTEL_EXPORTER_OTLP_ENDPOINT set) each turn of each case is sent as one
    OpenTelemetry trace.
    """
    from runner.testing import report
    from runner.testing.suite import run_suite

    if record and not model:
        raise click.UsageError("--record needs --model: it records a live model's replies")
    started = time.monotonic()
    jsonl = output == "jsonl"

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
