"""Decisions on what a thread waits for: approvals and answers taken from `agentctl run`'s flags
(`--approve`, `--reject`, `--edit`, `--decisions`, `--answer`) or asked as the turn goes
(`--auto-approve`, a person at the terminal)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from runner.events import Action, Interrupt
from runner.run import Decision

if TYPE_CHECKING:
    from runner.cli.approvals import TerminalApprover
    from runner.run import Session


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


def unanswered(session: Session, thread_id: str) -> Interrupt | None:
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


def answerer(
    *,
    auto_approve: bool,
    approver: TerminalApprover | None,
    pause: Callable[[], None],
    auto_approved: Callable[[Action], None],
) -> Callable[[Interrupt], list[Decision] | None]:
    """Answers an `Interrupt` here: approvals approved (`auto_approve`) or asked, questions
    (`ask_user`) always asked; None when something must be asked and nobody can be. `pause` is
    called before anything is asked, `auto_approved` with each action `auto_approve` approves."""

    def answer(interrupt: Interrupt) -> list[Decision] | None:
        from runner.events import ASK_USER_TOOL

        asks = [a for a in interrupt.actions if a.name == ASK_USER_TOOL or not auto_approve]
        if asks and approver is None:
            return None
        if asks:
            pause()
        decisions = []
        total = len(interrupt.actions)
        for number, action in enumerate(interrupt.actions, 1):
            if action.name == ASK_USER_TOOL or not auto_approve:
                assert approver is not None
                decisions.append(approver.decide_one(action, number, total))
            else:
                auto_approved(action)
                decisions.append(Decision("approve"))
        return decisions

    return answer
