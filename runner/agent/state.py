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
has, the result is the history with them appended, which is what the reducer returns then.
Anything else (a removal, a replacement, a dict, an `Overwrite`) goes to the reducer. The ids
are looked up in a record the channel keeps of its history's ids (`SeenIds`), extended by each
update that takes the shortcut, so an update costs what it adds, not the length of the history.

No `from __future__ import annotations` here: the state class is made inside `agent_state`,
and LangChain reads its annotations, which must name the cadence there.
"""

import functools
import operator
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Required

from langchain.agents.middleware.types import AgentState
from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage
from langgraph.graph.message import _messages_delta_reducer

from runner.backends.files_channel import QuickCopyDeltaChannel

__all__ = ["SNAPSHOT_EVERY", "MessagesChannel", "SeenIds", "agent_state", "appended"]

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


class SeenIds:
    """The message ids of one history list (`history`, `length` messages long), so that the
    shortcut tests written ids without reading the history.

    Every id the history holds is in `ids` or `added`; they may hold more, which is safe: an
    id found there sends the update to the reducer, which is always right. A message added
    without an id (a tool's result: LangGraph stamps one on it later, in place) waits in
    `unstamped` until it has one. A channel's copy shares its record's `ids` (what the
    original adds to them later only makes them larger) and keeps what it adds itself in
    `added` (None while nothing is shared), so a copy costs no copy of the set.

    A record describes its list while that is the channel's value at the length it had: a
    reducer's result, an `Overwrite` or a list grown or cut in place is read again. LangGraph
    changes a message in the history in place only to stamp a missing id; a node that replaced
    a message in the list itself would lose that change at the next checkpoint read anyway (a
    checkpoint keeps what steps write), and is not looked for."""

    __slots__ = ("added", "history", "ids", "length", "unstamped")

    def __init__(
        self,
        history: list[Any],
        ids: set[Any],
        unstamped: list[Any],
        added: set[Any] | None = None,
    ) -> None:
        self.history, self.length = history, len(history)
        self.ids, self.unstamped, self.added = ids, unstamped, added

    @classmethod
    def of(cls, history: list[Any]) -> "SeenIds":
        """Read from the history itself (once; its later updates extend it)."""
        ids = set(map(_ID, history))
        return cls(history, ids, [m for m in history if m.id is None] if None in ids else [])

    def describes(self, history: list[Any]) -> bool:
        return self.history is history and self.length == len(history)

    def shared(self, history: list[Any]) -> "SeenIds":
        """This record for `history`, a copy of its list (a channel's copy)."""
        added = set() if self.added is None else set(self.added)
        return SeenIds(history, self.ids, self.unstamped, added)

    def holds_any(self, ids: set[str]) -> bool:
        """Whether some of `ids` may be in the history (the ids stamped since counted)."""
        if self.unstamped and any(m.id is not None for m in self.unstamped):
            self._add(m.id for m in self.unstamped if m.id is not None)
            self.unstamped = [m for m in self.unstamped if m.id is None]
        added = self.added
        return not ids.isdisjoint(self.ids) or (added is not None and not ids.isdisjoint(added))

    def _add(self, ids: Iterable[str]) -> None:
        (self.ids if self.added is None else self.added).update(ids)

    def extend(self, history: list[Any], ids: Sequence[str], new: Sequence[Any]) -> None:
        """Now for `history`: the old one with the `new` messages, whose ids are `ids`."""
        if ids:
            (self.ids if self.added is None else self.added).update(ids)
        if len(ids) != len(new):  # a new list: the old one may be another record's too
            self.unstamped = [*self.unstamped, *(m for m in new if m.id is None)]
        self.history, self.length = history, len(history)


def appended(
    state: Any, writes: Sequence[Any], seen: SeenIds | None = None
) -> tuple[list[Any], SeenIds | None] | None:
    """`_messages_delta_reducer(state, writes)` when the writes only add messages (message
    objects without an id, or with one that neither `state` nor another write has) to a
    history of message objects, with the record of the result's ids (`seen` extended, when it
    describes `state`; a new one when ids had to be read); None otherwise (nothing written,
    too), for the reducer to do."""
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
    if seen is not None and (seen.history is not state or seen.length != len(state)):
        seen = None  # (`seen.describes(state)`, written out: four times a step)
    if fresh:
        distinct = set(fresh)
        if len(distinct) != len(fresh):
            return None  # two writes share an id
        if seen is None:
            seen = SeenIds.of(state)
        if seen.holds_any(distinct):
            return None  # the history has one (or the record thinks so)
    history = [*state, *new]
    if seen is not None:
        seen.extend(history, fresh, new)
    return history, seen


class MessagesChannel(QuickCopyDeltaChannel):
    """LangGraph's `DeltaChannel`, whose updates that only add messages skip the reducer's
    read of the whole history (`appended`); the reducer is the same object, so LangGraph
    treats the channel as one of its own message channels. It keeps the ids of its history
    (`SeenIds`) from the first update that needs them, so later ones read only what they add."""

    __slots__ = ("seen",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: SeenIds | None = None

    def copy(self) -> "MessagesChannel":
        new = super().copy()
        seen = self.seen
        new.seen = (
            seen.shared(new.value) if seen is not None and seen.describes(self.value) else None
        )
        return new

    def update(self, values: Sequence[Any]) -> bool:
        if self.reducer is _messages_delta_reducer:
            added = appended(self.value, values, self.seen)
            if added is not None:
                self.value, self.seen = added
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
