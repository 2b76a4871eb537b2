"""A person's answers to what a thread waits on: `Decision`, and the resume values it makes.

An approval (`interrupt_on`) is answered by approve, edit (new arguments) or reject (with a
message for the agent); a question of the agent's (`ask_user`) by its answer. `resume_values`
checks the decisions against what waits (their number, the decisions each call allows) and makes
the values LangGraph resumes the interrupts with; `Session` records them once in the answer log
(`runner.threads.guards.AnswerLog`) before it resumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from runner.errors import DecisionError
from runner.events import ASK_USER_TOOL, Action

__all__ = ["Decision", "resume_values"]


@dataclass(frozen=True)
class Decision:
    """A human's answer to one pending action: approve it, edit its arguments, or reject it;
    for an `ask_user` question, `Decision("answer", message=TEXT)` (see `Decision.answer`)."""

    type: Literal["approve", "edit", "reject", "answer"]
    args: dict[str, Any] | None = None
    message: str | None = None

    @staticmethod
    def answer(text: str) -> Decision:
        """The answer to an `ask_user` question."""
        return Decision("answer", message=text)

    def as_langchain(self, action: Action) -> dict[str, Any]:
        if self.type == "approve":
            return {"type": "approve"}
        if self.type == "edit":
            return {"type": "edit", "edited_action": {"name": action.name, "args": self.args or {}}}
        decision: dict[str, Any] = {"type": "reject"}
        if self.message:
            decision["message"] = self.message
        return decision


def resume_values(
    thread_id: str,
    pending: list[tuple[str, list[Action]]],
    decisions: Sequence[Decision],
) -> dict[str, tuple[str, Any]]:
    """Interrupt id -> (the decisions in words, the resume value) for `decisions` to the
    approvals and questions `pending` on a thread; RunError when they do not fit."""
    total = sum(len(actions) for _, actions in pending)
    if len(decisions) == 1 and total > 1 and decisions[0].type not in ("edit", "answer"):
        decisions = list(decisions) * total
    if len(decisions) != total and all(
        [a.name for a in actions] == [ASK_USER_TOOL] for _, actions in pending
    ):
        raise DecisionError(
            f"thread {thread_id} waits on {total} questions; give {total} answers, not "
            f"{len(decisions)} (from the command line: --answer once per question, in the "
            "order they are listed)"
        )
    if len(decisions) != total:
        raise DecisionError(
            f"thread {thread_id} waits on {total} approvals; give {total} decisions, "
            f"not {len(decisions)} (from the command line: --decisions with a JSON "
            f"list of {total}, in the order the calls are listed)"
        )
    answers: dict[str, tuple[str, Any]] = {}
    position = 0
    for interrupt_id, actions in pending:
        if [a.name for a in actions] == [ASK_USER_TOOL]:
            from runner.middleware.ask_user import checked_answer  # LangChain: only when asked

            text = checked_answer(actions[0], decisions[position])
            position += 1
            answers[interrupt_id] = (f"answered {text!r}", text)
            continue
        chosen = []
        for action in actions:
            decision = decisions[position]
            position += 1
            if decision.type == "answer":
                raise DecisionError(
                    f"{action.name} waits for approval, not an answer: approve, edit or reject it"
                )
            if decision.type not in action.allowed_decisions:
                raise DecisionError(
                    f"{action.name}: '{decision.type}' is not allowed here; allowed: "
                    f"{', '.join(action.allowed_decisions)}"
                )
            chosen.append(decision.as_langchain(action))
        summary = ", ".join(c["type"] for c in chosen)
        answers[interrupt_id] = (summary, {"decisions": chosen})
    return answers
