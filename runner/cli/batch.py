"""`agentctl run SPEC --batch FILE`: drive `runner.run.batch` and show its progress.

Results go to `--out` (resumable) or, without it, to stdout as JSON lines. Progress goes to
stderr: a bar on a terminal, one plain line per finished input elsewhere (logs, CI).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from runner.run import RunOptions, Session


def run_batch_file(
    spec: Path,
    batch: Path,
    *,
    jobs: int,
    out: Path | None,
    options: RunOptions,
    auto_approve: bool,
    quiet: bool,
) -> int:
    """Run every line of `batch`; exit code 0 when every line has a successful result, else 1."""
    from runner.agent.context import local_context_for
    from runner.cli.render import shown_spec
    from runner.cli.turns import is_terminal
    from runner.run import Home, Session
    from runner.run.batch import ResultsFile, iter_status, read_batch, run_batch
    from runner.threads import open_home

    lines = read_batch(batch)
    results = ResultsFile(out) if out is not None else None
    home: Home | None = None
    try:
        skip = results.done(lines) if results is not None else set()
        if results is not None:
            results.keep_only(lines, skip)
        home = open_home(options.db)
        shared_home = home

        def make_session(line_vars: dict[str, Any]) -> Session:
            # a batch records no cassette and never waits for a thread: each line has its own
            return Session(
                spec,
                home=shared_home,
                options=dataclasses.replace(
                    options,
                    vars=line_vars,
                    record=None,
                    wait=None,
                    local_context=local_context_for(spec),
                ),
            )

        todo = len(lines) - len(skip)
        progress = _Progress(todo, live=not quiet and is_terminal(sys.stderr), quiet=quiet)
        if skip and not quiet:
            shown = results.shown if results is not None else ""
            click.echo(f"skipping {len(skip)} lines already done in {shown}", err=True)
        emit: Callable[[dict[str, Any]], None]
        if results is not None:
            writer = results

            def emit(record: dict[str, Any]) -> None:
                writer.append(record)
                progress.finished(record)

        else:

            def emit(record: dict[str, Any]) -> None:
                from runner.run.batch import result_line

                sys.stdout.write(result_line(record))
                sys.stdout.flush()
                progress.finished(record)

        with progress:
            summary = run_batch(
                lines,
                make_session=make_session,
                base_vars=dict(options.vars),
                jobs=jobs,
                emit=emit,
                skip=skip,
                auto_approve=auto_approve,
                spec_shown=shown_spec(spec),
            )
    finally:
        if results is not None:
            results.close()
        if home is not None:
            home.close()
    where = f"; results in {results.shown}" if results is not None else ""
    click.echo(f"batch: {', '.join(iter_status(summary))}{where}", err=True)
    return 1 if summary.failed else 0


class _Progress:
    """A rich progress bar on a terminal; plain lines otherwise; nothing but errors with -q."""

    def __init__(self, total: int, *, live: bool, quiet: bool) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.quiet = quiet
        self.bar: Any = None
        self.task: Any = None
        if live and total:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(
                TextColumn("batch"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self.task = self.bar.add_task("batch", total=total, failed="")

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def finished(self, record: dict[str, Any]) -> None:
        self.done += 1
        label = f"line {record['line']}" + (
            f" (id {record['id']})" if record.get("id") is not None else ""
        )
        failed = record["status"] != "ok"
        self.failed += failed
        if self.bar is not None:
            self.bar.update(
                self.task, advance=1, failed=f"{self.failed} failed" if self.failed else ""
            )
            if failed:
                self.bar.console.print(f"{label}: error: {record['error']}", markup=False)
            return
        if failed:
            click.echo(f"[{self.done}/{self.total}] {label}: error: {record['error']}", err=True)
        elif not self.quiet:
            click.echo(
                f"[{self.done}/{self.total}] {label}: ok (thread {record['thread_id']})", err=True
            )
