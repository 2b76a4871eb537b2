"""`agentctl run`: run an agent on a thread, one-shot, and report what it does."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from runner.cli.options import db_option, otel_options

if TYPE_CHECKING:
    from runner.run import RunOptions


@click.command(short_help="Run an agent: one message, or a chat in a terminal.")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("message", required=False)
@click.option(
    "--thread", "thread_id", metavar="ID", help="Continue this thread (its history is kept)."
)
@click.option(
    "--var",
    "vars_",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a template variable (repeatable).",
)
@click.option(
    "--allow-unused-var",
    is_flag=True,
    help="Accept a --var that the agent's prompts and vars do not use.",
)
@click.option(
    "--model",
    metavar="MODEL",
    help="Run with this model instead of the spec's (e.g. openai:gpt-4.1, replay:x.yaml).",
)
@click.option(
    "--output",
    type=click.Choice(["text", "jsonl"]),
    default="text",
    show_default=True,
    help="jsonl: one JSON event per line.",
)
@click.option(
    "--quiet", "-q", is_flag=True, help="Print only the final answer (approvals, errors: stderr)."
)
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Record the model's replies to a cassette.",
)
@db_option
@click.option("--approve", is_flag=True, help="Approve the tool calls the thread waits on.")
@click.option("--reject", is_flag=True, help="Reject the tool calls the thread waits on.")
@click.option("--reason", metavar="TEXT", help="With --reject: tell the agent why.")
@click.option(
    "--edit",
    "edit_json",
    metavar="JSON",
    help="Run the waiting tool call with these arguments instead.",
)
@click.option(
    "--decisions",
    "decisions_json",
    metavar="JSON",
    help="One answer per waiting call, in order: "
    '\'["approve", {"type": "edit", "args": {...}}, "reject"]\'.',
)
@click.option(
    "--answer",
    "answers",
    multiple=True,
    metavar="TEXT",
    help="Answer the question the thread waits on (the agent's `ask_user`); one of its choices "
    "when it offers some. Repeat for several questions, in order.",
)
@click.option(
    "--auto-approve", is_flag=True, help="Approve every tool call that asks for approval."
)
@click.option(
    "--keep-checkpoints",
    "keep_checkpoints",
    metavar="N|all",
    callback=lambda _ctx, _param, value: _keep(value),
    help="Checkpoints of the thread to keep after each turn (default: the database's setting, "
    "else 10; `all` for full time travel).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    is_flag=False,
    flag_value=float("inf"),
    default=None,
    metavar="[SECONDS]",
    help="When another process runs the thread, wait for it (at most SECONDS; without a "
    "number, as long as it takes) instead of failing.",
)
@click.option(
    "--attach",
    "attach",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Send FILE with the message (repeatable): an image as image content, text inlined, "
    "other files into the agent's backend under /attachments/.",
)
@click.option(
    "--batch",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="FILE",
    help='Run once per line of this JSON lines file: {"message": ..., "vars": {...}, "id": ...}.',
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="With --batch: run N lines at a time.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="With --batch: append results here (default: stdout); a rerun skips lines done.",
)
@otel_options
def run(
    spec: Path,
    message: str | None,
    thread_id: str | None,
    vars_: tuple[str, ...],
    allow_unused_var: bool,
    model: str | None,
    output: str,
    quiet: bool,
    record: Path | None,
    db: Path | str | None,
    approve: bool,
    reject: bool,
    reason: str | None,
    edit_json: str | None,
    decisions_json: str | None,
    answers: tuple[str, ...],
    auto_approve: bool,
    keep_checkpoints: int | Literal["all"] | None,
    wait: float | None,
    attach: tuple[Path, ...] = (),
    batch: Path | None = None,
    jobs: int = 1,
    out: Path | None = None,
) -> int:
    """Run the agent in SPEC on MESSAGE (`-` reads it from stdin) and show what it does.

    Without MESSAGE, in a terminal: an interactive session, on --thread ID when given (/help
    there lists its commands). Elsewhere, --thread ID without MESSAGE continues a run that was
    cut off.

    Every run is on a thread kept in the thread database: a new one unless --thread ID; its id
    is printed so you can continue it. A thread keeps the --model and --var it was started
    with: continuing it without them uses those; with others, a warning names both. In a
    terminal, approvals are asked as they come.
    Elsewhere a run that stops for approval exits 0 after printing what waits; answer with
    --approve, --reject [--reason TEXT] or --edit JSON on the same thread (--approve and
    --reject answer every waiting call; --decisions JSON answers several one by one). A run
    that stops at the agent's question (`ask_user`) is answered with --answer TEXT.

    One process runs a thread at a time: another one fails, naming the process that
    runs it, unless --wait. An approval is answered once: a second answer fails.

    --attach FILE sends files with MESSAGE: images (PNG, JPEG, GIF, WebP) as image content
    to a model that takes images, UTF-8 text files (up to 100 KB) inlined with their name,
    other files put into the agent's backend under /attachments/ (the message says where).

    --batch FILE runs the agent once per line of FILE (JSON lines: message, optional vars and
    id), each on a new thread, -j N at a time, writing one result per line (thread id, answer,
    usage, error) to --out FILE or stdout. A failed line does not stop the batch; a rerun with
    the same --out skips the lines already done. Approvals fail their line unless
    --auto-approve.

    Exit codes: 0 done (or waiting for approval), 1 the run failed (or the thread is busy,
    or the approval was already answered, or a batch line failed), 2 bad spec or usage, 130
    interrupted, 141 the reader of the output left (`| head`; the thread is kept and can be
    continued).

    With --otel (or OTEL_EXPORTER_OTLP_ENDPOINT set) each turn is sent as one OpenTelemetry
    trace: its model calls, tool calls and subagents as nested spans.

    A workflow file (one with `workflow:`) runs its steps on a new thread with the --var
    values as its inputs, no MESSAGE needed (one given is `vars.message`); a step that waits
    for a person stops the run like an approval, answered with the same flags on --thread ID,
    and --thread ID alone continues a run that was cut off at the step that was running.
    --model replay:FILE plays every agent's replies from FILE, by its key in the workflow.
    """
    from runner.cli.decisions import decisions_from_flags
    from runner.cli.options import parse_vars
    from runner.cli.turns import is_terminal, run_turns
    from runner.run import RunOptions

    options = RunOptions(
        model=model,
        vars=parse_vars(vars_),
        db=db,
        record=record,
        allow_unused_vars=allow_unused_var,
        keep_checkpoints=keep_checkpoints,
        wait=wait,
    )
    if attach and (batch is not None or message is None):
        raise click.UsageError(
            "--attach goes with a MESSAGE (in a chat, use /attach FILE before your message)"
        )
    if batch is not None:
        return _batch(
            spec,
            batch,
            message=message,
            thread_id=thread_id,
            jobs=jobs,
            out=out,
            options=options,
            auto_approve=auto_approve,
            quiet=quiet,
            others={
                "--record": record is not None,
                "--approve": approve,
                "--reject": reject,
                "--edit": edit_json is not None,
                "--decisions": decisions_json is not None,
                "--answer": bool(answers),
                "--output jsonl": output == "jsonl",
            },
        )
    if out is not None or jobs != 1:
        raise click.UsageError("--out and -j/--jobs go with --batch FILE")
    replies = decisions_from_flags(
        approve=approve,
        reject=reject,
        reason=reason,
        edit_json=edit_json,
        decisions_json=decisions_json,
        answers=answers,
    )
    if replies is not None and thread_id is None:
        raise click.UsageError(
            "--approve, --reject, --edit, --decisions and --answer answer a waiting thread: add "
            "--thread ID"
        )
    if message == "-":
        message = sys.stdin.read()
        if not message.strip():
            raise click.UsageError("MESSAGE is `-` but stdin was empty")
    if message is not None and replies is not None:
        raise click.UsageError("send a MESSAGE or answer approvals, not both in one run")
    from runner.load.loader import is_workflow_file

    workflow = is_workflow_file(spec)
    if not workflow and not quiet:
        from runner.cli.convert import echo_dialect_warnings

        echo_dialect_warnings(spec)
    interactive = (
        not workflow
        and message is None
        and replies is None
        and output == "text"
        and not quiet
        and is_terminal(sys.stdin)
        and is_terminal(sys.stdout)
    )
    if interactive:
        return _chat(spec, thread_id, options, auto_approve)
    if message is None and replies is None and thread_id is None and not workflow:
        raise click.UsageError(
            "give a MESSAGE (or `-` to read it from stdin), or --thread ID to continue a "
            "thread; in a terminal, no MESSAGE opens an interactive session (without --quiet "
            "and --output jsonl)"
        )
    from runner.cli.turns import read_attachments

    return run_turns(
        spec,
        attachments=read_attachments(attach),
        message=message,
        thread_id=thread_id,
        options=options,
        output=output,
        quiet=quiet,
        answers=replies,
        auto_approve=auto_approve,
    )


def _chat(spec: Path, thread_id: str | None, options: RunOptions, auto_approve: bool) -> int:
    from runner.cli.chat import chat
    from runner.cli.turns import open_session

    session = open_session(spec, thread_id=thread_id, options=options)
    try:
        return chat(session, spec=spec, thread_id=thread_id, auto_approve=auto_approve)
    finally:
        session.close()


def _batch(
    spec: Path,
    batch: Path,
    *,
    message: str | None,
    thread_id: str | None,
    jobs: int,
    out: Path | None,
    options: RunOptions,
    auto_approve: bool,
    quiet: bool,
    others: dict[str, bool],
) -> int:
    from runner.cli import startup
    from runner.cli.batch import run_batch_file

    startup.started()  # the lines' sessions are built as the batch runs
    if message is not None:
        raise click.UsageError("--batch FILE takes its messages from FILE: give no MESSAGE")
    if thread_id is not None:
        raise click.UsageError("--batch runs each line on a new thread: drop --thread")
    clashing = [flag for flag, given in others.items() if given]
    if clashing:
        raise click.UsageError(f"--batch does not go with {', '.join(clashing)}")
    return run_batch_file(
        spec, batch, jobs=jobs, out=out, options=options, auto_approve=auto_approve, quiet=quiet
    )


def _keep(value: str | None) -> int | Literal["all"] | None:
    """`--keep-checkpoints`: a number, `all`, or not given (None)."""
    if value is None:
        return None
    from runner.threads.retention import parse_keep

    try:
        keep = parse_keep(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--keep-checkpoints") from None
    return "all" if keep is None else keep
