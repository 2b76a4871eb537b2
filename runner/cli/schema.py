"""`agentctl schema`: the JSON Schema of agent files (or cassettes), generated from the models."""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_PATH = Path("schemas/agent.schema.json")
DEFAULT_CASSETTE_PATH = Path("schemas/cassette.schema.json")


@click.command(short_help="Print, write or check the agent (or cassette) JSON Schema.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the schema to this file instead of printing it.",
)
@click.option(
    "--check",
    is_flag=True,
    help=f"Exit 1 if the file (-o, default {DEFAULT_PATH}) differs from the models.",
)
@click.option(
    "--cassette",
    is_flag=True,
    help=f"The schema of replay cassettes instead (default file {DEFAULT_CASSETTE_PATH}).",
)
def schema(output: Path | None, check: bool, cassette: bool) -> int:
    """The JSON Schema of agent files, generated from agentctl's spec models (with --cassette,
    of replay cassettes).

    Point your editor at it with a first line of
    `# yaml-language-server: $schema=../schemas/agent.schema.json` (or `cassette.schema.json`)
    for completion and checks.
    """
    from runner.spec import json_schema_text

    text = json_schema_text("cassette" if cassette else "agent")
    if check:
        target = output or (DEFAULT_CASSETTE_PATH if cassette else DEFAULT_PATH)
        try:
            current = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            click.echo(f"{target}: missing; run `agentctl schema -o {target}`", err=True)
            return 1
        except (OSError, UnicodeDecodeError) as exc:
            click.echo(f"{target}: cannot read it ({_reason(exc)})", err=True)
            return 2
        if current != text:
            click.echo(f"{target}: out of date; run `agentctl schema -o {target}`", err=True)
            return 1
        click.echo(f"ok: {target} is up to date")
        return 0
    if output is None:
        click.echo(text, nl=False)
        return 0
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        click.echo(f"{output}: cannot write the schema there ({_reason(exc)})", err=True)
        return 2
    click.echo(f"wrote {output}")
    return 0


def _reason(exc: Exception) -> str:
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return "a folder on its path is a file"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return str(exc)
