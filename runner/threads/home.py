"""The thread database's face: `Home`, what the run loop, the CLI and the thread tools use of a
thread database whichever it is, and the records it hands out (`ThreadInfo`, `ThreadSettings`,
`Transcript`). The registry and the settings tables are written here once, over the
`runner.threads.guards.Database` of the SQLite or Postgres subclass."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.threads.guards import AnswerLog, Database, ThreadLease, ToolJournal
from runner.threads.retention import CheckpointRetention
from runner.threads.schema import THREAD_TABLES, now

if TYPE_CHECKING:
    from runner.events import Action

__all__ = [
    "Home",
    "ThreadInfo",
    "ThreadSettings",
    "Transcript",
    "default_home",
    "new_thread_id",
    "resume_settings",
]


def default_home() -> Path:
    return Path(os.environ.get("AGENTCTL_HOME") or Path.home() / ".agentctl").expanduser()


def new_thread_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


@dataclass(frozen=True)
class ThreadInfo:
    thread_id: str
    agent: str
    spec: str | None
    created_at: str
    updated_at: str
    first_message: str
    owner: str = ""
    """The user a server thread belongs to (`agentctl serve` with authentication), else ''."""


@dataclass(frozen=True)
class ThreadSettings:
    """The model (`--model`, None for the spec's own) and vars (`--var`) a thread started with."""

    model: str | None
    vars: dict[str, Any]

    @staticmethod
    def of(model: Any, vars: Mapping[str, Any] | None) -> ThreadSettings:
        """The settings as the thread table keeps them: a `replay:` path made absolute (so the
        thread resumes from any folder); a model object is not kept (None)."""
        if isinstance(model, str) and model.startswith("replay:"):
            model = f"replay:{Path(model.partition(':')[2]).expanduser().resolve()}"
        return ThreadSettings(model if isinstance(model, str) else None, dict(vars or {}))

    def describe(self) -> str:
        model = f"--model {self.model}" if self.model else "the spec's model"
        shown = " ".join(f"--var {k}={v}" for k, v in sorted(self.vars.items()))
        return f"{model}{', ' + shown if shown else ''}"


def resume_settings(
    home: Home, thread_id: str | None, model: str | None, vars: Mapping[str, Any]
) -> tuple[str | None, dict[str, Any]]:
    """The model and vars to resume a thread with: those given, else those it started with
    (resuming without --model keeps its model, not the spec's)."""
    from runner.spec.inputs import CliText

    started = home.settings(thread_id) if thread_id else None
    if started is None:
        return model, dict(vars)
    # `--var` values are kept as typed (text): read back, they are command-line text again
    kept = {k: CliText(v) if isinstance(v, str) else v for k, v in started.vars.items()}
    return (model if model is not None else started.model), dict(vars or kept)


@dataclass(frozen=True)
class Transcript:
    """A thread's saved conversation, read from its last checkpoint without building the agent
    (so it works when the spec has moved, and starts no MCP server)."""

    messages: list[Any]
    """LangChain messages: human, ai (with `tool_calls`), tool."""
    pending: list[Action]
    """The tool calls waiting for approval."""


class Home:
    """The thread database: LangGraph checkpoints, the LangGraph store, the thread registry,
    the settings threads started with, and the guards of `runner.threads.guards` (lease, answer
    log, tool journal), with checkpoint retention (`runner.threads.retention`).

    `runner.threads.open_home(db)` opens the one `db` names: a `postgresql://` URL a
    `runner.threads.postgres.PostgresHome` (LangGraph's `PostgresSaver` and `PostgresStore` in
    that database), anything else a SQLite file, `runner.threads.sqlite.SqliteHome` (default
    `$AGENTCTL_HOME/agentctl.db`); either migrates its tables (`runner.threads.schema`). The
    registry and the guards are written once here, over `db` (`runner.threads.guards.Database`)."""

    path: Path | str
    """The SQLite file, or the Postgres URL without its password (for messages)."""
    db: Database
    retention: CheckpointRetention
    lease: ThreadLease
    answers: AnswerLog
    _lock: threading.Lock
    """The one lock of the one connection the checkpointer, the store and the tables share."""

    # One connection, one lock. The checkpointer and the store each serialise their use of the
    # connection with a lock of their own; with separate locks, a subagent's checkpoint and a
    # store write from another thread opened overlapping transactions ("cannot start a
    # transaction within a transaction"), and separate connections met "database is locked".
    # So both (and the thread registry) share `self._lock`; neither calls into the other while
    # holding it.

    # What each database implements (`open_home(db)` makes one of them, never a bare `Home`):

    @property
    def checkpointer(self) -> Any:
        """LangGraph's checkpointer on this database, carrying the tool journal
        (`agentctl_journal`, where `runner.middleware.journal` finds it)."""
        raise NotImplementedError

    @property
    def journal(self) -> ToolJournal:
        raise NotImplementedError

    @property
    def store(self) -> Any:
        """LangGraph's store on this database (`store` backends)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def register(self, thread_id: str, *, agent: str, spec: str | None, first_message: str) -> None:
        stamp = now()
        self.db.write(
            "INSERT INTO agentctl_threads (thread_id, agent, spec, created_at, updated_at, "
            "first_message) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id) "
            "DO UPDATE SET updated_at = excluded.updated_at",
            [(thread_id, agent, spec, stamp, stamp, first_message[:500])],
        )

    # The model and vars a thread was started with: a table of its own (created in databases
    # made before it existed), so resuming the thread without --model/--var keeps them.

    def remember_settings(self, thread_id: str, settings: ThreadSettings) -> None:
        """Record what a thread was started with; a thread keeps its first settings."""
        self.db.write(
            "INSERT INTO agentctl_thread_settings (thread_id, model, vars) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(thread_id, settings.model, json.dumps(settings.vars, sort_keys=True, default=str))],
        )

    def settings(self, thread_id: str) -> ThreadSettings | None:
        """What the thread was started with; None for a thread started before they were kept."""
        rows = self.db.fetch(
            "SELECT model, vars FROM agentctl_thread_settings WHERE thread_id = ?", (thread_id,)
        )
        if not rows:
            return None
        return ThreadSettings(model=rows[0][0], vars=json.loads(rows[0][1] or "{}"))

    def turn_ended(self, thread_id: str) -> None:
        """A turn on the thread ended (its checkpoints written): nothing here; a database a
        server shares republishes the thread's status (`runner.threads.postgres`)."""

    def touch(self, thread_id: str, *, later: bool = False) -> None:
        """Set the thread's time of last use to now; `later`: with the database's next commit
        (`Database.defer`), not one of its own."""
        write = self.db.defer if later else self.db.write
        write(
            "UPDATE agentctl_threads SET updated_at = ? WHERE thread_id = ?", [(now(), thread_id)]
        )

    def last_written(self, thread_id: str) -> str | None:
        """The id of the thread's latest main-graph checkpoint, after a turn of this process
        wrote it (what the next turn compares with: `runner.run.Session`)."""
        return self.retention.latest_checkpoint_id(thread_id)

    _THREAD = "SELECT thread_id, agent, spec, created_at, updated_at, first_message FROM "

    def thread(self, thread_id: str) -> ThreadInfo | None:
        rows = self.db.fetch(self._THREAD + "agentctl_threads WHERE thread_id = ?", (thread_id,))
        return ThreadInfo(*rows[0]) if rows else None

    def threads(self, *, agent: str | None = None) -> list[ThreadInfo]:
        query = self._THREAD + "agentctl_threads"
        args: tuple[Any, ...] = ()
        if agent:
            query += " WHERE agent = ?"
            args = (agent,)
        # newest first; within one second (the timestamps' precision), the later registered
        rows = self.db.fetch(query + f" ORDER BY updated_at DESC, {self.db.order} DESC", args)
        return [ThreadInfo(*row) for row in rows]

    def transcript(self, thread_id: str) -> Transcript | None:
        """The thread's messages and pending approvals; None when it has no checkpoint."""
        from types import SimpleNamespace

        from runner.threads.transcripts import pending_actions

        saved = self.checkpointer.get_tuple({"configurable": {"thread_id": thread_id}})
        if saved is None:
            return None
        from runner.threads.values import checkpoint_values

        messages = list(checkpoint_values(self.checkpointer, saved).get("messages") or [])
        interrupts = [
            interrupt
            for _task, channel, value in saved.pending_writes or ()
            if channel == "__interrupt__"
            for interrupt in value
        ]
        pending = pending_actions(SimpleNamespace(interrupts=interrupts))
        return Transcript(messages, [action for _, actions in pending for action in actions])

    def saved_transcript(self, thread_id: str) -> tuple[list[Any], list[Action]] | None:
        """The latest checkpoint's messages (`runner.threads.transcripts.SavedMessage`) and
        pending approvals read without LangChain, None when the thread has no checkpoint;
        `runner.threads.transcripts.Unreadable` when they cannot be (then `transcript` can)."""
        from runner.threads.transcripts import Unreadable

        raise Unreadable(f"{type(self).__name__} reads checkpoints through its checkpointer")

    def delete(self, thread_id: str) -> bool:
        found = self.thread(thread_id) is not None
        self.retention.delete_thread(thread_id)
        with self.db.transaction(thread_id) as execute:
            for table in THREAD_TABLES:
                execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
        self.retention.reclaim()
        return found

    def freeze(self) -> None:
        """Take the database lock for good, for a process about to `os._exit`: the writes under
        way on this connection have committed, and no other starts."""
        self._lock.acquire()
