"""Which `task` call a subagent run answers, while it runs: the subagent middleware sets it, a
replayed subagent reads it to take the replies of that call (by the order of the calls in the
parent's reply, or the call a reply `answers:`), not those of whichever parallel run reaches its
model first. A leaf: the harness sets it and replay reads it without importing each other."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["TASK_CALL", "TaskCall"]


@dataclass(frozen=True)
class TaskCall:
    """The `task` call a subagent run answers, set (in `TASK_CALL`) while the subagent runs.

    A replayed subagent reads it to pick its replies by the order of the calls in the parent's
    reply, not by the order in which parallel runs happen to reach their model."""

    subagent: str
    id: str | None
    description: str
    siblings: tuple[tuple[str | None, str], ...]
    """(id, description) of each `task` call to the same subagent in the calling reply, in order,
    this one included."""
    run: int | None = None
    """The run of the agent's replies to play, when the caller counts them (a workflow step)."""


TASK_CALL: ContextVar[TaskCall | None] = ContextVar("agentctl_task_call", default=None)
