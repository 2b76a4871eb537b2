"""Built agents kept by key, so a server or a batch builds each one once: `AgentCache`.

Building an agent reads its files, resolves its model and may start MCP servers, so the batch
runner (one agent per set of vars), the MCP server (a few sessions per agent and set of
arguments) and `agentctl serve`'s graph factory (a graph per file, vars and model) keep what
they built. They differ in what they need, and each difference is a parameter here:

- a key is whatever identifies a build (`vars_key` makes a set of vars part of one);
- `get(key, build, stamp=...)` hands one value to every caller (a compiled graph, a `Session`
  that runs threads side by side); a different `stamp` (a file's modification time) makes it
  stale and rebuilt;
- `take(key, build)` hands a value to one caller at a time, and `give_back` (or `lease`, both
  around a block) keeps up to `idle_per_key` of them for later callers (a `Session` that must
  not run two calls at once);
- `max_keys` bounds the keys kept, least recently used dropped first;
- `remember` names the errors a build may fail with that are kept like a value, so a key that
  cannot be built fails every later caller at once, with the same error, without building again.

A key is built once however many threads ask for it at once (one lock per key; different keys
build side by side); `take` builds a new value whenever none is idle. What is dropped is closed
with `close(value)` (its MCP servers): at once when nobody can hold it (an idle leased value),
with the cache when a caller may still use it (a shared value that went stale or was evicted:
a run that started on it goes on).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["AgentCache", "vars_key"]

V = TypeVar("V")


def vars_key(variables: Mapping[str, Any]) -> str:
    """A set of template vars as part of a key: the same vars, in any order, the same key."""
    return json.dumps(dict(variables), sort_keys=True, default=str)


@dataclass
class _Slot(Generic[V]):
    """What the cache holds for one key."""

    building: threading.Lock = field(default_factory=threading.Lock)
    """Held while the shared value of this key is built, so it is built once."""
    built: bool = False
    value: V | None = None
    stamp: Hashable = None
    error: BaseException | None = None
    idle: list[V] = field(default_factory=list)
    """Leased values given back, for the next caller."""


class AgentCache(Generic[V]):
    """Values built on first use, by key; see the module docstring for what each knob does."""

    def __init__(
        self,
        close: Callable[[V], None],
        *,
        max_keys: int | None = None,
        idle_per_key: int = 1,
        remember: tuple[type[BaseException], ...] = (),
    ) -> None:
        if (max_keys is not None and max_keys < 1) or idle_per_key < 0:
            raise ValueError("max_keys must be at least 1, idle_per_key at least 0")
        self._close = close
        self.max_keys = max_keys
        self.idle_per_key = idle_per_key
        self.remember = remember
        self.builds = 0
        """How many values were built (a miss each)."""
        self._slots: dict[Hashable, _Slot[V]] = {}  # least recently used first
        self._retired: list[V] = []
        self._lock = threading.Lock()

    # ----------------------------------------------------------------------- shared values

    def get(self, key: Hashable, build: Callable[[], V], *, stamp: Hashable = None) -> V:
        """The value of `key`, built by `build()` when there is none or its stamp is not
        `stamp`. A remembered error is raised again; another is raised and not kept."""
        with self._lock:
            slot = self._touch(key)
            dropped = self._trim()
        self._close_all(dropped)
        with slot.building:
            if slot.stamp == stamp:
                if slot.error is not None:
                    raise slot.error
                if slot.built:
                    return slot.value  # type: ignore[return-value]
            try:
                value = build()
            except self.remember as exc:
                slot.error, slot.stamp = exc, stamp
                raise
            with self._lock:
                self.builds += 1
                if slot.built:
                    self._retired.append(slot.value)  # type: ignore[arg-type]
                slot.built, slot.value, slot.stamp, slot.error = True, value, stamp, None
                if self._slots.get(key) is not slot:  # evicted while it was built
                    self._retired.append(value)
                    slot.built, slot.value = False, None
            return value

    # ----------------------------------------------------------------------- leased values

    def take(self, key: Hashable, build: Callable[[], V]) -> V:
        """A value of `key` for this caller alone until it gives it back (`give_back`): an idle
        one, or one `build()` makes now."""
        with self._lock:
            slot = self._slots.get(key)
            if slot is not None and slot.idle:
                return slot.idle.pop()
        value = build()
        with self._lock:
            self.builds += 1
        return value

    def give_back(self, key: Hashable, value: V) -> None:
        """A value `take` gave, kept for the next caller of `key`, or closed when
        `idle_per_key` are idle already."""
        with self._lock:
            slot = self._touch(key)
            kept = len(slot.idle) < self.idle_per_key
            if kept:
                slot.idle.append(value)
            dropped = self._trim()
        self._close_all([] if kept else [value], dropped)

    @contextmanager
    def lease(self, key: Hashable, build: Callable[[], V]) -> Iterator[V]:
        """`take`, and `give_back` when the block ends."""
        value = self.take(key, build)
        try:
            yield value
        finally:
            self.give_back(key, value)

    # ----------------------------------------------------------------------- dropping

    def _touch(self, key: Hashable) -> _Slot[V]:
        """The slot of `key`, made the most recently used (call it under the lock)."""
        slot = self._slots.pop(key, None) or _Slot()
        self._slots[key] = slot
        return slot

    def _trim(self) -> list[V]:
        """Drop the least recently used keys beyond `max_keys` (under the lock): their idle
        values are returned to be closed now, their shared value is retired."""
        dropped: list[V] = []
        while self.max_keys is not None and len(self._slots) > self.max_keys:
            slot = self._slots.pop(next(iter(self._slots)))
            dropped += slot.idle
            if slot.built:
                self._retired.append(slot.value)  # type: ignore[arg-type]
                slot.built, slot.value = False, None
        return dropped

    def _close_all(self, *groups: list[V]) -> None:
        """Close every value, all of them even when one fails (the first failure is raised)."""
        failure: BaseException | None = None
        for group in groups:
            for value in group:
                try:
                    self._close(value)
                except Exception as exc:
                    failure = failure or exc
        if failure is not None:
            raise failure

    def close(self) -> None:
        """Close every value the cache holds or retired, and forget them."""
        with self._lock:
            values = [*self._retired]
            for slot in self._slots.values():
                values += slot.idle
                if slot.built:
                    values.append(slot.value)  # type: ignore[arg-type]
            self._retired.clear()
            self._slots.clear()
        self._close_all(values)
