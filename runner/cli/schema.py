"""`agentctl schema`: the JSON Schema of agent files (or cassettes, or test files), generated from
the models."""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_PATH = Path("schemas/agent.schema.json")
DEFAULT_CASSETTE_PATH = Path("schemas/cassette.schema.json")
DEFAULT_TEST_PATH = Path("schemas/test.schema.json")


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
@click.option(
    "--test",
    "test_files",
    is_flag=True,
    help=f"The schema of test files, *.test.yaml (default file {DEFAULT_TEST_PATH}).",
)
def schema(output: Path | None, check: bool, cassette: bool, test_files: bool) -> int:
    """The JSON Schema of agent files, generated from agentctl's spec models (with --cassette,
    of replay cassettes; with --test, of `agentctl test` files). The agent schema takes
    workflow files too (a file with `workflow:` is checked as a workflow).

    Point your editor at it with a first line of
    `# yaml-language-server: $schema=../schemas/agent.schema.json` (or `cassette.schema.json`)
    for completion and checks.
    """
    if cassette and test_files:
        raise click.UsageError("give --cassette or --test, not both")
    if test_files:
        from runner.testing import test_json_schema_text

        text = test_json_schema_text()
        default = DEFAULT_TEST_PATH
    else:
        from runner.spec import json_schema_text

        text = json_schema_text("cassette" if cassette else "agent")
        default = DEFAULT_CASSETTE_PATH if cassette else DEFAULT_PATH
    again = "agentctl schema" + (" --test" if test_files else " --cassette" if cassette else "")
    if check:
        target = output or default
        try:
            current = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            click.echo(f"{target}: missing; run `{again} -o {target}`", err=True)
            return 1
        except (OSError, UnicodeDecodeError) as exc:
            click.echo(f"{target}: cannot read it ({_reason(exc)})", err=True)
            return 2
        if current != text:
            click.echo(f"{target}: out of date; run `{again} -o {target}`", err=True)
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
