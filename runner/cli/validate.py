"""`agentctl validate`: report every problem in agent and workflow files, located."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from runner.cli.options import var_options

if TYPE_CHECKING:
    from runner.check.validate import FileReport


@click.command(short_help="Check agent and workflow files and report every problem.")
@click.argument("targets", nargs=-1, required=True, type=click.Path())
@var_options
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON lines.")
def validate(
    targets: tuple[str, ...], vars_: tuple[str, ...], allow_unused_var: bool, as_json: bool
) -> int:
    """Check agent and workflow files: YAML syntax, the schema, ${ENV} variables, includes,
    subagent refs, prompt templates, skills, tool names in interrupt_on, and the replay
    cassettes they play.
    Prints `ok: FILE` for each valid file and one located line (`file:line:col: key.path:
    message`) for each problem. Exits 0 when all are valid, 2 if not. A warning (valid, but
    likely a mistake: a script tool that hands a `{placeholder}` to `sh -c`) is printed as
    `warning: file:line:col: ...` (with `"warning": true` under --json) and changes no exit code.

    A workflow file (one with `workflow:`) is checked as a whole too: jumps to steps that do
    not exist, steps that can never run, loops that do not go back, templates naming state
    fields or variables that are not declared, outputs that do not fit their state fields,
    parallel branches writing one field; and each of its agents as an agent file.

    A cassette (`*.cassette.yaml`, or a file that holds one) is checked against the agents that
    play it: the agent files in its folder that name it in `replay:`, and the one it is named
    after (`coder.cassette.yaml`, `coder.reject.cassette.yaml`: `coder.yaml`).

    A directory means the agent files, workflows and cassettes directly in it: `*.yaml` and
    `*.yml`, except test files (`*.test.yaml`, see `agentctl test`) and names starting with `_`
    or `.` (include fragments like `_base.yaml`); and the agent files of other tools (Claude
    Code and Copilot `.md` files with front matter, Codex `.toml` files, see docs/dialects.md),
    whose fields agentctl runs differently are warnings. A problem in a file that several of
    them include is printed once, with the files it was found through.
    """
    from runner.check.validate import (
        FileReport,
        LoadCache,
        check_file,
        find_specs,
        is_test_file_name,
    )
    from runner.cli import startup
    from runner.cli.options import parse_vars
    from runner.errors import Problem, display_path

    variables = parse_vars(vars_)
    failed = checked = 0

    # Each target's report (or, for a skipped file, the line saying why), in order.
    results: list[tuple[Path, FileReport] | str] = []

    def skipped(path: Path, reason: str) -> None:
        results.append(f"skipped: {display_path(path)} ({reason})")

    cache: LoadCache = {}
    for path, problem in find_specs(targets, on_skip=skipped, with_cassettes=True):
        report = (
            FileReport([problem])
            if problem
            else _check_test_file(path)
            if is_test_file_name(path)
            else check_file(
                path,
                vars=variables,
                allow_unused_vars=allow_unused_var or not variables,
                cache=cache,
            )
        )
        results.append((path, report))
        startup.started()  # the first file built the validators: the rest is the files' work
    # A problem in another file (an include, a ref'd agent) is printed once, with the files it
    # was found through.
    through: dict[Problem, list[str]] = {}
    for entry in results:
        if isinstance(entry, tuple):
            shown = display_path(entry[0])
            for p in entry[1].problems:
                if p.file and p.file != shown:
                    through.setdefault(p, []).append(shown)
    printed: set[Problem] = set()
    for entry in results:
        if isinstance(entry, str):
            if not as_json:
                click.echo(entry)
            continue
        path, report = entry
        problems = report.problems
        checked += 1
        for w in report.warnings:  # valid, but likely a mistake: said, not failed on
            if w in printed:
                continue
            printed.add(w)
            if as_json:
                fields = {"file": w.file, "line": w.line, "col": w.col, "path": w.path}
                click.echo(_json_line({**fields, "message": w.message, "warning": True}))
            else:
                click.echo(f"warning: {w}", err=True)
        if not problems:
            if not as_json:
                note = f" ({report.note})" if report.note else ""
                click.echo(f"ok: {display_path(path)}{note}")
            continue
        failed += 1
        for p in problems:
            if p in printed:
                continue
            printed.add(p)
            if len(found_through := through.get(p, [])) > 1:
                p = replace(p, message=f"{p.message} (found through {', '.join(found_through)})")
            if as_json:
                fields = {"file": p.file, "line": p.line, "col": p.col, "path": p.path}
                click.echo(_json_line({**fields, "message": p.message}))
            else:
                click.echo(str(p), err=True)
    if failed and not as_json and checked > 1:
        click.echo(f"{failed} of {checked} files have problems", err=True)
    return 2 if failed else 0


def _json_line(fields: dict[str, object]) -> str:
    """One problem of `--json` (`json` imported only for it)."""
    import json

    return json.dumps(fields)


def _check_test_file(path: Path) -> FileReport:
    """A test file named on the command line is checked as `agentctl test` reads it."""
    from runner.check.validate import FileReport
    from runner.testing.loader import test_file_problems

    return FileReport(test_file_problems(path), note="a test file")
