"""`agentctl validate`: report every problem in agent files, located."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command(short_help="Check agent files and report every problem.")
@click.argument("targets", nargs=-1, required=True, type=click.Path())
@click.option(
    "--var", "vars_", multiple=True, metavar="KEY=VALUE", help="Override a template variable."
)
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON lines.")
def validate(targets: tuple[str, ...], vars_: tuple[str, ...], as_json: bool) -> int:
    """Check agent files: YAML syntax, the schema, ${ENV} variables, includes, subagent refs,
    prompt templates and skills. Prints `ok: FILE` for each valid file and one located line
    (`file:line:col: key.path: message`) for each problem. Exits 0 when all are valid, 2 if not.

    A directory means the agent files directly in it: `*.yaml` and `*.yml`, except cassettes
    (`*.cassette.yaml`) and names starting with `_` or `.` (include fragments like `_base.yaml`).
    """
    from runner.cli.options import parse_vars
    from runner.loader import display_path
    from runner.validate import find_specs, validate_file

    variables = parse_vars(vars_)
    failed = checked = 0

    def skipped(path: Path, reason: str) -> None:
        if not as_json:
            click.echo(f"skipped: {display_path(path)} ({reason})")

    for path, problem in find_specs(targets, on_skip=skipped):
        problems = [problem] if problem else validate_file(path, vars=variables)
        checked += 1
        if problems:
            failed += 1
            for p in problems:
                if as_json:
                    click.echo(
                        json.dumps(
                            {
                                "file": p.file,
                                "line": p.line,
                                "col": p.col,
                                "path": p.path,
                                "message": p.message,
                            }
                        )
                    )
                else:
                    click.echo(str(p), err=True)
        elif not as_json:
            click.echo(f"ok: {display_path(path)}")
    if failed and not as_json and checked > 1:
        click.echo(f"{failed} of {checked} files have problems", err=True)
    return 2 if failed else 0
