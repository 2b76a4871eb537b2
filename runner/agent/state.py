"""The graph state agentctl's agents keep: `messages` as a LangGraph `DeltaChannel`.

LangGraph's default `messages` channel stores the whole conversation in every checkpoint, so a
thread's checkpoints grow with its length and every step writes the history again. A
`DeltaChannel` stores only the messages a step wrote (in the checkpoint's writes) and the whole
list every `SNAPSHOT_EVERY` updates (a `_DeltaSnapshot`); reading a checkpoint starts from the
nearest snapshot before it (or the full list an agentctl before deltas stored) and replays the
writes since through the channel's reducer. Retention keeps that chain of ancestors
(`runner.threads.retention`), and the thread tools read values through it
(`runner.threads.values`).

The reducer is LangGraph's own batch reducer for messages: LangGraph gives every message written
to a channel with that reducer a stable id before it is saved, which a replay needs.

That reducer reads the whole history on every update (an index of its ids, a copy, a filter),
and a step updates `messages` four times (the model's reply and the tool's result, each applied
once to the state and once more to the copy the next edge reads). `MessagesChannel` is the
same channel with the same reducer, plus a shortcut for the usual update, one that only adds
messages: when every message written is a message object without an id (a tool's result
before LangGraph stamps one) or with an id that neither the history nor another written message
has, the result is the history with them appended, which is what the reducer returns then; the
ids are looked up in a set. Anything else (a removal, a replacement, a dict, an
`Overwrite`) goes to the reducer.

No `from __future__ import annotations` here: the state class is made inside `agent_state`,
and LangChain reads its annotations, which must name the cadence there.
"""

import functools
import operator
from collections.abc import Sequence
from typing import Annotated, Any, Required

from langchain.agents.middleware.types import AgentState
from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage
from langgraph.graph.message import _messages_delta_reducer

from runner.backends.files_channel import QuickCopyDeltaChannel

__all__ = ["SNAPSHOT_EVERY", "MessagesChannel", "agent_state", "appended"]

SNAPSHOT_EVERY = 50
"""Updates of `messages` between two snapshots of the whole list. A snapshot costs a write of
the whole conversation; between two, retention keeps every checkpoint back to the last one (a
turn of one tool call updates `messages` four times)."""


_ADDABLE: dict[type, bool] = {}
_ID = operator.attrgetter("id")


def _addable(cls: type) -> bool:
    """Whether `cls` is a message class other than a removal, memoized: `isinstance` on a
    pydantic class costs about a microsecond when the answer is no."""
    known = _ADDABLE.get(cls)
    if known is None:
        known = _ADDABLE[cls] = issubclass(cls, BaseMessage) and not issubclass(cls, RemoveMessage)
    return known


def appended(state: Any, writes: Sequence[Any]) -> list[Any] | None:
    """`_messages_delta_reducer(state, writes)` when the writes only add messages (message
    objects without an id, or with one that neither `state` nor another write has) to a
    history of message objects; None otherwise (nothing written, too), for the reducer to do."""
    if not state or type(state) is not list or not _addable(type(state[0])):
        return None
    if len(writes) == 1 and type(writes[0]) is list:  # one node's update, the usual one
        new: list[Any] = writes[0]
    else:
        new = []
        for write in writes:
            if isinstance(write, list):
                new.extend(write)
            else:
                new.append(write)
    if not new:  # no update (its version must not move), or an empty list written
        return None
    fresh: list[str] = []  # the written messages' ids
    for message in new:
        # `_addable` with its memo read here first (this runs four times a step)
        if not (_ADDABLE.get(type(message)) or _addable(type(message))):
            return None
        if message.id is not None:  # one without is appended (LangGraph gives it an id later)
            fresh.append(message.id)
    if fresh:
        # Compared in C, without a set of the whole history (which would cost a step ~1,000
        # bytecodes at 50 steps): the usual update writes one id or none (a tool's result).
        distinct = set(fresh)
        if len(distinct) != len(fresh) or not distinct.isdisjoint(map(_ID, state)):
            return None  # two writes share an id, or the history has one
    return [*state, *new]


class MessagesChannel(QuickCopyDeltaChannel):
    """LangGraph's `DeltaChannel`, whose updates that only add messages skip the reducer's
    read of the whole history (`appended`); the reducer is the same object, so LangGraph
    treats the channel as one of its own message channels."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if self.reducer is _messages_delta_reducer:
            added = appended(self.value, values)
            if added is not None:
                self.value = added
                return True
        return super().update(values)


@functools.cache
def agent_state(snapshot_every: int) -> type:
    """The state schema `create_agent` merges the middleware's schemas into."""

    class AgentctlState(AgentState[Any]):
        messages: Required[
            Annotated[
                list[AnyMessage],
                MessagesChannel(_messages_delta_reducer, snapshot_frequency=snapshot_every),
            ]
        ]

    return AgentctlState
