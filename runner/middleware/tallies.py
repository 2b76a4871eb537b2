"""Read a growing conversation once, across model calls and turns.

Some checks look at a conversation's whole history before each model call or turn: which tool
calls dangle (`patch_tool_calls`), which replies need repair and which call ids are taken
(`replies`), which calls and results a thread has already shown (`runner.run.Session`). Read
whole every time, each costs O(history) per call, so O(history^2) over a thread. A `Tallies`
keeps, per conversation, what the messages read so far came to (a tally) and on the next call
reads only the messages added since.

Every turn brings the history as new objects (LangGraph decodes it from the checkpoint), so a
conversation is known by message ids, not by objects: by its first message's id, and a tally by
how many messages it covers and the id of the last of them. `add_messages` gives every stored
message an id (human messages, replies, tool results, summaries), unique to it, so a tally is
used only while the history still starts the same way: the same first id, at least as many
messages, the same id at the tally's last position. A history rewritten so that messages there
move or go fails that test and is read whole: a summary (every message removed, a new first
one), a thread resumed from an older checkpoint or a fork continued on another branch (another
id, or no message, at that position), a message removed before it, or the dangling calls
answered in place (the messages after them move). A history whose first or last message has no
id (one built outside a graph) is read whole and not remembered.

Not seen: a message replaced under its own id inside the part already read. LangChain and
agentctl replace a message that way only to change the newest reply (an approval's edit, a
repair of the reply), which comes after the part read before the call that made it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["REMEMBERED", "Tallies"]

T = TypeVar("T")

REMEMBERED = 256
"""Conversations remembered by one `Tallies` (the oldest is forgotten first): a session or a
server runs many threads, each with its subagents' conversations."""


@dataclass
class _Tally(Generic[T]):
    """What the first `length` messages of a conversation came to; `last_id` is the id of the
    last of them."""

    length: int
    last_id: str
    value: T


class Tallies(Generic[T]):
    """Per conversation, `read(tally, messages)` applied to each message once.

    `start()` makes an empty tally; `read` adds messages to it, in order. Calling the `Tallies`
    with a history returns the tally of all of it, reading only the messages after the part an
    earlier call read (see the module for when that part is trusted). The tally returned is
    remembered: the caller reads it and does not change it."""

    def __init__(
        self,
        start: Callable[[], T],
        read: Callable[[T, Sequence[Any]], None],
        *,
        remembered: int = REMEMBERED,
    ) -> None:
        self._start = start
        self._read = read
        self._remembered = remembered
        self._known: dict[str, _Tally[T]] = {}
        self._lock = threading.Lock()
        self.messages_read = 0
        """How many messages the calls so far have read, in all (what the tests count)."""

    def __call__(self, messages: Sequence[Any]) -> T:
        first_id = getattr(messages[0], "id", None) if messages else None
        last_id = getattr(messages[-1], "id", None) if messages else None
        if not (first_id and last_id):
            value = self._start()
            self._add(value, messages)
            return value
        with self._lock:  # taken out, so its tally is this call's alone to extend
            known = self._known.pop(first_id, None)
        # Whether `messages` still start with the part `known` covers (written out, not a
        # call: this runs on every model call, twice); then the rest is read.
        length = known.length if known is not None else 0
        if (
            known is not None
            and len(messages) >= length
            and getattr(messages[length - 1], "id", None) == known.last_id
        ):
            self._add(known.value, messages[length:])
            known.length, known.last_id = len(messages), last_id
        else:
            known = _Tally(len(messages), last_id, self._start())
            self._add(known.value, messages)
        with self._lock:
            while len(self._known) >= self._remembered:
                del self._known[next(iter(self._known))]
            self._known[first_id] = known
        return known.value

    def _add(self, value: T, messages: Sequence[Any]) -> None:
        self.messages_read += len(messages)
        self._read(value, messages)
