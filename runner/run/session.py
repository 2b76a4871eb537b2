"""Run agents on persistent threads and report what happens as `RunEvent`s.

A `Home` (`runner.threads`) is the thread database, by default the SQLite file
`$AGENTCTL_HOME/agentctl.db` (default home `~/.agentctl`): LangGraph
checkpoints (every thread, resumable from another process, approvals pending included), the
LangGraph store (`store` backends), and a small registry of threads for `agentctl threads`.

A `Session` is one built agent in a home. `stream()` runs one turn on a thread (a new message, an
answer to pending approvals, or the continuation of a run that was cut off) and yields events as
they happen; `run()` collects them.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from runner.agent.resolved import no_sandbox_warning, prices_by_agent
from runner.errors import RunError, RunnerError
from runner.events import (
    ASK_USER_TOOL,
    Action,
    Error,
    Final,
    Interrupt,
    RunEvent,
    RunWarning,
    Start,
)
from runner.replay.recorder import Recorder
from runner.run.answers import Decision, resume_values
from runner.run.options import RunOptions
from runner.run.replies import unused_replies
from runner.run.translate import EventTranslator, Shown, read_shown
from runner.threads import open_home
from runner.threads.guards import AlreadyAnswered, Lease, ThreadBusy
from runner.threads.home import (
    Home,
    ThreadSettings,
    new_thread_id,
)
from runner.threads.transcripts import pending_actions, text_of

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph

    from runner.agent.resolve import LocalContext, ResolvedAgent
    from runner.backends import FileInfo
    from runner.middleware.tallies import Tallies
    from runner.run.attachments import Attachment
    from runner.spec import AgentSpec
    from runner.spec.workflow import WorkflowSpec

__all__ = ["DURABILITY", "RunOptions", "RunResult", "Session", "describe_failure", "to_json_line"]


DURABILITY: Literal["sync"] = "sync"
"""LangGraph's checkpoint durability for every turn: each step's checkpoint is committed before
the next step starts ("async" would overlap the write with the next step, and a crash could lose
a finished step; "exit" would write only when the run ends)."""


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


@dataclass(frozen=True)
class _Finished:
    """The parts of a LangGraph `StateSnapshot` a turn reads, for a thread that finished its
    last turn: its values, and no task or approval pending."""

    values: dict[str, Any]
    next: tuple[str, ...] = ()
    tasks: tuple[Any, ...] = ()
    interrupts: tuple[Any, ...] = ()


@dataclass(frozen=True)
class _Turn:
    """The thread a turn runs on: whether it is new, whether its row in the thread registry
    exists, and the lease the turn lets go at its end (None when the session keeps it).
    `last`: what this session's last turn left, when it ran on this thread (its registration
    and settings are taken from it unless the thread has moved since)."""

    thread_id: str
    new: bool
    registered: bool
    lease: Lease | None
    last: _LastTurn | None = None


@dataclass(frozen=True)
class _LastTurn:
    """What a turn of this session that finished left on its thread: the latest checkpoint's
    id and the values there, and the thread's registration and settings as they then were."""

    thread_id: str
    checkpoint_id: str
    values: dict[str, Any]
    registered: bool
    started: ThreadSettings | None


# --------------------------------------------------------------------------- sessions


class Session:
    """One built agent bound to a home (SQLite checkpoints, store, thread registry). Given a
    workflow (a file with `workflow:`, or a `WorkflowSpec`), a `WorkflowSession`."""

    def __new__(cls, spec_or_path: Any = None, *args: Any, **kwargs: Any) -> Session:
        if cls is Session and _is_workflow(spec_or_path):
            return super().__new__(WorkflowSession)
        return super().__new__(cls)

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
        options: RunOptions | None = None,
    ) -> None:
        """`keep_checkpoints`: how many of each thread's latest checkpoints a turn leaves
        (`"all"`: every one); by default the database's setting, else
        `runner.threads.retention.DEFAULT_KEEP`. See `runner.threads.retention` for what is always
        kept.

        `options`: every keyword but `home` as one `RunOptions`, instead of the keywords (giving
        both is a `TypeError`)."""
        from runner.agent.build import _as_spec, build_graph
        from runner.agent.resolve import Resolver
        from runner.middleware.patch_tool_calls import DanglingCheck
        from runner.middleware.tallies import Tallies

        keywords = RunOptions(
            model=model,
            vars=vars or {},
            db=db,
            record=record,
            local_context=local_context,
            allow_unused_vars=allow_unused_vars,
            keep_checkpoints=keep_checkpoints,
            wait=wait,
        )
        self.options = opts = _chosen_options(options, keywords)
        self.spec = _as_spec(spec_or_path, opts.vars, allow_unused_vars=opts.allow_unused_vars)
        self.home = home or open_home(opts.db)
        resolver = Resolver(model=opts.model, local_context=opts.local_context)
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
        self.recursion_limit = self.resolved.recursion_limit
        self.record_path = Path(opts.record) if opts.record else None
        self.no_sandbox = no_sandbox_warning(self.resolved)
        self.settings = ThreadSettings.of(opts.model, opts.vars)
        self.prices = prices_by_agent(self.resolved)
        self.keep_checkpoints = opts.keep_checkpoints
        # What a turn of ours that finished left: the next turn on that thread in this session
        # starts from it unless the thread has moved since (another process,
        # `graph.update_state`), instead of reading and decoding it again.
        self._finished: _LastTurn | None = None
        self._database_keep: tuple[int | None] | None = None
        """The database's `keep_checkpoints` setting, read at this session's first prune."""
        self.wait = opts.wait
        """Seconds a turn waits for a thread another process runs (None: fail at once)."""
        self._kept: dict[str, Lease] | None = None
        # Each thread's history read once across turns (runner.middleware.tallies): a turn reads
        # only the messages added since the last, for the calls dangling and the calls shown.
        self._dangling = DanglingCheck()
        self._shown: Tallies[Shown] = Tallies(Shown, read_shown)

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
            "recursion_limit": self.recursion_limit,
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

    def _claim(self, thread_id: str, decisions: Sequence[Decision]) -> tuple[dict[str, Any], bool]:
        """Answer the thread's pending approvals: a compare-and-set on the pending interrupts
        (`runner.threads.guards.AnswerLog`). Returns the resume value per interrupt, and whether
        this call recorded it; raises `AlreadyAnswered` when another answer came first.

        An answer whose process died before the thread went on is still the answer: the same
        decisions again finish it, other ones are refused."""
        pending = pending_actions(self.state(thread_id))
        if not pending:
            last = self.home.answers.last(thread_id)
            if last is not None:
                raise AlreadyAnswered(
                    f"thread {thread_id} has no approval waiting: {last.describe()}"
                )
            hint = ""
            state = self.state(thread_id)
            if state.next or state.tasks:  # cut off before it reached the approval
                import shlex

                from runner.errors import display_path

                source = self.spec.source
                spec = shlex.quote(display_path(source)) if source else "SPEC"
                hint = (
                    "; its last run was cut off before it asked: continue it with "
                    f"`agentctl run {spec} --thread {thread_id}` alone"
                )
            raise RunError(f"thread {thread_id} has no approval waiting; nothing to answer{hint}")
        answers = resume_values(thread_id, pending, decisions)
        earlier = self.home.answers.claim(thread_id, answers)
        if earlier is None:
            return {iid: resume for iid, (_, resume) in answers.items()}, True
        recorded = self.home.answers.recorded(thread_id, list(answers))
        same = set(recorded) == set(answers) and all(
            recorded[iid].resume == resume for iid, (_, resume) in answers.items()
        )
        if same and all(a.process_gone for a in recorded.values()):
            return {iid: a.resume for iid, a in recorded.items()}, False
        raise AlreadyAnswered(f"thread {thread_id}: {earlier.describe()}")

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
                raise AlreadyAnswered(f"thread {thread_id}: {told}")
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
            from runner.threads.values import checkpoint_values

            saved = self.home.checkpointer.get_tuple(state.config)
            values = checkpoint_values(self.home.checkpointer, saved) if saved else {}
            messages = values.get("messages") or []
        patched = patch_dangling(messages, dangling=self._dangling)
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

        The turn holds the thread's lease (`runner.threads.guards`): while it runs, another process
        (or session) gets a `ThreadBusy` error, or waits up to the session's `wait` seconds.
        Decisions are claimed before the lease is taken: of two answers to one approval, the
        first recorded runs, the other gets `AlreadyAnswered`.

        `attachments` (`runner.run.attachments.read_attachment`) go with `message`: images as image
        content, text inlined, other files into the agent's backend under /attachments/.
        """
        new_thread = thread_id is None
        thread_id = thread_id or new_thread_id()
        last = self._finished if self._finished and self._finished.thread_id == thread_id else None
        if last is not None:  # checked once the lease is held: unless the thread moved since
            registered = last.registered
        else:
            registered = not new_thread and self.home.thread(thread_id) is not None
            if not new_thread and not registered and not self.state(thread_id).values:
                yield self._no_thread(thread_id)
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
            except ThreadBusy as busy:
                if not self.wait:
                    raise
                yield RunWarning(
                    agent=self.name,
                    code="thread_busy",
                    message=f"thread {thread_id} is being run by another process "
                    f"({busy.holder.describe()}); waiting for it",
                )
                lease = self.home.lease.acquire(thread_id, wait=self.wait)
        except ThreadBusy as exc:
            if fresh and claimed:  # it could not run: the approval waits as before
                self.home.answers.withdraw(thread_id, list(claimed))
            yield Error(agent=self.name, message=str(exc), kind="ThreadBusy", thread_id=thread_id)
            return
        except RunnerError as exc:
            yield self._error(exc, thread_id)
            return
        if kept is not None:
            kept[thread_id] = lease
        turn = _Turn(thread_id, new_thread, registered, None if kept is not None else lease, last)
        try:
            outcome = yield from self._turn(turn, message, claimed, attachments)
        finally:
            if kept is None:
                lease.release()  # if the turn's last transaction did not already
        if outcome is not None:
            yield outcome  # after the release: whoever reads it may go on with the thread

    def _turn(
        self,
        turn: _Turn,
        message: str | None,
        claimed: dict[str, Any] | None,
        attachments: Sequence[Attachment] = (),
    ) -> Generator[RunEvent, None, RunEvent | None]:
        """The events of one turn, with the lease held; returns the last one (the outcome)."""
        thread_id, new_thread = turn.thread_id, turn.new
        # The one read of the thread's state this turn, with its lease held: its input, the
        # calls already shown, and (unless the turn stops for approval) its outcome come from it
        # and from the stream.
        state = self._state_at_start(turn) if not new_thread else None
        self._finished = None
        if turn.last is not None and not isinstance(state, _Finished):
            # moved since this session's last turn on it: its registration as it is now
            registered = self.home.thread(thread_id) is not None
            if not registered and not (state.values if state is not None else None):
                return self._no_thread(thread_id)
            turn = replace(turn, registered=registered, last=None)
        try:
            graph_input = self._graph_input(thread_id, message, claimed, state, attachments)
        except RunnerError as exc:
            return self._error(exc, thread_id)
        started = self._started(turn)
        yield from self._opening(turn, message, started)
        callbacks = []
        if self.record_path is not None:
            recorder = Recorder(self.record_path, main_agent=self.name, append=not new_thread)
            callbacks.append(recorder.handler)
        translator = self._translator(state)
        config = self._config(thread_id, callbacks)
        final_values: dict[str, Any] | None = None
        failed: Exception | None = None
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
        except Exception as exc:
            failed = exc
        except BaseException:  # Ctrl-C, or the caller stopped reading: the lease goes after
            self.home.touch(thread_id)
            raise
        if failed is not None:
            self._end(turn, prune=False)
            return self._error(failed, thread_id)
        outcome = self._outcome(thread_id, translator.interrupt_agents, final_values)
        if isinstance(outcome, Final):
            yield from self._unused_replies(thread_id, final_values)
        warning = self._end(turn, prune=True)
        if warning is not None:
            yield warning
        if isinstance(outcome, Final) and final_values is not None:
            latest = self.home.last_written(thread_id)
            if latest is not None:
                # registered now: by this turn if it was not (a message, a workflow's start)
                registered = turn.registered or turn.new or message is not None
                self._finished = _LastTurn(
                    thread_id, latest, dict(final_values), registered, started or self.settings
                )
        return outcome

    def _no_thread(self, thread_id: str) -> Error:
        return Error(
            agent=self.name,
            message=f"no thread {thread_id!r} in {self.home.path}",
            kind="RunError",
            thread_id=thread_id,
        )

    def _started(self, turn: _Turn) -> ThreadSettings | None:
        """The settings the thread was started with (None for a new thread, or one started
        before they were kept): as this session's last turn on it left them, else read."""
        if turn.new:
            return None
        if turn.last is not None:
            return turn.last.started
        return self.home.settings(turn.thread_id)

    def _translator(self, state: Any) -> EventTranslator:
        """The turn's event translator, knowing the calls and replies the thread has shown."""
        existing = (state.values or {}).get("messages", []) if state is not None else []
        shown = self._shown(existing)
        return EventTranslator(
            self.name,
            seen_calls=shown.calls,
            seen_results=shown.results,
            seen_replies=shown.replies,
            prices=self.prices,
        )

    def _graph_input(
        self,
        thread_id: str,
        message: str | None,
        claimed: dict[str, Any] | None,
        state: Any,
        attachments: Sequence[Attachment],
    ) -> dict[str, Any]:
        """The graph's input for this turn, the message's attachments included (`RunnerError`
        when an answer or an attachment cannot be used)."""
        graph_input = self._input(thread_id, message, claimed, state or _Finished(values={}))
        if attachments and message is not None:
            from runner.run.attachments import attach

            values = dict(state.values or {}) if state is not None else {}
            content, files = attach(
                self.resolved, self.home.store, thread_id, message, list(attachments), values
            )
            graph_input["messages"][-1].content = content
            if files:
                graph_input["files"] = files
        return graph_input

    def _opening(
        self, turn: _Turn, message: str | None, started: ThreadSettings | None
    ) -> Iterator[RunEvent]:
        """Register a new thread (one commit), then the turn's first events: `Start`, and the
        warnings about the sandbox and about settings that changed since the thread was
        `started` with."""
        thread_id = turn.thread_id
        with self.home.db.batched():
            if message is not None and not turn.registered:
                self.home.register(
                    thread_id, agent=self.name, spec=self.spec.source, first_message=message
                )
            if started is None:  # a thread keeps its first settings: written once
                self.home.remember_settings(thread_id, self.settings)
        if turn.registered:
            # its time of last use (when its last turn began) goes with the next commit: the
            # turn's first checkpoint
            self.home.touch(thread_id, later=True)
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

    def _error(self, exc: Exception, thread_id: str) -> Error:
        """The `Error` a turn that raised `exc` ends with."""
        from langgraph.errors import GraphRecursionError

        if isinstance(exc, GraphRecursionError):
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
        if isinstance(exc, RunnerError):
            return Error(
                agent=self.name, message=str(exc), kind=type(exc).__name__, thread_id=thread_id
            )
        return Error(
            agent=self.name,
            message=describe_failure(exc, spec=self.spec),
            kind="ModelCallLimit" if _is_model_call_limit(exc) else type(exc).__name__,
            thread_id=thread_id,
        )

    def _unused_replies(
        self, thread_id: str, values: Mapping[str, Any] | None = None
    ) -> Iterator[RunWarning]:
        """At the end of a run on replay models: the replies no agent played, per cassette."""
        if not self._cassettes:
            return
        if values is None:
            values = self.values(thread_id)
        yield from unused_replies(self._cassettes, self.spec, self.name, thread_id, values)

    def _state_at_start(self, turn: _Turn) -> Any:
        """The thread's state as this turn finds it: what the last turn of this session ended
        with when nothing has written to the thread since (a finished turn leaves no task and
        no approval pending: a `_Finished`), else read from its latest checkpoint."""
        last = turn.last
        if last is None:
            return self.state(turn.thread_id)
        # read with the lease when it was just taken (Postgres: in the same round trip)
        seen = turn.lease.latest if turn.lease is not None else None
        latest = seen[0] if seen else self.home.retention.latest_checkpoint_id(turn.thread_id)
        if latest == last.checkpoint_id:
            return _Finished(values=last.values)
        return self.state(turn.thread_id)

    def _end(self, turn: _Turn, *, prune: bool) -> RunWarning | None:
        """The thread's bookkeeping after a turn, in one commit at most: the checkpoints the
        turn made obsolete (`_prune`, when `prune`), with any deferred write (the time of last
        use) not committed yet; then the lease let go (unless the session keeps it: an unlock,
        no write). A warning when the pruning failed."""
        with self.home.db.batched():
            self.home.turn_ended(turn.thread_id)
            warning = self._prune(turn.thread_id) if prune else None
        if turn.lease is not None:
            turn.lease.release()
        return warning

    def _prune(self, thread_id: str) -> RunWarning | None:
        """Remove the thread's checkpoints that nothing needs any more (`runner.threads.retention`);
        a failure costs only space, so it is a warning. Keeping all, `prune` removes nothing but
        still has the next step snapshot every delta channel when due, so that a lower `keep`
        can prune later."""
        retention = self.home.retention
        if self.keep_checkpoints == "all":
            keep = None
        else:
            if self._database_keep is None:  # read once: `threads keep-checkpoints` is rare
                self._database_keep = (retention.effective_keep(),)
            keep = self.keep_checkpoints or self._database_keep[0]
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
            content=text_of(last_ai.content) if last_ai is not None else "",
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

    def close_agent(self) -> None:
        """Stop what the agent started (MCP servers), leaving the database open."""
        self.resolved.close()

    def close(self) -> None:
        """Stop what the agent started (MCP servers) and close the database."""
        try:
            self.close_agent()
        finally:
            self.home.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chosen_options(options: RunOptions | None, keywords: RunOptions) -> RunOptions:
    """A session's options: `options`, or the keywords given instead (both is a `TypeError`);
    a `keep_checkpoints` below 1 is a `RunError`."""
    if options is not None and keywords.given():
        raise TypeError(
            f"Session: give options= or the keywords ({', '.join(keywords.given())}), not both"
        )
    chosen = options if options is not None else keywords
    if isinstance(chosen.keep_checkpoints, int) and chosen.keep_checkpoints < 1:
        raise RunError("keep_checkpoints: keep at least 1 (or 'all')")
    return chosen


def _is_workflow(spec_or_path: Any) -> bool:
    # A `WorkflowSpec` cannot exist before its module is imported: an agent's run does not
    # import the workflow models to find it is not given one.
    workflow = sys.modules.get("runner.spec.workflow")
    if workflow is not None and isinstance(spec_or_path, workflow.WorkflowSpec):
        return True
    if isinstance(spec_or_path, str | os.PathLike):
        from runner.load.loader import is_workflow_file

        return is_workflow_file(spec_or_path)
    return False


class WorkflowSession(Session):
    """A workflow bound to a home: each run is one thread, started by `stream()` without a
    message (the workflow's `vars` are its input; a message, when given, is `vars.message`),
    continued after an approval or a crash with `stream(thread_id=...)` as an agent's."""

    def __init__(
        self,
        spec_or_path: WorkflowSpec | str | os.PathLike[str],
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
        options: RunOptions | None = None,
    ) -> None:
        from runner.spec.workflow import WorkflowSpec
        from runner.workflow.build import build_workflow, steps_of
        from runner.workflow.graph import agent_key

        keywords = RunOptions(
            model=model,
            vars=vars or {},
            db=db,
            record=record,
            local_context=local_context,
            allow_unused_vars=allow_unused_vars,
            keep_checkpoints=keep_checkpoints,
            wait=wait,
        )
        self.options = opts = _chosen_options(options, keywords)
        if opts.record is not None:
            raise RunError("--record records one agent's replies; it does not take a workflow")
        if isinstance(spec_or_path, WorkflowSpec):
            if opts.vars:
                raise RunError("`vars` apply when loading a workflow; pass a path")
            spec = spec_or_path
        else:
            from runner.check.workflow import load_checked_workflow

            spec = load_checked_workflow(
                spec_or_path, vars=opts.vars, allow_unused_vars=opts.allow_unused_vars
            )
        self.spec = spec  # type: ignore[assignment]
        self.workflow_spec = spec
        self.home = home or open_home(opts.db)
        self.built = build_workflow(
            spec,
            model=opts.model,
            checkpointer=self.home.checkpointer,
            store=self.home.store,
            local_context=opts.local_context,
        )
        self.graph = self.built.graph
        self._cassettes = self.built.cassettes
        self.name = spec.name
        self.record_path = None
        self.no_sandbox = next(
            (w for a in self.built.agents.values() if (w := no_sandbox_warning(a))), None
        )
        self.settings = ThreadSettings.of(opts.model, opts.vars)
        self.prices = {}
        for agent in self.built.agents.values():
            self.prices.update(prices_by_agent(agent))
        # every checkpoint of a run is kept unless asked otherwise: `threads fork --at STEP`
        # starts from the one after any step
        self.keep_checkpoints = opts.keep_checkpoints or "all"
        self._finished = None
        self._database_keep = None
        self.wait = opts.wait
        self._kept = None
        self.steps: dict[str, str | None] = {
            step.id: agent_key(step) if hasattr(step, "agent") or hasattr(step, "choose") else None
            for step in steps_of(spec)
        }
        self.recursion_limit = spec.limits.recursion or WORKFLOW_RECURSION_LIMIT

    def files(self, thread_id: str | None, *, limit: int = 200) -> list[FileInfo]:
        return []

    def _translator(self, state: Any) -> EventTranslator:
        return EventTranslator(self.name, prices=self.prices, steps=self.steps)

    def _graph_input(
        self,
        thread_id: str,
        message: str | None,
        claimed: dict[str, Any] | None,
        state: Any,
        attachments: Sequence[Attachment],
    ) -> Any:
        if attachments:
            raise RunError("a workflow takes no attachments; pass files as inputs (--var)")
        started = state is not None and bool((state.values or {}).get("vars") is not None)
        if claimed is not None or started:
            if message is not None:
                raise RunError(
                    f"thread {thread_id} is a run of workflow {self.name!r}; start a new run "
                    "(no --thread) or continue this one without a message"
                )
            return self._input(thread_id, None, claimed, state or _Finished(values={}))
        return self.initial_input(message)

    def initial_input(self, message: str | None = None) -> dict[str, Any]:
        """The graph input that starts a run: the vars, and each state field's default."""
        variables = dict(self.workflow_spec.vars)
        if message is not None:
            variables["message"] = message
        defaults = {
            name: field.default
            for name, field in self.workflow_spec.state.items()
            if field.default is not None
        }
        return {"vars": variables, "state": defaults}

    def _opening(
        self, turn: _Turn, message: str | None, started: ThreadSettings | None
    ) -> Iterator[RunEvent]:
        # A workflow's run may start without a message: its thread is registered all the same.
        if turn.new and message is None and not turn.registered:
            self.home.register(
                turn.thread_id, agent=self.name, spec=self.spec.source, first_message=""
            )
        yield from super()._opening(turn, message, started)

    def _error(self, exc: Exception, thread_id: str) -> Error:
        from langgraph.errors import GraphRecursionError

        if isinstance(exc, GraphRecursionError):
            return Error(
                agent=self.name,
                kind="RecursionLimit",
                thread_id=thread_id,
                message=f"the workflow took more than {self.recursion_limit} steps in one run; "
                f"raise `limits.recursion`{_where(self.spec, ('limits', 'recursion'))} if it "
                "needs more",
            )
        return super()._error(exc, thread_id)

    def _unused_replies(
        self, thread_id: str, values: Mapping[str, Any] | None = None
    ) -> Iterator[RunWarning]:
        return iter(())

    def _outcome(
        self, thread_id: str, agents: Mapping[str, str], final_values: Mapping[str, Any] | None
    ) -> RunEvent:
        """`Interrupt` when a step waits for a person, else `Final` with the workflow's output
        (text as `content`; a mapping or list also as `structured_response`)."""
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
        output = final_values.get("output")
        if isinstance(output, dict | list):
            content = json.dumps(output, ensure_ascii=False, default=str)
            return Final(
                agent=self.name, thread_id=thread_id, content=content, structured_response=output
            )
        return Final(
            agent=self.name, thread_id=thread_id, content="" if output is None else str(output)
        )

    def close_agent(self) -> None:
        self.built.close()


WORKFLOW_RECURSION_LIMIT = 10_000
"""LangGraph's step limit for one workflow run: its agents' steps count within their own
subgraphs, so this bounds the workflow's own steps (a loop's `max` bounds each loop)."""


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
    from runner.agent.models import describe_provider_error

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
