"""Option parsing shared by several commands."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click


def parse_vars(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`--var KEY=VALUE` pairs, each VALUE kept as the text typed (`CliText`): the loader
    converts it by the type of the input it sets (`inputs:`), else reads it as a YAML scalar
    (`3`, `true`, `text`)."""
    from runner.spec.inputs import CliText

    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.isidentifier():
            raise click.BadParameter(
                f"expected KEY=VALUE with KEY an identifier, found {pair!r}", param_hint="--var"
            )
        result[key] = CliText(raw)
    return result


def var_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--var KEY=VALUE` (many) and `--allow-unused-var`, for a command that loads agent files."""
    command = click.option(
        "--allow-unused-var",
        is_flag=True,
        help="Accept a --var that the agent's prompts and vars do not use.",
    )(command)
    return click.option(
        "--var", "vars_", multiple=True, metavar="KEY=VALUE", help="Override a template variable."
    )(command)


def otel_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--otel` and `--otel-content` for a command that runs agents: it runs inside `tracing`
    (put it right above the `def`; the command itself does not see the two flags)."""

    @functools.wraps(command)
    def traced(*args: Any, otel: bool, otel_content: bool, **kwargs: Any) -> Any:
        with tracing(otel, otel_content):
            return command(*args, **kwargs)

    traced = click.option(
        "--otel-content",
        is_flag=True,
        help="Put prompts, replies, tool arguments and results in the trace spans "
        "(secrets masked).",
    )(traced)
    return click.option(
        "--otel",
        is_flag=True,
        help="Send OpenTelemetry traces over OTLP/HTTP (on by itself when "
        "OTEL_EXPORTER_OTLP_ENDPOINT is set; needs agentctl[otel]).",
    )(traced)


@contextmanager
def tracing(otel: bool, content: bool) -> Iterator[None]:
    """Trace the runs inside when asked (`runner.run.tracing_wanted.requested`), and export the
    spans left before returning. An endpoint variable alone, without the `otel` extra installed,
    warns and runs untraced; `--otel` without it is an error."""
    from runner.run.tracing_wanted import requested

    if not requested(otel):
        if otel and not content:
            click.echo("warning: --otel: OTEL_SDK_DISABLED=true, so no traces", err=True)
        if content:
            raise click.UsageError(
                "--otel-content adds content to traces: add --otel (or set "
                "OTEL_EXPORTER_OTLP_ENDPOINT)"
                + ("; OTEL_SDK_DISABLED=true turns tracing off" if otel else "")
            )
        yield
        return
    from runner.errors import ResolutionError
    from runner.run import telemetry

    try:
        active = telemetry.enable(content=content)
    except ResolutionError as exc:
        if otel:
            raise
        click.echo(f"warning: no traces: {exc}", err=True)
        yield
        return
    with _one_export_warning():
        try:
            yield
        finally:
            if not active.shutdown(wait=EXPORT_WAIT):
                click.echo(
                    f"warning: OpenTelemetry: the last spans were not sent within "
                    f"{EXPORT_WAIT:g} s",
                    err=True,
                )


EXPORT_WAIT = 3.0
"""Seconds a command waits at its end for its last spans to be exported."""


@contextmanager
def _one_export_warning() -> Iterator[None]:
    """The SDK logs every failed export and every retry; a command shows the first one, as a
    warning line, and no more. The logger is put back afterwards, so each command (the tests
    run many in one process) shows its own first one, on its own stderr."""
    import logging

    logger = logging.getLogger("opentelemetry")
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("warning: OpenTelemetry: %(message)s"))
    shown: list[bool] = []

    def first_only(record: logging.LogRecord) -> bool:
        if shown:
            return False
        shown.append(True)
        return True

    handler.addFilter(first_only)
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class DatabaseParam(click.ParamType):
    """`--db`: a SQLite file (a `Path`) or a Postgres URL (`postgresql://...`, kept a string)."""

    name = "database"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, Path):
            return value
        text = str(value)
        if text.startswith(("postgresql://", "postgres://")):
            return text
        if "://" in text:
            self.fail(
                f"{text!r} is neither a file nor a postgresql:// URL (the thread database is a "
                "SQLite file or a Postgres database)",
                param,
                ctx,
            )
        return Path(text)


db_option = click.option(
    "--db",
    type=DatabaseParam(),
    metavar="PATH|URL",
    help="Thread database: a SQLite file (default $AGENTCTL_HOME/agentctl.db) or a Postgres "
    "database, postgresql://USER@HOST/DB.",
)
