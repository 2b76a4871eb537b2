"""Exactly once for finished tool calls: each result is journaled the moment the call returns.

LangGraph saves a tool call's result with the step's writes, a little after the tool returns;
a process killed in between leaves the call unanswered in the last checkpoint, and resuming the
thread runs it again: its side effects (a file appended to, a message sent) happen twice. This
middleware is the outermost tool wrapper: before a call runs it looks the call up in the
thread's tool journal, and returns the recorded result instead of running the tool when the call
finished before; when the call returns, its result (the `ToolMessage` or `Command` the graph
gets) is recorded and committed before anything else happens. So a call that finished is never
run again; only a call in flight at the moment of a crash may run a second time.

The journal is found from the run's checkpointer (`runner.threads.guards.ToolJournal`, or its async
twin `AsyncToolJournal`): agentctl's thread database attaches one (`runner.run.Home`), and a
LangGraph checkpointer of a known type gets one in its own database, on its own connection and
lock (`DERIVED`, matched on the checkpointer's class and its bases): `SqliteSaver` and
`PostgresSaver` (sync), `AsyncSqliteSaver` and `AsyncPostgresSaver` (async; the serve engine's
saver among them). With any other checkpointer, or none, calls pass through unjournaled
(LangGraph's own at-least-once holds). Entries are keyed by
thread, scope and call id; the scope is the chain of `task` calls a subagent's call runs under,
so subagents' calls are journaled too (a contextvar carries the chain into the subagent).

Being the outermost tool wrapper, it is also where a result that cannot be stored (a huge
integer, an unknown object: `runner.middleware.storable`) becomes an error result, before it is
recorded or reaches the state.

A call that raises (an error the tool node does not turn into a message, or a subagent's
approval interrupt) is not recorded: it did not finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from runner.middleware.storable import storable_result
from runner.middleware.tallies import Tallies
from runner.threads.guards import AsyncToolJournal, ToolJournal

__all__ = ["CHECKPOINTER_KEY", "DERIVED", "ToolJournalMiddleware", "current_scope", "journal_for"]

CHECKPOINTER_KEY = "__pregel_checkpointer"
"""Where LangGraph puts the run's checkpointer in a task's `configurable` (subgraphs included)."""

_SCOPE: contextvars.ContextVar[str] = contextvars.ContextVar("agentctl_tool_scope", default="")
"""The `task` calls the current tool call runs under, joined by "/"; "" for the main agent."""

Journal = ToolJournal | AsyncToolJournal

_JOURNALS: weakref.WeakKeyDictionary[Any, Journal | None] = weakref.WeakKeyDictionary()


def _sqlite(saver: Any) -> Journal:
    from runner.threads.sqlite import SqliteToolJournal

    return SqliteToolJournal(saver.conn, saver.lock, serde=saver.serde)


def _async_sqlite(saver: Any) -> Journal:
    from runner.threads.sqlite import AsyncSqliteToolJournal

    return AsyncSqliteToolJournal(saver)


def _postgres(saver: Any) -> Journal:
    from runner.threads.postgres import PostgresToolJournal

    return PostgresToolJournal.of_saver(saver)


def _async_postgres(saver: Any) -> Journal:
    from runner.threads.postgres import AsyncPostgresToolJournal

    return AsyncPostgresToolJournal(saver)


DERIVED: dict[str, Callable[[Any], Journal]] = {
    "langgraph.checkpoint.sqlite.SqliteSaver": _sqlite,
    "langgraph.checkpoint.sqlite.aio.AsyncSqliteSaver": _async_sqlite,
    "langgraph.checkpoint.postgres.PostgresSaver": _postgres,
    "langgraph.checkpoint.postgres.aio.AsyncPostgresSaver": _async_postgres,
}
"""The journal made for a checkpointer of each type (by module and class name, so no database
driver is imported for a checkpointer that does not use it)."""


def journal_for(checkpointer: Any) -> Journal | None:
    """The tool journal that goes with `checkpointer`, made once per checkpointer: the one it
    carries (`agentctl_journal`, set by `Home`), or one in its own database when its class (or
    a base class) is in `DERIVED`."""
    if checkpointer is None:
        return None
    attached = getattr(checkpointer, "agentctl_journal", None)
    if attached is not None:
        return attached
    try:
        return _JOURNALS[checkpointer]
    except (KeyError, TypeError):
        pass
    journal: Journal | None = None
    for cls in type(checkpointer).__mro__:
        make = DERIVED.get(f"{cls.__module__}.{cls.__qualname__}")
        if make is not None:
            journal = make(checkpointer)
            break
    with contextlib.suppress(TypeError):  # a checkpointer that takes no weak reference
        _JOURNALS[checkpointer] = journal
    return journal


def _entry(request: Any) -> tuple[Journal, str, str, str] | None:
    """(journal, thread, scope, call id) for this call; None when it is not journaled."""
    runtime = request.runtime
    configurable = (getattr(runtime, "config", None) or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    call_id = request.tool_call.get("id")
    if not thread_id or not call_id:
        return None
    journal = journal_for(configurable.get(CHECKPOINTER_KEY))
    if journal is None:
        return None
    return journal, str(thread_id), _SCOPE.get(), str(call_id)


def _new(
    journal: Any,
    request: Any,
    thread_id: str,
    scope: str,
    call_id: str,
    call_ids: Callable[[Any], Counter[Any]],
) -> bool:
    """Whether the call cannot have a journal entry, so the lookup need not be sent: one the
    model made in this process while it held the thread (the journal's `new_call`, Postgres
    thread databases), asked about the first time, whose id no other message of the
    conversation has (a model that uses an id again, while the earlier call is in the
    conversation, gets that call's entry, as before). Made while the lease was held: no other
    process can have run it; not asked about before: nor this one. Crash recovery is untouched:
    a resumed run's calls come from the checkpoint it read, not from a message it wrote.
    `call_ids` counts the conversation's call ids (a `Tallies`: only the messages added since
    its last call are read)."""
    new_call = getattr(journal, "new_call", None)
    if new_call is None or not new_call(thread_id, scope, call_id):
        return False
    state = getattr(request, "state", None)
    messages = state.get("messages") if isinstance(state, dict) else None
    if not messages:
        return False
    return call_ids(messages)[call_id] == 1


def _count_call_ids(counts: Counter[Any], messages: Sequence[Any]) -> None:
    for message in messages:
        for call in getattr(message, "tool_calls", None) or ():
            counts[call.get("id")] += 1


def current_scope() -> str:
    """The chain of `task` calls the running code is under ("" outside any): inside a journaled
    `task` call, it ends with that call's id (`runner.tools.a2a` keys its own records on it)."""
    return _SCOPE.get()


def _inner_scope(scope: str, call_id: str) -> str:
    return f"{scope}/{call_id}" if scope else call_id


def _storable(request: Any, result: Any) -> Any:
    """The result the graph gets and the journal records: one it can store
    (`runner.middleware.storable`)."""
    call = request.tool_call
    return storable_result(result, str(call.get("name")), str(call.get("id")))


class ToolJournalMiddleware(AgentMiddleware):
    """Journal each finished tool call; answer a call journaled before from the journal."""

    def __init__(self) -> None:
        super().__init__()
        self._call_ids: Tallies[Counter[Any]] = Tallies(Counter, _count_call_ids)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        entry = _entry(request)
        if entry is None:
            return _storable(request, handler(request))
        journal, thread_id, scope, call_id = entry
        if isinstance(journal, AsyncToolJournal):  # an async saver under invoke: its own
            return _storable(request, handler(request))  # sync calls fail first
        new = _new(journal, request, thread_id, scope, call_id, self._call_ids)
        found = None if new else journal.lookup(thread_id, scope, call_id)
        if found is not None:
            return found
        token = _SCOPE.set(_inner_scope(scope, call_id))
        try:
            result = _storable(request, handler(request))
        finally:
            _SCOPE.reset(token)
        journal.record(thread_id, scope, call_id, result)
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        entry = _entry(request)
        if entry is None:
            return _storable(request, await handler(request))
        journal, thread_id, scope, call_id = entry
        if isinstance(journal, AsyncToolJournal):
            found = await journal.alookup(thread_id, scope, call_id)
        elif _new(journal, request, thread_id, scope, call_id, self._call_ids):
            found = None
        else:  # a blocking journal: its database calls go off the event loop
            found = await asyncio.to_thread(journal.lookup, thread_id, scope, call_id)
        if found is not None:
            return found
        token = _SCOPE.set(_inner_scope(scope, call_id))
        try:
            result = _storable(request, await handler(request))
        finally:
            _SCOPE.reset(token)
        if isinstance(journal, AsyncToolJournal):
            await journal.arecord(thread_id, scope, call_id, result)
        else:
            await asyncio.to_thread(journal.record, thread_id, scope, call_id, result)
        return result
