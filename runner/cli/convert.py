"""`agentctl convert`: an agent file written in another tool's format, or in agentctl's."""

from __future__ import annotations

from pathlib import Path

import click

from runner.load.dialects import TARGETS


@click.command(short_help="Convert an agent file between agentctl and other tools' formats.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--to", "target", required=True, type=click.Choice(TARGETS), help="The format to write."
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write here instead of stdout."
)
def convert(file: str, target: str, output: str | None) -> int:
    """Write FILE in another format: `yaml` (an agentctl agent file, with a comment on each key
    that is not an exact copy of the original), `claude` (.claude/agents/*.md), `copilot`
    (*.agent.md), `codex` (.codex/agents/*.toml), `adk` (root_agent.yaml) or `python` (a
    deepagents `create_deep_agent(...)` script).

    FILE is an agentctl YAML file or an agent file of Claude Code, Copilot, Codex or ADK. What the
    target cannot express (approvals, budgets, backends, ...) is printed as `loss: ...` lines on
    stderr, and written as comments where the format has comments. Exits 2 when FILE does not
    load.
    """
    from runner.load.dialects.convert import convert as convert_file

    out = Path(output) if output else None
    result = convert_file(file, target, out=out)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    for loss in result.losses:
        click.echo(f"loss: {loss}", err=True)
    if out is None:
        click.echo(result.text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(result.text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
    return 0


def echo_dialect_warnings(path: str | Path) -> None:
    """What an agent file of another tool says that agentctl runs differently, as `warning:`
    lines on stderr (`run`, `inspect`; `validate` prints them with its report). Nothing for an
    agentctl file, or one that does not read (loading reports that)."""
    from runner.load.dialects.convert import translation_of

    try:
        translation = translation_of(Path(path))
    except (OSError, UnicodeDecodeError, ValueError):
        return
    if translation is None:
        return
    for warning in translation.warnings:
        click.echo(f"warning: {warning}", err=True)
