"""Driving a `Session` from the command line: decisions from flags, the turn loop, exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from runner.run import Decision


def decisions_from_flags(
    *, approve: bool, reject: bool, reason: str | None, edit_json: str | None
) -> list[Decision] | None:
    chosen = [
        flag
        for flag, on in (
            ("--approve", approve),
            ("--reject", reject),
            ("--edit", edit_json is not None),
        )
        if on
    ]
    if len(chosen) > 1:
        raise click.UsageError(f"choose one of {', '.join(chosen)}")
    if reason is not None and not reject:
        raise click.UsageError("--reason goes with --reject")
    if approve:
        return [Decision("approve")]
    if reject:
        return [Decision("reject", message=reason)]
    if edit_json is not None:
        try:
            args = json.loads(edit_json)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(
                f"not valid JSON: {exc.msg} at column {exc.colno}", param_hint="--edit"
            ) from None
        if not isinstance(args, dict):
            raise click.BadParameter(
                'expected a JSON object of arguments, like \'{"path": "/a.md"}\'',
                param_hint="--edit",
            )
        return [Decision("edit", args=args)]
    return None


def local_context(spec_path: Path) -> str:
    import datetime

    return (
        "## Local context\n\n"
        f"- Today is {datetime.date.today().isoformat()}.\n"
        f"- You are run by agentctl from the agent file {spec_path.name}."
    )


def run_turns(
    spec: Path,
    *,
    message: str | None,
    thread_id: str | None,
    variables: dict[str, Any],
    model: str | None,
    output: str,
    quiet: bool,
    record: Path | None,
    db: Path | None,
    answers: list[Decision] | None,
    auto_approve: bool,
) -> int:
    """Run until the turn ends (auto-approving when asked) and map the outcome to an exit code."""
    from runner.cli.render import PlainRenderer
    from runner.events import Error, Interrupt
    from runner.run import Session, to_json_line

    session = Session(
        spec, model=model, vars=variables, db=db, record=record, local_context=local_context(spec)
    )
    renderer = PlainRenderer(sys.stdout, sys.stderr, quiet=quiet) if output == "text" else None
    try:
        while True:
            last = None
            for event in session.stream(message, thread_id=thread_id, decisions=answers):
                last = event
                if renderer is None:
                    click.echo(to_json_line(event))
                elif not (auto_approve and isinstance(event, Interrupt)):
                    renderer.handle(event)
            if auto_approve and isinstance(last, Interrupt):
                message, thread_id = None, last.thread_id
                answers = [Decision("approve")] * len(last.actions)
                if renderer is not None:
                    for action in last.actions:
                        renderer.err.write(f"auto-approved {action.name}\n")
                continue
            return 1 if isinstance(last, Error) or last is None else 0
    finally:
        session.close()
