"""`agentctl init`: write a starter agent folder (see `runner.starter`)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click


@click.command(short_help="Start a new agent folder that runs offline at once.")
@click.argument(
    "directory",
    metavar="[DIR]",
    default=".",
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--name", metavar="NAME", help="The agent's name (default: from the folder's name).")
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
def init(directory: Path, name: str | None, force: bool) -> int:
    """Write a starter agent into DIR (default: the current folder): a commented agent.yaml,
    its replay cassette (so it runs offline, with no API key), an AGENTS.md memory file, a
    planning skill, and the JSON Schema editors use to complete the YAML. Existing files are
    left alone unless --force.
    """
    from runner.spec.base import NAME_PATTERN
    from runner.starter import plan_starter, write_starter

    if name is not None and not re.fullmatch(NAME_PATTERN, name):
        raise click.BadParameter(
            f"{name!r}: use lowercase letters, digits, '-' and '_', starting with a letter or "
            "digit",
            param_hint="--name",
        )
    starter = plan_starter(directory, name=name)
    existing = starter.existing()
    if existing and not force:
        click.echo(
            f"error: {', '.join(existing)} already exist{'s' if len(existing) == 1 else ''} in "
            f"{directory}; add --force to overwrite",
            err=True,
        )
        return 1
    for path in write_starter(starter):
        click.echo(f"wrote {path}")
    spec = shlex.quote(str(directory / "agent.yaml"))
    click.echo(
        "\nNext, offline with its recorded replies:\n"
        f'  agentctl run {spec} "Plan the launch of our new website"\n'
        f"  agentctl run {spec}      (in a terminal: a chat)\n"
        f"  agentctl test {shlex.quote(str(directory))}      (its tests, in agent.test.yaml)\n"
        f"Then set `model:` in {spec} to a real provider (see the comments there)."
    )
    return 0
