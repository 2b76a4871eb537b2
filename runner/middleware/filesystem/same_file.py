"""Parallel writes and edits of one file in one reply: taken one at a time, and a change made
pointless by an earlier one of the same reply is refused with the reason."""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from runner.backends import (
    Backend,
    BackendError,
    CompositeBackend,
    StateBackend,
    validate_path,
)
from runner.middleware.filesystem.texts import (
    CHANGE_FILES,
)
from runner.tools.runtime import calling_message

_R = TypeVar("_R")


def _same_path(candidate: Any, path: str) -> bool:
    return isinstance(candidate, str) and _normal_path(candidate) == path


@functools.lru_cache(maxsize=4096)
def _normal_path(path: str) -> str | None:
    """`validate_path(path)`, None for a refused path; cached, as every write or edit of a reply
    with many calls compares its path with all of theirs."""
    try:
        return validate_path(path)
    except BackendError:
        return None


@dataclass(frozen=True)
class _SameFileCalls:
    """The write/edit calls of one AI message that name one path: those before this call."""

    key: tuple[str, str]
    """(the message, the path): what parallel changes to one file share."""
    earlier: list[dict[str, Any]]
    message: Any


def _same_file_calls(runtime: ToolRuntime, path: str) -> _SameFileCalls | None:
    """The calls of this call's AI message that also change `path`, or None when it is the only
    one (the common case: no lock, no check)."""
    message = calling_message(runtime)
    if message is None:
        return None
    same = [
        call
        for call in message.tool_calls
        if call["name"] in CHANGE_FILES and _same_path(call["args"].get("file_path"), path)
    ]
    if len(same) < 2:
        return None
    index = next((i for i, c in enumerate(same) if c.get("id") == runtime.tool_call_id), len(same))
    ids = ",".join(str(c.get("id")) for c in same)
    return _SameFileCalls((message.id or ids, path), same[:index], message)


def _snapshot_backed(backend: Backend, path: str) -> bool:
    """Whether a change to `path` is computed from the call's snapshot of the graph state (the
    state backend, also behind a composite route), not made to a file others see at once."""
    while isinstance(backend, CompositeBackend):
        backend, path = backend.backend_for(path)
    return isinstance(backend, StateBackend)


def _succeeds(backend: Backend, call: dict[str, Any]) -> bool:
    """Whether a write/edit call succeeds on the state snapshot `backend` holds (pure)."""
    args = call["args"]
    try:
        path = validate_path(args["file_path"])
        if call["name"] == "write_file":
            content = args.get("content")
            return isinstance(content, str) and bool(backend.write(path, content))
        old, new = args.get("old_string"), args.get("new_string")
        replace_all = args.get("replace_all", False)
        if not (isinstance(old, str) and isinstance(new, str) and isinstance(replace_all, bool)):
            return False
        return bool(backend.edit(path, old, new, replace_all))
    except (BackendError, OSError):
        return False


def _refuse_after_success(
    runtime: ToolRuntime, backend: Backend, group: _SameFileCalls, path: str
) -> None:
    """Refuse this change when an earlier call of the message changes `path` successfully.

    An earlier call with a ToolMessage already in the state (rejected by a reviewer, stopped by
    a limit) did not change anything unless that message says it succeeded; any other is run
    again on the snapshot. Once one succeeds every later one is refused, so this call may run
    exactly when all earlier ones fail.
    """
    answered = {
        m.tool_call_id: m.status
        for m in (runtime.state or {}).get("messages") or ()
        if m.type == "tool"
    }
    for call in group.earlier:
        status = answered.get(call.get("id"))
        if status == "error" or (status is None and not _succeeds(backend, call)):
            continue
        raise BackendError(
            "{0} is also changed by an earlier call in this same message, and parallel "
            "changes to one file overwrite each other; make this change in your next message",
            path,
        )


class _Held:
    """A threading or asyncio lock as a context manager a WeakValueDictionary can refer to."""

    def __init__(self, lock: Any) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()


def _tool_message(result: ToolMessage | Command) -> ToolMessage | None:
    if isinstance(result, ToolMessage):
        return result
    update = result.update if isinstance(result, Command) else None
    if isinstance(update, dict):
        for message in update.get("messages") or ():
            if isinstance(message, ToolMessage):
                return message
    return None


def _with_message(
    result: ToolMessage | Command, replaced: ToolMessage, files_update: Any
) -> ToolMessage | Command:
    """`result` with its ToolMessage replaced, plus the files written for it (state backends)."""
    if isinstance(result, ToolMessage):
        if files_update is None:
            return replaced
        return Command(update={"files": files_update, "messages": [replaced]})
    update = dict(result.update) if isinstance(result.update, dict) else {}
    update["messages"] = [
        replaced if isinstance(m, ToolMessage) else m for m in update.get("messages") or ()
    ]
    if files_update:
        update["files"] = {**(update.get("files") or {}), **files_update}
    return Command(graph=result.graph, update=update, resume=result.resume, goto=result.goto)


class _Locks:
    """One lock per key, kept only while some call holds or waits for it."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._guard = threading.Lock()
        self._held: weakref.WeakValueDictionary[Any, _Held] = weakref.WeakValueDictionary()

    def lock(self, key: Any) -> _Held:
        with self._guard:
            held = self._held.get(key)
            if held is None:
                held = self._held[key] = _Held(self._make())
            return held


_SYNC_LOCKS = _Locks(threading.Lock)


_ASYNC_LOCKS = _Locks(asyncio.Lock)
