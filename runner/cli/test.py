"""`agentctl test`: run the cases of `*.test.yaml` files and report them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

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
    help="Run this many cases (or runs of one case, with --repeat) in parallel.",
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
@click.option(
    "--save-baseline",
    metavar="FILE",
    help="Live: write the results (per case and expectation) to FILE, as JSON.",
)
@click.option(
    "--baseline",
    metavar="FILE",
    help="Live: compare with a saved baseline; a regression fails the run (exit 1).",
)
@click.option(
    "--max-cost-increase",
    type=click.FloatRange(min=0),
    default=0.2,
    show_default=True,
    help="With --baseline: the share the mean cost per run may grow.",
)
@click.option(
    "--max-token-increase",
    type=click.FloatRange(min=0),
    default=0.2,
    show_default=True,
    help="With --baseline: the share the mean tokens per run may grow.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="With --baseline: the significance level of the pass-rate test (one-sided Fisher).",
)
@click.option(
    "--compare",
    metavar="REF",
    help="Also run the other version of the agent file (a git ref, or a path) and show per "
    "case what changed: pass rates, tool calls, answer, cost, tokens, time (implies --live).",
)
@click.option(
    "--report",
    metavar="FILE.html",
    help="Live: also write a self-contained HTML report (tables and charts).",
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
    save_baseline: str | None = None,
    baseline: str | None = None,
    max_cost_increase: float = 0.2,
    max_token_increase: float = 0.2,
    alpha: float = 0.05,
    compare: str | None = None,
    report: str | None = None,
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
    if record and not (model or live or compare):
        raise click.UsageError(
            "--record needs --model or --live: it records a live model's replies"
        )
    if record and (compare is not None or (live and repeat > 1)):
        raise click.UsageError(
            "--record writes one cassette per case: run one version once (no --repeat, "
            "no --compare)"
        )
    if live or compare is not None:
        from runner.cli.evals import EvalRequest, evaluate
        from runner.testing.baseline import Limits

        request = EvalRequest(
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
            jsonl=output == "jsonl",
            save_baseline=save_baseline,
            baseline=baseline,
            limits=Limits(alpha, max_cost_increase, max_token_increase),
            compare=compare,
            report=report,
        )
        return evaluate(request)
    live_only = (
        ("--price", price),
        ("--judge-price", judge_price),
        ("--save-baseline", save_baseline),
        ("--baseline", baseline),
        ("--report", report),
    )
    for flag, given in live_only:
        if given is not None:
            raise click.UsageError(f"{flag} needs --live")
    from runner.testing import report as text
    from runner.testing.suite import run_suite

    started = time.monotonic()
    jsonl = output == "jsonl"

    def show(result: text.CaseResult) -> None:
        click.echo(text.json_line(result) if jsonl else text.case_line(result))

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
            click.echo(text.json_problem(problem))
        click.echo(text.summary_json(suite, seconds))
    else:
        for problem in suite.problems:
            click.echo(str(problem), err=True)
        broken = [r for r in suite.results if r.status in ("failed", "error")]
        for result in broken:
            click.echo("")
            click.echo("\n".join(text.details(result)))
        if pattern and not suite.results and not suite.problems:
            click.echo(f"no case matches -k {pattern!r}", err=True)
        click.echo("")
        click.echo(text.summary(suite, seconds))
    from runner.cli.evals import write_junit_report

    if junit and not write_junit_report(suite, junit):
        return 2
    return suite.exit_code
