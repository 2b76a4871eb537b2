"""Run agents on persistent threads and report what happens as `RunEvent`s.

A `Home` is the SQLite database `$AGENTCTL_HOME/agentctl.db` (default home `~/.agentctl`): LangGraph
checkpoints (every thread, resumable from another process, approvals pending included), the
LangGraph store (`store` backends), and a small registry of threads for `agentctl threads`.

A `Session` is one built agent in a home. `stream()` runs one turn on a thread (a new message, an
answer to pending approvals, or the continuation of a run that was cut off) and yields events as
they happen; `run()` collects them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from runner import threads_db
from runner.errors import DecisionError, RunError, RunnerError
from runner.events import (
    DENIED_KEY,
    SUMMARY_TAG,
    Action,
    Denied,
    Error,
    Final,
    Interrupt,
    ModelCall,
    RunEvent,
    RunWarning,
    Start,
    TextDelta,
    TodosUpdate,
    ToolCall,
    ToolResult,
    Usage,
)
from runner.retention import CheckpointRetention, SqliteRetention
from runner.spec.ask_user import ASK_USER_TOOL
from runner.spec.budgets import PriceSpec

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph

    from runner.attachments import Attachment
    from runner.backends import FileInfo
    from runner.resolve import LocalContext, ResolvedAgent
    from runner.spec import AgentSpec

__all__ = [
    "Decision",
    "Home",
    "RunResult",
    "Session",
    "SqliteHome",
    "ThreadInfo",
    "ThreadSettings",
    "Transcript",
    "default_home",
    "new_thread_id",
    "resume_settings",
]


DURABILITY: Literal["sync"] = "sync"
"""LangGraph's checkpoint durability for every turn: each step's checkpoint is committed before
the next step starts ("async" would overlap the write with the next step, and a crash could lose
a finished step; "exit" would write only when the run ends)."""


def default_home() -> Path:
    return Path(os.environ.get("AGENTCTL_HOME") or Path.home() / ".agentctl").expanduser()


def new_thread_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


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


_SETTINGS_TABLE = (
    "CREATE TABLE IF NOT EXISTS agentctl_thread_settings "
    "(thread_id TEXT PRIMARY KEY, model TEXT, vars TEXT)"
)


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


def is_postgres_url(db: object) -> bool:
    """Whether `--db` names a Postgres thread database rather than a SQLite file."""
    return isinstance(db, str) and db.startswith(("postgresql://", "postgres://"))


class Home:
    """The thread database: LangGraph checkpoints, the LangGraph store, the thread registry,
    the settings threads started with, and the guards of `runner.threads_db` (lease, answer log,
    tool journal), with checkpoint retention (`runner.retention`).

    `Home(db)` opens the one `db` names: a `postgresql://` URL opens `runner.home_pg.PostgresHome`
    (LangGraph's `PostgresSaver` and `PostgresStore` in that database), anything else a SQLite
    file, `SqliteHome` (default `$AGENTCTL_HOME/agentctl.db`). The registry and the guards are
    written once here, over `db` (`runner.threads_db.Database`)."""

    path: Path | str
    """The SQLite file, or the Postgres URL without its password (for messages)."""
    db: threads_db.Database
    retention: CheckpointRetention
    lease: threads_db.ThreadLease
    answers: threads_db.AnswerLog
    _lock: threading.Lock
    """The one lock of the one connection the checkpointer, the store and the tables share."""

    def __new__(cls, db: str | os.PathLike[str] | None = None) -> Home:
        if cls is Home:
            if is_postgres_url(db):
                from runner.home_pg import PostgresHome

                cls = PostgresHome
            else:
                cls = SqliteHome
        return super().__new__(cls)

    # One connection, one lock. The checkpointer and the store each serialise their use of the
    # connection with a lock of their own; with separate locks, a subagent's checkpoint and a
    # store write from another thread opened overlapping transactions ("cannot start a
    # transaction within a transaction"), and separate connections met "database is locked".
    # So both (and the thread registry) share `self._lock`; neither calls into the other while
    # holding it.

    # What each database implements (`Home(db)` makes one of them, never a bare `Home`):

    @property
    def checkpointer(self) -> Any:
        """LangGraph's checkpointer on this database, carrying the tool journal
        (`agentctl_journal`, where `runner.middleware.journal` finds it)."""
        raise NotImplementedError

    @property
    def journal(self) -> threads_db.ToolJournal:
        raise NotImplementedError

    @property
    def store(self) -> Any:
        """LangGraph's store on this database (`store` backends)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def register(self, thread_id: str, *, agent: str, spec: str | None, first_message: str) -> None:
        now = _now()
        self.db.write(
            "INSERT INTO agentctl_threads (thread_id, agent, spec, created_at, updated_at, "
            "first_message) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id) "
            "DO UPDATE SET updated_at = excluded.updated_at",
            [(thread_id, agent, spec, now, now, first_message[:500])],
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

    def touch(self, thread_id: str) -> None:
        self.db.write(
            "UPDATE agentctl_threads SET updated_at = ? WHERE thread_id = ?",
            [(_now(), thread_id)],
        )

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

        saved = self.checkpointer.get_tuple({"configurable": {"thread_id": thread_id}})
        if saved is None:
            return None
        messages = list(saved.checkpoint.get("channel_values", {}).get("messages") or [])
        interrupts = [
            interrupt
            for _task, channel, value in saved.pending_writes or ()
            if channel == "__interrupt__"
            for interrupt in value
        ]
        pending = pending_actions(SimpleNamespace(interrupts=interrupts))
        return Transcript(messages, [action for _, actions in pending for action in actions])

    def delete(self, thread_id: str) -> bool:
        found = self.thread(thread_id) is not None
        self.retention.delete_thread(thread_id)
        with self.db.transaction(thread_id) as execute:
            for table in ("agentctl_threads", "agentctl_thread_settings", *threads_db.TABLES):
                execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
        self.retention.reclaim()
        return found

    def freeze(self) -> None:
        """Take the database lock for good, for a process about to `os._exit`: the writes under
        way on this connection have committed, and no other starts."""
        self._lock.acquire()


class SqliteHome(Home):
    """The thread database in a SQLite file."""

    def __init__(self, db: str | os.PathLike[str] | None = None) -> None:
        path = Path(db) if db is not None else default_home() / "agentctl.db"
        self.path = path.expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            SqliteRetention.prepare_new_database(self.conn)
            # Durability (README "Crashes and concurrent runs"): write-ahead log, so readers
            # never block the writer and a killed writer leaves no half-written page; NORMAL
            # sync, so a commit is safe from a process crash once it returns (the OS has it)
            # and costs no fsync per checkpoint; an OS crash or power cut may lose the last
            # commits, never the database.
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS agentctl_threads (thread_id TEXT PRIMARY KEY, "
                "agent TEXT, spec TEXT, created_at TEXT, updated_at TEXT, first_message TEXT)"
            )
            self.conn.execute(_SETTINGS_TABLE)
            threads_db.setup(self.conn)  # commits
        except (OSError, sqlite3.Error) as exc:
            raise RunError(f"cannot open the thread database {self.path}: {exc}") from None
        self._lock = threading.Lock()
        self.db = threads_db.SqliteDatabase(self.conn, self._lock)
        self._checkpointer: Any = None
        self._store: Any = None
        self.retention: SqliteRetention = SqliteRetention(self.conn, self._lock)
        """Prunes old checkpoints (`runner.retention`); shares the connection and its lock."""
        self.lease = threads_db.SqliteThreadLease(self.conn, self._lock)
        self.answers = threads_db.SqliteAnswerLog(self.conn, self._lock)
        self._journal: threads_db.ToolJournal | None = None

    @property
    def checkpointer(self) -> Any:
        if self._checkpointer is None:
            from langgraph.checkpoint.sqlite import SqliteSaver

            saver = SqliteSaver(self.conn)
            saver.lock = self._lock
            saver.setup()
            # the tool journal (runner.middleware.journal) finds its table through the saver
            saver.agentctl_journal = self.journal  # type: ignore[attr-defined]
            self._checkpointer = saver
        return self._checkpointer

    @property
    def journal(self) -> threads_db.ToolJournal:
        if self._journal is None:
            self._journal = threads_db.SqliteToolJournal(self.conn, self._lock)
        return self._journal

    @property
    def store(self) -> Any:
        if self._store is None:
            from langgraph.store.sqlite import SqliteStore

            store = SqliteStore(self.conn)
            store.lock = self._lock
            store.setup()
            self._store = store
        return self._store

    def close(self) -> None:
        with self._lock:  # not while another thread is in the middle of a write
            self.conn.close()


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


@dataclass
class RunResult:
    """What `Session.run` returns: every event, and the outcome."""

    thread_id: str
    events: list[RunEvent] = field(default_factory=list)

    @property
    def final(self) -> Final | None:
        return next((e for e in reversed(self.events) if isinstance(e, Final)), None)

    @property
    def interrupt(self) -> Interrupt | None:
        return next((e for e in reversed(self.events) if isinstance(e, Interrupt)), None)

    @property
    def error(self) -> Error | None:
        return next((e for e in self.events if isinstance(e, Error)), None)

    @property
    def content(self) -> str | None:
        return self.final.content if self.final else None


# --------------------------------------------------------------------------- events


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part)
            for part in content
            if not isinstance(part, dict) or part.get("type") in (None, "text")
        )
    return str(content)


class EventTranslator:
    """Turns LangGraph stream chunks (`stream_mode=["messages", "updates", "custom"]`,
    `subgraphs=True`) into RunEvents, naming the agent of each."""

    def __init__(
        self,
        main_agent: str,
        *,
        seen_calls: set[str] | None = None,
        seen_results: set[str] | None = None,
        seen_replies: set[str] | None = None,
        prices: Mapping[str, Mapping[str, PriceSpec]] | None = None,
    ) -> None:
        self.main = main_agent
        self.prices = dict(prices or {})
        """Agent name -> its model prices (`model.price`): the cost of each `Usage`."""
        self.seen_calls: set[str] = set(seen_calls or ())
        self.seen_results: set[str] = set(seen_results or ())
        # ids of AI messages already reported: a model node that rewrites the history (LangChain
        # answering invalid calls left in it, a summary) sends old replies again
        self.seen_replies: set[str] = set(seen_replies or ())
        # namespace root ("tools:<task id>") -> (agent name, id of the `task` call that started it)
        self.subagents: dict[str, tuple[str, str | None]] = {}
        # interrupt id -> the agent whose approval it asks for
        self.interrupt_agents: dict[str, str] = {}
        self.streamed_text: set[str] = set()

    def _agent(
        self, namespace: Sequence[str], meta: Mapping[str, Any] | None = None
    ) -> tuple[str, str | None]:
        if not namespace:
            return self.main, None
        known = self.subagents.get(namespace[0])
        name = (meta or {}).get("lc_agent_name")
        if known is not None:
            return known
        if isinstance(name, str):
            self.subagents[namespace[0]] = (name, None)
            return name, None
        return self.main, None

    def feed(self, namespace: Sequence[str], mode: str, data: Any) -> Iterator[RunEvent]:
        if mode == "custom":
            yield from self._custom(namespace, data)
        elif mode == "messages":
            yield from self._message_chunk(namespace, data)
        elif mode == "updates":
            yield from self._updates(namespace, data)

    def _custom(self, namespace: Sequence[str], data: Any) -> Iterator[RunEvent]:
        if not isinstance(data, dict):
            return
        if data.get("agentctl") == "subagent_start":
            ns = str(data.get("namespace") or "")
            root = ns.split("|")[0] if ns else None
            if root:
                self.subagents[root] = (str(data.get("agent")), data.get("tool_call_id"))
        elif data.get("agentctl") == "warning":
            agent, parent = self._agent(namespace)
            yield RunWarning(
                agent=agent,
                parent_id=parent,
                code=str(data.get("code") or "warning"),
                message=str(data.get("message") or ""),
            )

    def _message_chunk(self, namespace: Sequence[str], data: Any) -> Iterator[RunEvent]:
        message, meta = data
        if meta.get("langgraph_node") != "model" or message.type not in ("ai", "AIMessageChunk"):
            return
        if SUMMARY_TAG in (meta.get("tags") or ()):
            return  # the summarizer's words are not the agent's
        text = _text_of(message.content)
        if text:
            agent, parent = self._agent(namespace, meta)
            if message.id:
                self.streamed_text.add(message.id)
            yield TextDelta(agent=agent, parent_id=parent, text=text)

    def _updates(self, namespace: Sequence[str], data: Any) -> Iterator[RunEvent]:
        if not isinstance(data, dict):
            return
        agent, parent = self._agent(namespace)
        for node, update in data.items():
            if node == "__interrupt__":
                for interrupt in update or ():
                    self.interrupt_agents.setdefault(getattr(interrupt, "id", ""), agent)
                continue
            for part in update if isinstance(update, list) else [update]:
                if isinstance(part, dict):
                    yield from self._update(node, part, agent, parent)

    def _update(
        self, node: str, update: dict[str, Any], agent: str, parent: str | None
    ) -> Iterator[RunEvent]:
        messages = update.get("messages")
        if isinstance(messages, list):
            for message in messages:
                kind = getattr(message, "type", None)
                if kind == "ai" and node == "model":
                    if message.id in self.seen_replies:
                        continue  # history restated (a repair, a summary): not news
                    if message.id:
                        self.seen_replies.add(message.id)
                    text = _text_of(message.content)
                    if text and message.id not in self.streamed_text:
                        yield TextDelta(agent=agent, parent_id=parent, text=text)
                    yield _model_call(message, agent, parent)
                    for call in message.tool_calls:
                        if call["id"] in self.seen_calls:
                            continue
                        self.seen_calls.add(call["id"])
                        yield ToolCall(
                            agent=agent,
                            parent_id=parent,
                            name=call["name"],
                            args=dict(call["args"]),
                            id=call["id"],
                        )
                    usage = getattr(message, "usage_metadata", None)
                    if usage:
                        yield self._usage(message, usage, agent, parent)
                elif kind == "tool":
                    call_id = message.tool_call_id
                    if call_id in self.seen_results:
                        continue
                    self.seen_results.add(call_id)
                    denied = (getattr(message, "response_metadata", None) or {}).get(DENIED_KEY)
                    if isinstance(denied, dict):
                        yield Denied(
                            agent=agent,
                            parent_id=parent,
                            name=str(denied.get("tool") or message.name or ""),
                            id=call_id,
                            args=dict(denied.get("args") or {}),
                            rule=str(denied.get("rule") or ""),
                        )
                    yield ToolResult(
                        agent=agent,
                        parent_id=parent,
                        name=message.name or "",
                        id=call_id,
                        content=_text_of(message.content),
                        status=getattr(message, "status", "success") or "success",
                    )
        todos = update.get("todos")
        if isinstance(todos, list):
            yield TodosUpdate(agent=agent, parent_id=parent, todos=[dict(t) for t in todos])

    def _usage(
        self, message: Any, usage: Mapping[str, Any], agent: str, parent: str | None
    ) -> Usage:
        """A reply's token usage, with its cost when the spec prices the agent's model."""
        tokens_in = int(usage.get("input_tokens", 0))
        tokens_out = int(usage.get("output_tokens", 0))
        cost = None
        if self.prices.get(agent):
            from runner.middleware.budgets import price_for

            meta = message.response_metadata or {}
            price = price_for(self.prices[agent], meta.get("model_name") or meta.get("model"))
            cost = price.cost(tokens_in, tokens_out) if price is not None else None
        return Usage(
            agent=agent,
            parent_id=parent,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            total_tokens=int(usage.get("total_tokens", 0)),
            cost=cost,
        )


def _model_call(message: Any, agent: str, parent: str | None) -> ModelCall:
    from runner.middleware.replies import finish_reason

    meta = message.response_metadata or {}
    model = meta.get("model_name") or meta.get("model")
    return ModelCall(
        agent=agent,
        parent_id=parent,
        model=str(model) if model else None,
        finish_reason=finish_reason(message),
    )


@dataclass(frozen=True)
class _Finished:
    """The parts of a LangGraph `StateSnapshot` a turn reads, for a thread that finished its
    last turn: its values, and no task or approval pending."""

    values: dict[str, Any]
    next: tuple[str, ...] = ()
    tasks: tuple[Any, ...] = ()
    interrupts: tuple[Any, ...] = ()


def pending_actions(
    state: Any, agents: Mapping[str, str] | None = None
) -> list[tuple[str, list[Action]]]:
    """(interrupt id, actions) for each approval the thread waits on; `agents` names the agent
    behind each interrupt id when the stream showed it."""
    found: list[tuple[str, list[Action]]] = []
    for interrupt in getattr(state, "interrupts", ()) or ():
        value = interrupt.value
        agent = (agents or {}).get(interrupt.id)
        actions: list[Action] = []
        if isinstance(value, dict) and value.get("type") == "ask_user":
            from runner.middleware.ask_user import question_action

            actions.append(question_action(value, agent))
        elif isinstance(value, dict) and "action_requests" in value:
            configs = {c.get("action_name"): c for c in value.get("review_configs", [])}
            for request in value["action_requests"]:
                config = configs.get(request.get("name"), {})
                actions.append(
                    Action(
                        name=request.get("name", ""),
                        args=dict(request.get("args") or {}),
                        id=request.get("id"),
                        description=request.get("description"),
                        allowed_decisions=list(
                            config.get("allowed_decisions", ["approve", "edit", "reject"])
                        ),
                        agent=agent,
                    )
                )
        else:
            actions.append(
                Action(
                    name="interrupt",
                    args={"value": value},
                    allowed_decisions=["approve"],
                    agent=agent,
                )
            )
        found.append((interrupt.id, actions))
    return found


# --------------------------------------------------------------------------- recording


class _Recorder:
    """A callback handler that writes each model reply to a cassette as it arrives."""

    def __init__(self, path: Path, *, main_agent: str, append: bool) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        self.path = path
        self.main = main_agent
        self.lock = threading.Lock()
        self.agents: dict[str, list[dict[str, Any]]] = {}
        if append and path.exists():
            from runner.cassette import load_cassette

            existing = load_cassette(path)
            for name, replies in existing.agents.items():
                self.agents[name] = [r.model_dump(exclude_defaults=True) for r in replies]
            if existing.main:
                self.agents.setdefault(main_agent, []).extend(
                    r.model_dump(exclude_defaults=True) for r in existing.main
                )
        self.starts: dict[Any, str] = {}
        recorder = self

        class Handler(BaseCallbackHandler):
            def on_chat_model_start(
                self,
                serialized: Any,
                messages: Any,
                *,
                run_id: Any,
                metadata: dict[str, Any] | None = None,
                tags: list[str] | None = None,
                **kwargs: Any,
            ) -> None:
                meta = metadata or {}
                if meta.get("langgraph_node") == "model":
                    agent = str(meta.get("lc_agent_name") or recorder.main)
                    if SUMMARY_TAG in (tags or ()):
                        agent += "/summary"  # replayed from the `<agent>/summary` replies
                    recorder.starts[run_id] = agent

            def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
                agent = recorder.starts.pop(run_id, None)
                if agent is None:
                    return
                message = response.generations[0][0].message
                recorder.add(agent, message)

        self.handler = Handler()

    def add(self, agent: str, message: Any) -> None:
        reply: dict[str, Any] = {"content": message.content}
        if message.tool_calls:
            reply["tool_calls"] = [
                {"name": c["name"], "args": c["args"], "id": c["id"]} for c in message.tool_calls
            ]
        usage = getattr(message, "usage_metadata", None)
        if usage:
            reply["usage"] = {
                "input_tokens": usage.get("input_tokens", 0),
                "output_tokens": usage.get("output_tokens", 0),
            }
        with self.lock:
            self.agents.setdefault(agent, []).append(reply)
            self._write()

    def _write(self) -> None:
        import yaml

        document = {"version": 1, "agents": self.agents}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(
            yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
        tmp.replace(self.path)


# --------------------------------------------------------------------------- sessions


class Session:
    """One built agent bound to a home (SQLite checkpoints, store, thread registry)."""

    def __init__(
        self,
        spec_or_path: AgentSpec | str | os.PathLike[str],
        *,
        model: str | BaseChatModel | None = None,
        vars: Mapping[str, Any] | None = None,
        db: str | os.PathLike[str] | None = None,
        home: Home | None = None,
        record: str | os.PathLike[str] | None = None,
        local_context: LocalContext | None = None,
        allow_unused_vars: bool = False,
        keep_checkpoints: int | Literal["all"] | None = None,
        wait: float | None = None,
    ) -> None:
        """`keep_checkpoints`: how many of each thread's latest checkpoints a turn leaves
        (`"all"`: every one); by default the database's setting, else
        `runner.retention.DEFAULT_KEEP`. See `runner.retention` for what is always kept."""
        from runner.build import _as_spec, build_graph
        from runner.resolve import Resolver

        self.spec = _as_spec(spec_or_path, vars, allow_unused_vars=allow_unused_vars)
        self.home = home or Home(db)
        resolver = Resolver(model=model, local_context=local_context)
        self.resolved: ResolvedAgent = resolver.resolve(self.spec)
        self._cassettes = resolver.cassettes
        try:
            self.graph: CompiledStateGraph = build_graph(
                self.resolved, checkpointer=self.home.checkpointer, store=self.home.store
            )
        except BaseException:
            self.resolved.close()
            raise
        self.name = self.resolved.name
        self.record_path = Path(record) if record else None
        self.no_sandbox = _no_sandbox_warning(self.resolved)
        self.settings = ThreadSettings.of(model, vars)
        self.prices = _prices_by_agent(self.resolved)
        if isinstance(keep_checkpoints, int) and keep_checkpoints < 1:
            raise RunError("keep_checkpoints: keep at least 1 (or 'all')")
        self.keep_checkpoints = keep_checkpoints
        # (thread, its latest checkpoint id, its values) after a turn of ours that finished:
        # the next turn on that thread in this session starts from them unless the thread has
        # moved since (another process, `graph.update_state`), instead of decoding them again.
        self._finished: tuple[str, str, dict[str, Any]] | None = None
        self.wait = wait
        """Seconds a turn waits for a thread another process runs (None: fail at once)."""
        self._kept: dict[str, threads_db.Lease] | None = None

    @contextmanager
    def holding_threads(self) -> Iterator[None]:
        """Keep each thread's lease from one turn to the next until the block ends, for a caller
        that answers approvals itself (`--auto-approve`, a person at the terminal): no other
        process can take the thread between the turn that asks and the turn that answers.
        Without it a turn lets go of its thread before yielding its last event."""
        self._kept = {}
        try:
            yield
        finally:
            kept, self._kept = self._kept, None
            for lease in kept.values():
                lease.release()

    # ----------------------------------------------------------------------- threads

    def _config(self, thread_id: str, callbacks: list[Any]) -> RunnableConfig:
        config: RunnableConfig = {
            # agentctl_turn: budgets tell a run's turns apart (runner.middleware.budgets)
            "configurable": {"thread_id": thread_id, "agentctl_turn": uuid.uuid4().hex},
            "recursion_limit": self.resolved.recursion_limit,
            "metadata": {"agentctl_agent": self.name},
        }
        if callbacks:
            config["callbacks"] = callbacks
        return config

    def state(self, thread_id: str) -> Any:
        return self.graph.get_state({"configurable": {"thread_id": thread_id}})

    def pending(self, thread_id: str) -> list[tuple[str, list[Action]]]:
        """The approvals a thread waits for, grouped by interrupt."""
        return pending_actions(self.state(thread_id))

    def values(self, thread_id: str) -> dict[str, Any]:
        return dict(self.state(thread_id).values or {})

    def files(self, thread_id: str | None, *, limit: int = 200) -> list[FileInfo]:
        """The files the agent sees on its backend (sorted by path, at most `limit`): on a
        `state` backend those of the thread, else those on disk or in the store."""
        if self.resolved.backend is None:
            return []
        values = self.values(thread_id) if thread_id else {}
        backend = self.resolved.backend.get(values, self.home.store)
        return backend.glob("**", "/")[:limit]

    # ----------------------------------------------------------------------- running

    def _answers(
        self,
        thread_id: str,
        pending: list[tuple[str, list[Action]]],
        decisions: Sequence[Decision],
    ) -> dict[str, tuple[str, Any]]:
        """Interrupt id -> (the decisions in words, the resume value) for `decisions`."""
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
                from runner.middleware.ask_user import checked_answer

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
                        f"{action.name} waits for approval, not an answer: approve, edit or "
                        "reject it"
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

    def _claim(self, thread_id: str, decisions: Sequence[Decision]) -> tuple[dict[str, Any], bool]:
        """Answer the thread's pending approvals: a compare-and-set on the pending interrupts
        (`runner.threads_db.AnswerLog`). Returns the resume value per interrupt, and whether
        this call recorded it; raises `AlreadyAnswered` when another answer came first.

        An answer whose process died before the thread went on is still the answer: the same
        decisions again finish it, other ones are refused."""
        pending = pending_actions(self.state(thread_id))
        if not pending:
            last = self.home.answers.last(thread_id)
            if last is not None:
                raise threads_db.AlreadyAnswered(
                    f"thread {thread_id} has no approval waiting: {last.describe()}"
                )
            hint = ""
            state = self.state(thread_id)
            if state.next or state.tasks:  # cut off before it reached the approval
                import shlex

                from runner.loader import display_path

                source = self.spec.source
                spec = shlex.quote(display_path(source)) if source else "SPEC"
                hint = (
                    "; its last run was cut off before it asked: continue it with "
                    f"`agentctl run {spec} --thread {thread_id}` alone"
                )
            raise RunError(f"thread {thread_id} has no approval waiting; nothing to answer{hint}")
        answers = self._answers(thread_id, pending, decisions)
        earlier = self.home.answers.claim(thread_id, answers)
        if earlier is None:
            return {iid: resume for iid, (_, resume) in answers.items()}, True
        recorded = self.home.answers.recorded(thread_id, list(answers))
        same = set(recorded) == set(answers) and all(
            recorded[iid].resume == resume for iid, (_, resume) in answers.items()
        )
        if same and all(a.process_gone for a in recorded.values()):
            return {iid: a.resume for iid, a in recorded.items()}, False
        raise threads_db.AlreadyAnswered(f"thread {thread_id}: {earlier.describe()}")

    def _input(
        self,
        thread_id: str,
        message: str | None,
        claimed: dict[str, Any] | None,
        state: Any,
    ) -> Any:
        """The graph input of a turn, from the thread's `state` as the turn found it with its
        lease held."""
        from langchain_core.messages import HumanMessage
        from langgraph.types import Command

        pending = pending_actions(state)
        if claimed is not None:
            if not {iid for iid, _ in pending} >= set(claimed):
                last = self.home.answers.last(thread_id)
                told = last.describe() if last else "already answered"
                raise threads_db.AlreadyAnswered(f"thread {thread_id}: {told}")
            return Command(resume=claimed)
        if message is not None:
            return {"messages": [*self._answer_dangling(state), HumanMessage(content=message)]}
        if pending:
            recorded = self.home.answers.recorded(thread_id, [iid for iid, _ in pending])
            if len(recorded) == len(pending):
                # answered before a crash cut the run short: the recorded answer goes on
                return Command(resume={iid: answer.resume for iid, answer in recorded.items()})
            waiting = [a for _, actions in pending for a in actions]
            questions = [a.args.get("question") for a in waiting if a.name == ASK_USER_TOOL]
            if questions:
                raise RunError(
                    f"thread {thread_id} waits for an answer to {questions[0]!r}; answer it "
                    "(--answer TEXT)"
                )
            names = ", ".join(a.name for a in waiting)
            raise RunError(
                f"thread {thread_id} waits for approval of {names}; approve, edit or reject it"
            )
        if state.next or state.tasks:
            # A run that was cut off: its last checkpoint still has tasks (some may have saved
            # their writes already, which is why `next` alone can be empty); None continues it.
            return None
        raise RunError(f"thread {thread_id} has nothing to continue; send a message")

    def _answer_dangling(self, state: Any) -> list[Any]:
        """For a new message on a thread whose history has unanswered tool calls (a killed run,
        an approval left for a new message): the history again with each such call answered as
        cancelled, to replace the saved one; nothing otherwise (the usual case)."""
        from runner.middleware.patch_tool_calls import patch_dangling

        if state is None:
            return []
        messages = (state.values or {}).get("messages") or []
        if state.tasks:
            # A step left unfinished: a new message drops the writes its finished tasks saved,
            # which `values` shows applied; patch the history the checkpoint itself holds.
            saved = self.home.checkpointer.get_tuple(state.config)
            values = saved.checkpoint.get("channel_values", {}) if saved is not None else {}
            messages = values.get("messages") or []
        patched = patch_dangling(messages)
        if patched is None:
            return []
        from langchain_core.messages import RemoveMessage
        from langgraph.graph.message import REMOVE_ALL_MESSAGES

        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *patched]

    def stream(
        self,
        message: str | None = None,
        *,
        thread_id: str | None = None,
        decisions: Sequence[Decision] | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> Generator[RunEvent, None, None]:
        """Run one turn and yield its events: `Start` first, and last `Final`, `Interrupt` or
        `Error`.

        Give a `message` to send, `decisions` to answer pending approvals, or neither to continue
        a run that was cut off. Failures become an `Error` event (never an exception), except
        `KeyboardInterrupt`.

        The turn holds the thread's lease (`runner.threads_db`): while it runs, another process
        (or session) gets a `ThreadBusy` error, or waits up to the session's `wait` seconds.
        Decisions are claimed before the lease is taken: of two answers to one approval, the
        first recorded runs, the other gets `AlreadyAnswered`.

        `attachments` (`runner.attachments.read_attachment`) go with `message`: images as image
        content, text inlined, other files into the agent's backend under /attachments/.
        """
        new_thread = thread_id is None
        thread_id = thread_id or new_thread_id()
        if (
            not new_thread
            and self.home.thread(thread_id) is None
            and not self.state(thread_id).values
        ):
            yield Error(
                agent=self.name,
                message=f"no thread {thread_id!r} in {self.home.path}",
                kind="RunError",
                thread_id=thread_id,
            )
            return
        claimed: dict[str, Any] | None = None
        fresh = False
        kept = self._kept
        try:
            if decisions is not None:
                claimed, fresh = self._claim(thread_id, decisions)
            try:
                held = kept.get(thread_id) if kept is not None else None
                lease = held or self.home.lease.acquire(thread_id)
            except threads_db.ThreadBusy as busy:
                if not self.wait:
                    raise
                yield RunWarning(
                    agent=self.name,
                    code="thread_busy",
                    message=f"thread {thread_id} is being run by another process "
                    f"({busy.holder.describe()}); waiting for it",
                )
                lease = self.home.lease.acquire(thread_id, wait=self.wait)
        except threads_db.ThreadBusy as exc:
            if fresh and claimed:  # it could not run: the approval waits as before
                self.home.answers.withdraw(thread_id, list(claimed))
            yield Error(agent=self.name, message=str(exc), kind="ThreadBusy", thread_id=thread_id)
            return
        except RunnerError as exc:
            yield Error(
                agent=self.name, message=str(exc), kind=type(exc).__name__, thread_id=thread_id
            )
            return
        if kept is not None:
            kept[thread_id] = lease
        try:
            outcome = yield from self._turn(thread_id, new_thread, message, claimed, attachments)
        finally:
            if kept is None:
                lease.release()
        if outcome is not None:
            yield outcome  # after the release: whoever reads it may go on with the thread

    def _turn(
        self,
        thread_id: str,
        new_thread: bool,
        message: str | None,
        claimed: dict[str, Any] | None,
        attachments: Sequence[Attachment] = (),
    ) -> Generator[RunEvent, None, RunEvent | None]:
        """The events of one turn, with the lease held; returns the last one (the outcome)."""
        from langgraph.errors import GraphRecursionError

        # The one read of the thread's state this turn, with its lease held: its input, the
        # calls already shown, and (unless the turn stops for approval) its outcome come from it
        # and from the stream.
        state = self._state_at_start(thread_id) if not new_thread else None
        self._finished = None
        try:
            graph_input = self._input(thread_id, message, claimed, state or _Finished(values={}))
            if attachments and message is not None:
                from runner.attachments import attach

                values = dict(state.values or {}) if state is not None else {}
                content, files = attach(self, thread_id, message, list(attachments), values)
                graph_input["messages"][-1].content = content
                if files:
                    graph_input["files"] = files
        except RunnerError as exc:
            return Error(
                agent=self.name, message=str(exc), kind=type(exc).__name__, thread_id=thread_id
            )
        if message is not None:
            self.home.register(
                thread_id, agent=self.name, spec=self.spec.source, first_message=message
            )
        started = None if new_thread else self.home.settings(thread_id)
        self.home.remember_settings(thread_id, self.settings)
        yield Start(agent=self.name, thread_id=thread_id)
        if self.no_sandbox is not None:
            yield self.no_sandbox
        if started is not None and started != self.settings:
            yield RunWarning(
                agent=self.name,
                code="thread_settings_changed",
                message=f"thread {thread_id} was started with {started.describe()}; this run "
                f"uses {self.settings.describe()}",
            )
        callbacks = []
        if self.record_path is not None:
            recorder = _Recorder(self.record_path, main_agent=self.name, append=not new_thread)
            callbacks.append(recorder.handler)
        existing = (state.values or {}).get("messages", []) if state is not None else []
        translator = EventTranslator(
            self.name,
            seen_calls={c["id"] for m in existing if m.type == "ai" for c in m.tool_calls},
            seen_results={m.tool_call_id for m in existing if m.type == "tool"},
            seen_replies={m.id for m in existing if m.type == "ai" and m.id},
            prices=self.prices,
        )
        config = self._config(thread_id, callbacks)
        final_values: dict[str, Any] | None = None
        try:
            # durability="sync": each checkpoint is committed before the next step starts, so a
            # killed process loses at most the step it was in (and the tool journal keeps what
            # that step's finished tool calls returned).
            # "values" of the main graph (not its subgraphs) give the state the turn ends with,
            # so its outcome needs no second read of the checkpoint.
            modes: Any = ["messages", "updates", "custom", "values"]
            for namespace, mode, data in self.graph.stream(
                graph_input,
                config,
                stream_mode=modes,
                subgraphs=True,
                durability=DURABILITY,
            ):
                if mode == "values":
                    if not namespace and isinstance(data, dict):
                        final_values = data
                    continue
                yield from translator.feed(namespace, mode, data)
        except GraphRecursionError:
            return Error(
                agent=self.name,
                kind="RecursionLimit",
                thread_id=thread_id,
                message=(
                    f"the agent took more than {self.resolved.recursion_limit} steps in one run; "
                    f"raise `limits.recursion`{_where(self.spec, ('limits', 'recursion'))} "
                    "if it needs more"
                ),
            )
        except RunnerError as exc:
            return Error(
                agent=self.name, message=str(exc), kind=type(exc).__name__, thread_id=thread_id
            )
        except Exception as exc:
            return Error(
                agent=self.name,
                message=describe_failure(exc, spec=self.spec),
                kind="ModelCallLimit" if _is_model_call_limit(exc) else type(exc).__name__,
                thread_id=thread_id,
            )
        finally:
            self.home.touch(thread_id)
        outcome = self._outcome(thread_id, translator.interrupt_agents, final_values)
        if isinstance(outcome, Final):
            yield from self._unused_replies(thread_id, final_values)
        warning = self._prune(thread_id)
        if warning is not None:
            yield warning
        if isinstance(outcome, Final) and final_values is not None:
            latest = self.home.retention.latest_checkpoint_id(thread_id)
            if latest is not None:
                self._finished = (thread_id, latest, dict(final_values))
        return outcome

    def _unused_replies(
        self, thread_id: str, values: Mapping[str, Any] | None = None
    ) -> Iterator[RunWarning]:
        """At the end of a run on replay models: the replies no agent played, per cassette (a
        tool-name or subagent typo in a hand-written cassette leaves some unplayed). A subagent
        that an earlier process of this thread called is not counted: its replies were played
        there, where this process cannot see."""
        if not self._cassettes:
            return
        from runner.loader import display_path

        if values is None:
            values = self.values(thread_id)
        messages = values.get("messages", [])
        main_played = 1 + max(
            (
                int(m.response_metadata.get("replay_index", -1))
                for m in messages
                if m.type == "ai" and m.response_metadata.get("replay_agent") == self.name
            ),
            default=-1,
        )
        earlier = {
            str(c["args"].get("subagent_type"))
            for m in messages
            if m.type == "ai"
            for c in m.tool_calls
            if c["name"] == "task" and isinstance(c.get("args"), dict)
        }
        for path, cassette in self._cassettes.items():
            unused = [
                (agent, played, total)
                for agent, played, total in cassette.unused(self.name, main_played, thread_id)
                if agent == self.name or played or agent not in earlier
            ]
            elsewhere = self._played_by_other_files(
                path, {a for a, played, _ in unused if not played}
            )
            left = [
                f"{agent} played {played} of {total}"
                for agent, played, total in unused
                if agent not in elsewhere
            ]
            if left:
                yield RunWarning(
                    agent=self.name,
                    code="unused_replies",
                    message=f"replay cassette {display_path(path)} has replies no agent "
                    f"played: {'; '.join(left)} (a misspelt tool or subagent name in it, or "
                    "a run that took another path)",
                )

    def _played_by_other_files(self, cassette: Path, names: set[str]) -> set[str]:
        """Which of `names` (agents with no reply played) no agent of this build has, but an
        agent file in the cassette's folder plays: a shared cassette holds their replies."""
        from runner.static_tools import static_agents
        from runner.validate import agents_playing

        mine = {a.name for a in static_agents(self.spec)}
        mine |= {name + "/summary" for name in mine}
        foreign = names - mine
        if not foreign:
            return set()
        theirs: set[str] = set()
        for spec in agents_playing(cassette):
            theirs |= {a.name for a in static_agents(spec)}
        theirs |= {name + "/summary" for name in theirs}
        return foreign & theirs

    def _state_at_start(self, thread_id: str) -> Any:
        """The thread's state as this turn finds it: what the last turn of this session ended
        with when nothing has written to the thread since (a finished turn leaves no task and
        no approval pending), else read from its latest checkpoint."""
        finished = self._finished
        if (
            finished is not None
            and finished[0] == thread_id
            and self.home.retention.latest_checkpoint_id(thread_id) == finished[1]
        ):
            return _Finished(values=finished[2])
        return self.state(thread_id)

    def _prune(self, thread_id: str) -> RunWarning | None:
        """Remove the thread's checkpoints that nothing needs any more (`runner.retention`);
        a failure costs only space, so it is a warning."""
        retention = self.home.retention
        if self.keep_checkpoints == "all":
            return None
        keep = self.keep_checkpoints or retention.effective_keep()
        try:
            retention.prune(thread_id, keep)
            retention.reclaim()
        except self.home.db.errors as exc:
            return RunWarning(
                agent=self.name,
                code="retention",
                message=f"old checkpoints of thread {thread_id} were not removed: {exc}",
            )
        return None

    def _outcome(
        self, thread_id: str, agents: Mapping[str, str], final_values: Mapping[str, Any] | None
    ) -> RunEvent:
        """`Interrupt` when the thread now waits for approval, else `Final`. A turn that raised
        no interrupt (none reached the stream) leaves none pending: every approval waiting when
        it started was answered (`_input` refuses otherwise) or cancelled by a new message. So
        only a turn that stopped for approval, or one the stream gave no state for, reads the
        checkpoint again."""
        if agents or final_values is None:
            state = self.state(thread_id)
            pending = pending_actions(state, agents)
            if pending:
                return Interrupt(
                    agent=self.name,
                    thread_id=thread_id,
                    actions=[action for _, actions in pending for action in actions],
                )
            final_values = state.values or {}
        values = final_values
        messages = values.get("messages", [])
        last_ai = next((m for m in reversed(messages) if m.type == "ai"), None)
        direct = {t.name for t in self.resolved.tools if t.return_direct}
        if messages and messages[-1].type == "tool" and messages[-1].name in direct:
            last_ai = messages[-1]  # a `return_direct` tool's result is the answer
        structured = values.get("structured_response")
        if structured is not None and hasattr(structured, "model_dump"):
            structured = structured.model_dump()
        return Final(
            agent=self.name,
            thread_id=thread_id,
            content=_text_of(last_ai.content) if last_ai is not None else "",
            structured_response=structured,
        )

    def run(
        self,
        message: str | None = None,
        *,
        thread_id: str | None = None,
        decisions: Sequence[Decision] | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> RunResult:
        events = list(
            self.stream(message, thread_id=thread_id, decisions=decisions, attachments=attachments)
        )
        last = events[-1] if events else None
        tid = getattr(last, "thread_id", None) or thread_id or ""
        return RunResult(thread_id=tid, events=events)

    def close(self) -> None:
        """Stop what the agent started (MCP servers) and close the database."""
        try:
            self.resolved.close()
        finally:
            self.home.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _prices_by_agent(agent: ResolvedAgent) -> dict[str, dict[str, PriceSpec]]:
    """Agent name -> the prices of its models, for every agent of the tree that has some."""
    found: dict[str, dict[str, PriceSpec]] = {}
    pending = [agent]
    while pending:
        current = pending.pop()
        if current.name in found:
            continue
        if current.model.prices:
            found[current.name] = dict(current.model.prices)
        pending += [sub.agent for sub in current.subagents if sub.agent is not None]
    return found


def _no_sandbox_warning(agent: ResolvedAgent) -> RunWarning | None:
    """The `no_sandbox` warning a run starts with when some agent's `execute` asked for
    `sandbox: auto` and this machine has no working sandbox (None when all are sandboxed).

    Said at the start of every run, before the model can call `execute` (or the user approve a
    command): it is a fact about the run's setup, so one place says it once per run, instead of
    the execute tool keeping per-run memory in a middleware shared by many runs."""
    names: list[str] = []
    reasons: set[str] = set()
    pending, seen = [agent], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        tools = getattr(current.harness.get("filesystem"), "tool_names", ())
        backend = current.backend if "execute" in tools else None
        reason = backend.unsandboxed_because() if backend is not None else None
        if reason is not None:
            names.append(current.name)
            reasons.add(reason)
        pending += [sub.agent for sub in current.subagents if sub.agent is not None]
    if not names:
        return None
    return RunWarning(
        agent=agent.name,
        code="no_sandbox",
        message=(
            f"execute runs WITHOUT a sandbox for {', '.join(sorted(names))}: commands have "
            f"agentctl's rights on this machine ({'; '.join(sorted(reasons))}). Set "
            "`sandbox: none` on the backend to run unsandboxed on purpose."
        ),
    )


def describe_failure(exc: BaseException, *, spec: AgentSpec | None = None) -> str:
    """One line for an exception that ended a run; for a limit of the spec: which limit, its
    number, and where the spec sets it."""
    name = type(exc).__name__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else name
    if _is_model_call_limit(exc):
        limit = getattr(exc, "run_limit", None) or getattr(exc, "thread_limit", None)
        return (
            f"the run stopped at its limit of {limit} model calls; raise "
            f"`limits.model_calls`{_where(spec, ('limits', 'model_calls'))} if the agent needs more"
        )
    from runner.models import describe_provider_error

    provider_error = describe_provider_error(exc)
    if provider_error is not None:
        return provider_error
    if "limit" in name.lower():
        return f"{text} (raise the limit under `limits:` in the spec if the agent needs more)"
    return f"{name}: {text}"


def _is_model_call_limit(exc: BaseException) -> bool:
    return type(exc).__name__ == "ModelCallLimitExceededError"


def _where(spec: AgentSpec | None, path: tuple[str, ...]) -> str:
    """` (agent.yaml:12:16)` where the spec sets `path`, ` in agent.yaml` when it does not."""
    if spec is None or spec.source is None:
        return " in the spec"
    value: Any = spec
    for key in path:
        value = getattr(value, key, None)
    problem = spec.problem(path, "")
    if value is None or not problem.line:
        return f" in {problem.file}"
    return f" ({problem.file}:{problem.line}:{problem.col})"


def to_json_line(event: RunEvent) -> str:
    return json.dumps(event.to_dict(), ensure_ascii=False, default=str)
