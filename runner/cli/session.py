"""Driving a `Session` from the command line: decisions from flags, cancellable turns, approvals,
the choice of renderer, exit codes.

A turn runs in a worker thread while the main thread renders its events, so Ctrl-C reaches the
person at once instead of after the step in flight. Cancelling stops the turn at its next event;
the step in flight (a model call, a tool) still finishes in the background, because LangGraph
waits for it, and its checkpoint stays consistent: the next message on the thread starts from the
last completed step, and `PatchToolCallsMiddleware` answers any tool call left without a result.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol

import click

from runner.events import Action, Interrupt, RunEvent
from runner.run import Decision

if TYPE_CHECKING:
    from runner.cli.approvals import TerminalApprover
    from runner.run import Session
    from runner.run.attachments import Attachment


def decisions_from_flags(
    *,
    approve: bool,
    reject: bool,
    reason: str | None,
    edit_json: str | None,
    decisions_json: str | None = None,
    answers: tuple[str, ...] = (),
) -> list[Decision] | None:
    chosen = [
        flag
        for flag, on in (
            ("--approve", approve),
            ("--reject", reject),
            ("--edit", edit_json is not None),
            ("--decisions", decisions_json is not None),
            ("--answer", bool(answers)),
        )
        if on
    ]
    if len(chosen) > 1:
        raise click.UsageError(f"choose one of {', '.join(chosen)}")
    if reason is not None and not reject:
        raise click.UsageError("--reason goes with --reject")
    if decisions_json is not None:
        return parse_decisions(decisions_json)
    if answers:
        return [Decision.answer(text) for text in answers]
    if approve:
        return [Decision("approve")]
    if reject:
        return [Decision("reject", message=reason)]
    if edit_json is not None:
        args = _json_option(edit_json, "--edit")
        if not isinstance(args, dict):
            raise click.BadParameter(
                'expected a JSON object of arguments, like \'{"path": "/a.md"}\'',
                param_hint="--edit",
            )
        return [Decision("edit", args=args)]
    return None


DECISIONS_SHAPE = (
    'a JSON list with one decision per waiting call, in the order they are listed: "approve", '
    '"reject", {"type": "reject", "message": "why"}, {"type": "edit", "args": {...}} or, for '
    'a question, {"type": "answer", "message": "the answer"}'
)


def parse_decisions(text: str) -> list[Decision]:
    """`--decisions`: one answer per waiting tool call, for threads that wait on several."""
    items = _json_option(text, "--decisions")
    if not isinstance(items, list) or not items:
        raise click.BadParameter(f"expected {DECISIONS_SHAPE}", param_hint="--decisions")
    decisions: list[Decision] = []
    for index, item in enumerate(items):
        entry = {"type": item} if item in ("approve", "reject") else item
        problem = _decision_problem(entry)
        if problem:
            raise click.BadParameter(
                f"decision {index + 1} ({json.dumps(item)}) {problem}", param_hint="--decisions"
            )
        decisions.append(
            Decision(entry["type"], args=entry.get("args"), message=entry.get("message"))
        )
    return decisions


def _decision_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict) or entry.get("type") not in (
        "approve",
        "edit",
        "reject",
        "answer",
    ):
        return "needs a type: approve, edit, reject (or answer, for a question)"
    if extra := set(entry) - {"type", "args", "message"}:
        return f"has unknown keys: {', '.join(sorted(extra))}"
    kind, args, message = entry["type"], entry.get("args"), entry.get("message")
    if kind == "edit" and not isinstance(args, dict):
        return "an edit needs args: a JSON object of the call's arguments"
    if kind != "edit" and args is not None:
        return "only an edit has args"
    if kind == "answer" and not isinstance(message, str):
        return "an answer needs a message: the answer's text"
    if message is not None and (kind not in ("reject", "answer") or not isinstance(message, str)):
        return "only a reject or an answer has a message (text)"
    return None


def _json_option(text: str, option: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"not valid JSON: {exc.msg} at column {exc.colno}", param_hint=option
        ) from None


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
        answer = _answerer(view, auto_approve=auto_approve, approver=approver)
    if answer is not None and message is None and decisions is None and thread_id is not None:
        # Continuing a thread that already waits (its last run stopped, or was killed, after
        # asking): answer what it waits for, as the turn that asked would have.
        waiting = _unanswered(turns.session, thread_id)
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


def _unanswered(session: Session, thread_id: str) -> Interrupt | None:
    """The approvals `thread_id` waits for that no recorded answer covers, as an `Interrupt`
    (an answer recorded before a crash is resumed by the turn itself)."""
    pending = session.pending(thread_id)
    if not pending:
        return None
    recorded = session.home.answers.recorded(thread_id, [iid for iid, _ in pending])
    if len(recorded) == len(pending):
        return None
    actions = [action for _, group in pending for action in group]
    return Interrupt(agent=session.name, thread_id=thread_id, actions=actions)


def _answerer(
    view: View, *, auto_approve: bool, approver: TerminalApprover | None
) -> Callable[[Interrupt], list[Decision] | None]:
    """Answers an `Interrupt` here: approvals approved (`auto_approve`) or asked, questions
    (`ask_user`) always asked; None when something must be asked and nobody can be."""

    def answer(interrupt: Interrupt) -> list[Decision] | None:
        from runner.spec.ask_user import ASK_USER_TOOL

        asks = [a for a in interrupt.actions if a.name == ASK_USER_TOOL or not auto_approve]
        if asks and approver is None:
            return None
        if asks:
            view.pause()
        decisions = []
        total = len(interrupt.actions)
        for number, action in enumerate(interrupt.actions, 1):
            if action.name == ASK_USER_TOOL or not auto_approve:
                assert approver is not None
                decisions.append(approver.decide_one(action, number, total))
            else:
                view.auto_approved(action)
                decisions.append(Decision("approve"))
        return decisions

    return answer


# --------------------------------------------------------------------------- one-shot runs


def open_session(
    spec: Path,
    *,
    thread_id: str | None,
    model: str | None,
    variables: dict[str, Any],
    record: Path | None,
    db: Path | str | None,
    allow_unused_vars: bool,
    keep_checkpoints: int | Literal["all"] | None,
    wait: float | None,
) -> Session:
    """The `Session` of `agentctl run` (one-shot or chat): on the thread database `db`, with the
    model and vars a resumed thread started with unless given, and the local context of `spec`."""
    from runner.agent.context import local_context_for
    from runner.run import Session, resume_settings
    from runner.threads import open_home

    home = open_home(db)
    try:
        model, variables = resume_settings(home, thread_id, model, variables)
        return Session(
            spec,
            model=model,
            vars=variables,
            home=home,
            record=record,
            local_context=local_context_for(spec),
            allow_unused_vars=allow_unused_vars,
            keep_checkpoints=keep_checkpoints,
            wait=wait,
        )
    except BaseException:
        home.close()
        raise


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
    db: Path | str | None,
    answers: list[Decision] | None,
    auto_approve: bool,
    allow_unused_vars: bool = False,
    keep_checkpoints: int | Literal["all"] | None = None,
    wait: float | None = None,
    attachments: Sequence[Attachment] = (),
) -> int:
    """Run one turn (answering approvals in the terminal when a person is there to ask) and map
    the outcome to an exit code."""
    from runner.events import Error

    session = open_session(
        spec,
        thread_id=thread_id,
        model=model,
        variables=variables,
        record=record,
        db=db,
        allow_unused_vars=allow_unused_vars,
        keep_checkpoints=keep_checkpoints,
        wait=wait,
    )
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
        session.resolved.close()
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
            session.resolved.close()  # stop MCP servers; the database needs nothing
        finally:
            click.echo("Interrupted.", err=True)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
