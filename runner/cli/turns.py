"""Driving a `Session` from the command line: cancellable turns, the choice of renderer, one-shot
runs and their exit codes (the decisions a turn is given or asks for: `runner.cli.decisions`).

A turn runs in a worker thread while the main thread renders its events, so Ctrl-C reaches the
person at once instead of after the step in flight. Cancelling stops the turn at its next event;
the step in flight (a model call, a tool) still finishes in the background, because LangGraph
waits for it, and its checkpoint stays consistent: the next message on the thread starts from the
last completed step, and `PatchToolCallsMiddleware` answers any tool call left without a result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import click

from runner.cli.decisions import answerer, unanswered
from runner.events import Action, Interrupt, RunEvent
from runner.run import Decision

if TYPE_CHECKING:
    from runner.cli.approvals import TerminalApprover
    from runner.run import RunOptions, Session
    from runner.run.attachments import Attachment


# --------------------------------------------------------------------------- cancellable turns

_DONE = object()


class TurnRunner:
    """Runs `Session.stream` turns in a worker thread, one at a time, so they can be cancelled."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._worker: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        """The last turn's worker still runs: after a cancel, the step in flight finishing."""
        return self._worker is not None and self._worker.is_alive()

    def wait(self) -> None:
        if self._worker is not None:
            self._worker.join()
            self._worker = None

    def stream(
        self,
        message: str | None = None,
        *,
        thread_id: str | None = None,
        decisions: Sequence[Decision] | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> Iterator[RunEvent]:
        """The turn's events; KeyboardInterrupt (or closing the iterator) cancels the turn."""
        self.wait()
        events: queue.Queue[Any] = queue.Queue()
        cancel = threading.Event()

        def work() -> None:
            stream = self.session.stream(
                message, thread_id=thread_id, decisions=decisions, attachments=attachments
            )
            try:
                for event in stream:
                    events.put(event)
                    if cancel.is_set():
                        break
            except BaseException as exc:
                events.put(exc)
            finally:
                try:
                    stream.close()
                except BaseException as exc:  # e.g. the reader left and the process is ending
                    events.put(exc)
                events.put(_DONE)

        self._worker = threading.Thread(target=work, name="agentctl-turn", daemon=True)
        self._worker.start()
        try:
            while (item := events.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            cancel.set()  # a no-op when the turn ended by itself


# --------------------------------------------------------------------------- views


class View(Protocol):
    """What shows a turn's events: JSON lines, plain text, or the terminal renderer."""

    def handle(self, event: RunEvent) -> None: ...

    def auto_approved(self, action: Action) -> None:
        """`--auto-approve` answered this action."""

    def pause(self) -> None:
        """A prompt is about to be shown: finish what is on screen."""


class JsonLines:
    """`--output jsonl`: every event as one JSON line, nothing else."""

    def handle(self, event: RunEvent) -> None:
        from runner.run.session import to_json_line

        click.echo(to_json_line(event))

    def auto_approved(self, action: Action) -> None:
        pass

    def pause(self) -> None:
        pass


def choose_view(*, output: str, quiet: bool, spec: str = "SPEC") -> View:
    """JSON lines when asked; the rich renderer when stdout is a terminal (and not --quiet);
    plain text otherwise, with no colour codes."""
    from runner.cli.render import PlainRenderer

    if output == "jsonl":
        return JsonLines()
    if quiet or not is_terminal(sys.stdout):
        return PlainRenderer(sys.stdout, sys.stderr, quiet=quiet, spec=spec)
    from runner.cli.terminal import TerminalRenderer

    return TerminalRenderer(stdout_console(), err_console=stderr_console(), spec=spec)


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def can_ask() -> bool:
    """Approvals can be asked: a person types on stdin and reads stderr."""
    return is_terminal(sys.stdin) and is_terminal(sys.stderr)


def stdout_console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def terminal_approver() -> TerminalApprover:
    from prompt_toolkit.output import create_output

    from runner.cli.approvals import TerminalApprover

    return TerminalApprover(stderr_console(), prompt_output=create_output(stdout=sys.stderr))


# --------------------------------------------------------------------------- one turn


def play_turn(
    turns: TurnRunner,
    view: View,
    *,
    message: str | None,
    thread_id: str | None,
    decisions: Sequence[Decision] | None = None,
    auto_approve: bool = False,
    approver: TerminalApprover | None = None,
    attachments: Sequence[Attachment] = (),
) -> RunEvent | None:
    """Run one turn to its end, answering approvals on the way (all approved with
    `auto_approve`, else asked with `approver`), and return its last event. `attachments` go
    with `message`."""
    answer: Callable[[Interrupt], list[Decision] | None] | None = None
    if auto_approve or approver is not None:
        answer = answerer(
            auto_approve=auto_approve,
            approver=approver,
            pause=view.pause,
            auto_approved=view.auto_approved,
        )
    if answer is not None and message is None and decisions is None and thread_id is not None:
        # Continuing a thread that already waits (its last run stopped, or was killed, after
        # asking): answer what it waits for, as the turn that asked would have.
        waiting = unanswered(turns.session, thread_id)
        if waiting is not None:
            decisions = answer(waiting)
    while True:
        last = None
        for event in turns.stream(
            message, thread_id=thread_id, decisions=decisions, attachments=attachments
        ):
            last = event
            if not isinstance(event, Interrupt) or answer is None or isinstance(view, JsonLines):
                view.handle(event)
        if answer is None or not isinstance(last, Interrupt):
            return last
        message, thread_id, attachments = None, last.thread_id, ()
        decisions = answer(last)
        if decisions is None:  # a question nobody here can answer: the run waits for it
            if not isinstance(view, JsonLines):
                view.handle(last)
            return last


# --------------------------------------------------------------------------- one-shot runs


def open_session(spec: Path, *, thread_id: str | None, options: RunOptions) -> Session:
    """The `Session` of `agentctl run` (one-shot or chat): on the thread database `options.db`,
    with the model and vars a resumed thread started with unless given, and the local context of
    `spec`."""
    from runner.agent.context import local_context_for
    from runner.cli import startup
    from runner.run import Session, resume_settings
    from runner.threads import open_home

    home = open_home(options.db)
    try:
        given = options.model
        assert given is None or isinstance(given, str), "the command line names its model"
        model, variables = resume_settings(home, thread_id, given, options.vars)
        return Session(
            spec,
            home=home,
            options=dataclasses.replace(
                options, model=model, vars=variables, local_context=local_context_for(spec)
            ),
        )
    except BaseException:
        home.close()
        raise
    finally:
        startup.started()  # the agent is built: the turns' garbage is collected as usual


def run_turns(
    spec: Path,
    *,
    message: str | None,
    thread_id: str | None,
    options: RunOptions,
    output: str,
    quiet: bool,
    answers: list[Decision] | None,
    auto_approve: bool,
    attachments: Sequence[Attachment] = (),
) -> int:
    """Run one turn (answering approvals in the terminal when a person is there to ask) and map
    the outcome to an exit code."""
    from runner.events import Error

    session = open_session(spec, thread_id=thread_id, options=options)
    if attachments:
        check_attachments(session, attachments)
    from runner.cli.render import shown_spec

    view = choose_view(output=output, quiet=quiet, spec=shown_spec(spec))
    # a person at the terminal is asked the approvals (unless --auto-approve) and the questions
    ask = output == "text" and can_ask()
    turns = TurnRunner(session)
    # answering approvals here: keep the thread between the turn that asks and the one that
    # answers (else the thread is let go before its last event, for whoever answers next)
    holding = session.holding_threads() if auto_approve or ask else contextlib.nullcontext()
    try:
        with holding:  # let go only after a cancelled step has finished
            try:
                last = play_turn(
                    turns,
                    view,
                    message=message,
                    thread_id=thread_id,
                    decisions=answers,
                    auto_approve=auto_approve,
                    approver=terminal_approver() if ask else None,
                    attachments=attachments,
                )
            except KeyboardInterrupt:
                view.pause()  # stop the spinners before saying anything
                finish_cancelled(turns, session)
                raise
        if isinstance(last, Error) and last.kind == "DecisionError":
            return 2  # answers the approval does not take: a usage error
        return 1 if isinstance(last, Error) or last is None else 0
    except BrokenPipeError:
        reader_left(session)
    finally:
        session.close()


def read_attachments(paths: Sequence[Path]) -> list[Attachment]:
    """`--attach` files read and classified; a missing or too large one is a usage error."""
    if not paths:
        return []  # (and the attachments module stays unimported: start-up)
    from runner.errors import RunError
    from runner.run.attachments import read_attachment

    try:
        return [read_attachment(path) for path in paths]
    except RunError as exc:
        raise _bad_attachment(exc) from None


def check_attachments(session: Session, attachments: Sequence[Attachment]) -> None:
    """An image for a model that takes none is a usage error, said before the run starts (the
    session is closed)."""
    from runner.errors import RunError
    from runner.run.attachments import check_images

    try:
        check_images(session.resolved, list(attachments))
    except RunError as exc:
        session.close()
        raise _bad_attachment(exc) from None


def _bad_attachment(exc: Exception) -> click.BadParameter:
    return click.BadParameter(str(exc).removeprefix("--attach "), param_hint="--attach")


READER_LEFT = 141
"""The exit status when the reader of the output left (`agentctl run ... | head`): 128 + SIGPIPE,
what a shell reports for a program that SIGPIPE ended, as `yes | head` ends."""


def reader_left(session: Session) -> NoReturn:
    """The output's reader is gone: end now, quietly, with `READER_LEFT`, every time.

    Ending like SIGPIPE would (at once, the step in flight cut short) but cleanly: the
    database lock is taken for good first, so every write under way has committed and no other
    starts (SQLite would roll back a half-written one anyway); the thread is as after a crash,
    resumable with `--thread ID`, its finished tool calls journaled. MCP servers are stopped.
    Then `os._exit`: an ordinary exit would tear the interpreter down under the turn's worker
    thread and LangGraph's executor while they still run, which crashed (SIGSEGV) or printed
    tracebacks and exited 1."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # whatever is still buffered goes nowhere
    with contextlib.suppress(Exception):  # ending anyway; a server that will not stop dies with us
        session.close_agent()
    session.home.freeze()
    try:
        sys.stderr.flush()
    finally:
        os._exit(READER_LEFT)


def finish_cancelled(
    turns: TurnRunner,
    session: Session,
    *,
    note: str = "Interrupted: finishing the current step first",
) -> None:
    """Before the process exits: let a cancelled turn's step in flight finish, so the exit is
    clean; a second Ctrl-C quits at once (the thread stays resumable, as after a crash)."""
    if not turns.busy:
        return
    click.echo(f"{note} (Ctrl-C again to quit at once).", err=True)
    try:
        turns.wait()
    except KeyboardInterrupt:
        try:
            session.close_agent()  # stop MCP servers; the database needs nothing
        finally:
            click.echo("Interrupted.", err=True)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
