"""A client's answer to what a thread waits on, checked before the engine resumes the thread.

A run that resumes a thread (`command: {resume: VALUE}`) carries, for an approval
(`interrupt_on`), `{"decisions": [...]}` (one per waiting call: approve, edit or reject, among
those the call allows), and for a question of the agent's (`ask_user`) the answer (text, or
`{"answer": TEXT}`; one of the choices when it has some). Several interrupts are answered with a
mapping of interrupt id to value. An answer that does not fit would fail the run as it resumes
(or, for a question, be taken as it is): `check_resume` says what is wrong instead, so the
request can be refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from runner.errors import DecisionError

__all__ = ["check_resume"]

DECISION_TYPES = ("approve", "edit", "reject")


def check_resume(interrupts: list[Mapping[str, Any]], resume: Any) -> None:
    """Raise `DecisionError` when `resume` does not answer what `interrupts` (a thread state's
    `interrupts`: `{id, value}` each) wait for; nothing waiting, nothing to check (the engine
    answers that itself)."""
    from runner.threads.transcripts import pending_actions

    waiting = [SimpleNamespace(id=i.get("id"), value=i.get("value")) for i in interrupts]
    pending = pending_actions(SimpleNamespace(interrupts=waiting))
    if not pending:
        return
    ids = {interrupt_id for interrupt_id, _ in pending}
    if isinstance(resume, Mapping) and resume and set(resume) <= ids:
        answers = dict(resume)
    elif len(pending) == 1:
        answers = {pending[0][0]: resume}
    else:
        raise DecisionError(
            f"the thread waits on {len(pending)} interrupts; resume it with a mapping of each "
            f"interrupt's id to its answer ({', '.join(sorted(map(str, ids)))})"
        )
    for interrupt_id, actions in pending:
        if interrupt_id in answers:
            _check_one(actions, answers[interrupt_id])


def _check_one(actions: list[Any], value: Any) -> None:
    from runner.events import ASK_USER_TOOL
    from runner.middleware.ask_user import answer_of, checked_answer
    from runner.run.answers import Decision

    if [a.name for a in actions] == [ASK_USER_TOOL]:
        text = value.get("answer") if isinstance(value, Mapping) else value
        if not isinstance(text, str):
            raise DecisionError(
                f"the agent asked {actions[0].args.get('question', '')!r}; resume with the "
                f'answer: text, or {{"answer": TEXT}}'
            )
        checked_answer(actions[0], Decision.answer(answer_of(value)))
        return
    if any(a.name == "interrupt" for a in actions):
        return  # an interrupt of the graph's own: any value
    names = ", ".join(a.name for a in actions)
    decisions = value.get("decisions") if isinstance(value, Mapping) else None
    if not isinstance(decisions, list):
        raise DecisionError(
            f"{names} waits for approval; resume with "
            f'{{"decisions": [...]}}, one decision per call ({len(actions)})'
        )
    if len(decisions) != len(actions):
        raise DecisionError(
            f"{len(actions)} calls wait for approval ({names}); give {len(actions)} decisions, "
            f"not {len(decisions)}, in the order the calls are listed"
        )
    for action, decision in zip(actions, decisions, strict=True):
        kind = decision.get("type") if isinstance(decision, Mapping) else None
        if kind not in DECISION_TYPES:
            raise DecisionError(
                f"{action.name}: {decision!r} is not a decision; its `type` is one of: "
                f"{', '.join(action.allowed_decisions)}"
            )
        if kind not in action.allowed_decisions:
            raise DecisionError(
                f"{action.name}: '{kind}' is not allowed here; allowed: "
                f"{', '.join(action.allowed_decisions)}"
            )
        edited = decision.get("edited_action") if kind == "edit" else {}
        if not isinstance(edited, Mapping) or not isinstance(edited.get("args", {}), Mapping):
            raise DecisionError(
                f'{action.name}: an edit carries the new call: {{"type": "edit", '
                f'"edited_action": {{"name": "{action.name}", "args": {{...}}}}}}'
            )
