"""The `files` state key of a `state` backend, kept by LangGraph as deltas: `FilesState`.

As a plain reducer channel, `files` is stored whole in checkpoints: on SQLite in every
checkpoint (each holds every channel's value), on Postgres once per change (a changed file
writes the whole mapping again). As a `DeltaChannel`, as `messages` is (`runner.agent.state`),
a checkpoint stores only the updates its step wrote (in its writes) and the whole mapping only
at a snapshot; reading one starts from the nearest snapshot before it (or the plain mapping an
agentctl before this stored) and replays the updates since (`merge_file_writes`).

The snapshot cadence is what bounds retention. LangGraph snapshots a delta channel after
`snapshot_frequency` updates of it (or after 5,000 steps, its system-wide bound), and every
checkpoint since must be kept for the values to read back (`runner.threads.retention`). `files`
is written far less often than `messages`, so counted in updates, its last snapshot could be
hundreds of turns back, and retention would keep every checkpoint since. `FilesChannel`
counts steps instead: at each step LangGraph tells every channel not written that a step
passed (`update([])`), and this channel answers that it was updated, so LangGraph's count of
updates is the count of steps since the snapshot, and the mapping is written whole every
`FILES_SNAPSHOT_EVERY` steps, whether a file changed or not. A step that writes no file stores
nothing for `files` (its version moves, no value or write is saved), so between two snapshots a
checkpoint costs only the files its step changed.

`FILES_SNAPSHOT_EVERY` steps are no more than `messages` takes to its own snapshot (it snapshots
every 50 of its updates, and a step writes it at most once), so the chain a kept checkpoint needs
for its files is never longer than the longest one its messages need: retention keeps about what
it kept before `files` became deltas (`bench/RESULTS.md`, "files kept as deltas").

This module imports LangGraph, which `runner.backends.state` does not (a state backend is used
without a graph, and the CLI starts faster without it); the file tools' middleware uses it. No
`from __future__ import annotations` here: the state class is made inside `files_state`, and
LangChain reads its annotations, which must name the cadence there.
"""

import copy
import functools
from collections.abc import Sequence
from typing import Annotated, Any, NotRequired, Self, TypedDict

from langgraph._internal._typing import MISSING
from langgraph.channels.delta import DeltaChannel

from runner.backends.protocol import FileData
from runner.backends.state import merge_file_writes

__all__ = [
    "FILES_SNAPSHOT_EVERY",
    "FilesChannel",
    "FilesState",
    "QuickCopyDeltaChannel",
    "files_state",
]

FILES_SNAPSHOT_EVERY = 50
"""Graph steps between two snapshots of the whole `files` mapping (a turn of one tool call is
about five). As many as the updates between two snapshots of `messages`, which take at least as
many steps, so `files` never needs a longer chain than `messages` can."""


class QuickCopyDeltaChannel(DeltaChannel[Any]):
    """A `DeltaChannel` copied without running its constructor again.

    LangGraph copies every channel of the graph at each edge it reads (`local_read`), twice a
    step; `DeltaChannel.copy` builds the copy through `__init__`, which checks the cadence and
    normalizes the value type again, and copies the value through the `copy` module. Here the
    copy takes the checked fields as they are, and a list or dict value by its own `copy` (what
    `copy.copy` calls for those; any other value still goes through `copy.copy`)."""

    __slots__ = ()

    def copy(self) -> Self:
        new = object.__new__(type(self))
        new.key = self.key
        new.typ = self.typ
        new.reducer = self.reducer
        new.snapshot_frequency = self.snapshot_frequency
        value = self.value
        kind = type(value)
        if kind is list or kind is dict:
            new.value = value.copy()
        else:
            new.value = value if value is MISSING else copy.copy(value)
        return new


class FilesChannel(QuickCopyDeltaChannel):
    """A `DeltaChannel` whose updates since a snapshot count the graph's steps, not the steps
    that wrote to it (the module docstring says why)."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            # LangGraph's notice of a step that wrote nothing here: counted as an update (the
            # version moves and nothing is stored), for the snapshot cadence.
            return self.is_available()
        return super().update(values)


@functools.cache
def files_state(snapshot_every: int) -> type:
    """The state schema of the file tools' middleware, with `files` snapshotted every
    `snapshot_every` steps (`FILES_SNAPSHOT_EVERY` but in tests: LangChain caches a schema's
    annotations, so a cadence is a schema of its own)."""

    class FilesState(TypedDict):
        """The graph state the file tools need: a middleware's `state_schema`."""

        files: Annotated[
            NotRequired[dict[str, FileData]],
            FilesChannel(merge_file_writes, snapshot_frequency=snapshot_every),
        ]

    return FilesState


FilesState = files_state(FILES_SNAPSHOT_EVERY)
"""The graph state the file tools need, at the default cadence."""
