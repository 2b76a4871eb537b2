"""A thread's history and the thread database as a whole: the checkpoints of a thread, a fork
from one of them, search across threads, and pruning threads not used for a while (`agentctl
threads checkpoints/fork/search/prune`). Everything goes through `runner.threads.home.Home`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from runner.errors import RunError
from runner.threads.export import _config, _require, _role, latest_transcript
from runner.threads.transcripts import text_of
from runner.threads.values import checkpoint_values, materialized

if TYPE_CHECKING:
    from runner.threads.home import Home, ThreadInfo

__all__ = [
    "CheckpointInfo",
    "Fork",
    "Match",
    "PruneOutcome",
    "checkpoints",
    "fork_thread",
    "parse_age",
    "prune_threads",
    "search_threads",
]


# --------------------------------------------------------------------------- checkpoints


@dataclass(frozen=True)
class CheckpointInfo:
    """One kept checkpoint of the thread's main graph, newest first in `checkpoints`."""

    checkpoint_id: str
    step: int | None
    source: str | None
    """How it was made: input (a new message), loop (a step), update, fork."""
    created_at: str
    messages: int
    last: str
    """The last message then, in one line (`role: text`)."""
    waiting: list[str]
    """The tools it waited for approval of (empty when it did not wait)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint_id": self.checkpoint_id,
            "step": self.step,
            "source": self.source,
            "created_at": self.created_at,
            "messages": self.messages,
            "last": self.last,
            "waiting": self.waiting,
        }


def _summary(message: Any) -> str:
    text = " ".join(text_of(getattr(message, "content", "")).split())
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        text = (text + " " if text else "") + " ".join(f"▸{c.get('name')}" for c in calls)
    return f"{_role(message)}: {text}"


def checkpoints(home: Home, thread_id: str) -> list[CheckpointInfo]:
    """The main-graph checkpoints the thread keeps, newest first (what `threads fork --at`
    takes). Retention keeps the latest few, every one where it waited for approval, and forks;
    runs with `--keep-checkpoints all` keep every one."""
    _require(home, thread_id)
    found = []
    # read the list first: rebuilding values reads the saver again, which SQLite's saver does
    # not allow while its `list` cursor is open (one lock)
    for saved in list(home.checkpointer.list(_config(thread_id))):
        values = checkpoint_values(home.checkpointer, saved)
        messages = list(values.get("messages") or [])
        waiting = [
            str(request.get("name"))
            for _task, channel, value in saved.pending_writes or ()
            if channel == "__interrupt__"
            for interrupt in value or ()
            if isinstance(getattr(interrupt, "value", None), dict)
            for request in interrupt.value.get("action_requests", ())
        ]
        metadata = saved.metadata or {}
        step = metadata.get("step")
        found.append(
            CheckpointInfo(
                checkpoint_id=saved.config["configurable"]["checkpoint_id"],
                step=step if isinstance(step, int) else None,
                source=metadata.get("source"),
                created_at=str(saved.checkpoint.get("ts", "")),
                messages=len(messages),
                last=_summary(messages[-1]) if messages else "",
                waiting=waiting,
            )
        )
    return found


def _resolve_checkpoint(home: Home, thread_id: str, at: str | None) -> Any:
    """The checkpoint tuple `--at` names: a full id, a unique prefix of one, or (None) the
    latest."""
    if at is None:
        saved = home.checkpointer.get_tuple(_config(thread_id))
        if saved is None:
            raise RunError(f"thread {thread_id} has no checkpoint yet: nothing to fork from")
        return saved
    exact = home.checkpointer.get_tuple(_config(thread_id, at))
    if exact is not None:
        return exact
    after_step = _after_step(home, thread_id, at)
    if after_step is not None:
        return after_step
    ids = [c.checkpoint_id for c in checkpoints(home, thread_id)]
    matches = [cid for cid in ids if cid.startswith(at)]
    if len(matches) == 1:
        return home.checkpointer.get_tuple(_config(thread_id, matches[0]))
    shown = f"agentctl threads show {thread_id} --checkpoints"
    if not matches:
        raise RunError(
            f"thread {thread_id} has no checkpoint {at!r} (old ones are pruned unless runs keep "
            f"them with --keep-checkpoints all); list those it has with `{shown}`"
        )
    raise RunError(
        f"{at!r} starts {len(matches)} checkpoint ids of thread {thread_id}; give more of it "
        f"(`{shown}`)"
    )


def _trail_end(saved: Any) -> str | None:
    """The step a workflow's checkpoint comes right after (None: not a workflow's, or none)."""
    trail = (saved.checkpoint.get("channel_values") or {}).get("trail")
    return trail[-1] if isinstance(trail, list) and trail else None


def _after_step(home: Home, thread_id: str, step: str) -> Any:
    """For a workflow's thread: the latest checkpoint right after step `step` finished (its
    `trail`, the steps finished in order, ends with it); None when there is none."""
    for saved in home.checkpointer.list(_config(thread_id)):
        trail = (saved.checkpoint.get("channel_values") or {}).get("trail")
        if not isinstance(trail, list):
            return None  # not a workflow's thread
        if trail and trail[-1] == step:
            return saved
    return None


# --------------------------------------------------------------------------- fork


@dataclass(frozen=True)
class Fork:
    thread_id: str
    source: str
    checkpoint_id: str
    spec: str | None


def _copy(
    home: Home, saved: Any, new_thread: str, extra: dict[str, Any], *, with_writes: bool = True
) -> None:
    """Put one checkpoint tuple (and its pending writes: saved results of finished tasks, the
    approvals it waits for) into `new_thread`, keeping its id so the tasks it resumes keep
    theirs. `new_versions` names every channel: savers that store channel values apart from the
    checkpoint (Postgres) write only the versions named there."""
    checkpointer = home.checkpointer
    # the new thread has none of the source's earlier checkpoints to rebuild deltas from
    checkpoint, metadata = materialized(checkpointer, saved)
    namespace = saved.config["configurable"].get("checkpoint_ns", "")
    metadata = {**metadata, **extra}
    written = checkpointer.put(
        _config(new_thread, ns=namespace),
        checkpoint,
        metadata,
        dict(checkpoint.get("channel_versions") or {}),
    )
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in saved.pending_writes or () if with_writes else ():
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, writes in by_task.items():
        if any(channel == "__interrupt__" for channel, _ in writes):
            # A task that stopped for approval: the answer (`__resume__`) and what the task
            # wrote after it belong to the source's future, not to the fork's
            by_task[task_id] = [(c, v) for c, v in writes if c == "__interrupt__"]
    for task_id, writes in by_task.items():
        checkpointer.put_writes(written, writes, task_id)


def _with_state(saved: Any, thread_id: str, state: Mapping[str, Any]) -> Any:
    """The checkpoint tuple with fields of its workflow `state` set (the channel's version kept:
    the steps it would run next stay the same)."""
    import copy

    values = dict(saved.checkpoint.get("channel_values") or {})
    if not isinstance(values.get("trail"), list):
        raise RunError(
            f"thread {thread_id} is not a workflow's run: --set edits a workflow's state"
        )
    values["state"] = {**(values.get("state") or {}), **state}
    checkpoint = copy.copy(saved.checkpoint)
    checkpoint["channel_values"] = values
    return saved._replace(checkpoint=checkpoint)  # a NamedTuple


def fork_thread(
    home: Home,
    thread_id: str,
    *,
    at: str | None = None,
    state: Mapping[str, Any] | None = None,
) -> Fork:
    """A new thread that starts from checkpoint `at` of `thread_id` (default: its latest), as
    if the conversation had stopped there: `agentctl run SPEC --thread NEW` continues it (a new
    message, or the answer to the approval it waited for then). It is registered with the
    source's agent, spec and settings (model, vars).

    On a workflow's thread `at` may also be a step id: the checkpoint after the step last
    finished; the run goes on with the step after it. `state` sets fields of the workflow's
    state in the fork.

    A subagent that was in the middle of its run at that checkpoint (waiting for approval) is
    copied with it: its latest checkpoint that ran under the chosen one."""
    from runner.threads.home import new_thread_id

    info = _require(home, thread_id)
    saved = _resolve_checkpoint(home, thread_id, at)
    checkpoint_id = saved.config["configurable"]["checkpoint_id"]
    new_thread = new_thread_id()
    marker = {"agentctl_forked_from": {"thread_id": thread_id, "checkpoint_id": checkpoint_id}}
    # after a workflow's step: the steps that follow run in the fork, whatever the source's did
    after_step = at is not None and _trail_end(saved) == at
    if state:
        saved = _with_state(saved, thread_id, state)
    _copy(home, saved, new_thread, marker, with_writes=not after_step)
    latest_sub: dict[str, Any] = {}
    for sub in home.checkpointer.list(_config(thread_id, ns=None)) if not after_step else ():
        namespace = sub.config["configurable"].get("checkpoint_ns", "")
        parents = (sub.metadata or {}).get("parents") or {}
        if namespace and parents.get("") == checkpoint_id and namespace not in latest_sub:
            latest_sub[namespace] = sub  # list() is newest first
    for sub in latest_sub.values():
        _copy(home, sub, new_thread, marker)
    values = checkpoint_values(home.checkpointer, saved)
    first = next(
        (
            text_of(m.content)
            for m in values.get("messages") or ()
            if getattr(m, "type", "") == "human"
        ),
        info.first_message if info else "",
    )
    home.register(
        new_thread,
        agent=info.agent if info else str((saved.metadata or {}).get("agentctl_agent", "agent")),
        spec=info.spec if info else None,
        first_message=first,
    )
    settings = home.settings(thread_id)
    if settings is not None:
        home.remember_settings(new_thread, settings)
    return Fork(new_thread, thread_id, checkpoint_id, info.spec if info else None)


# --------------------------------------------------------------------------- search


@dataclass(frozen=True)
class Match:
    thread_id: str
    agent: str
    index: int
    """The message's position in the thread."""
    role: str
    snippet: str
    """The matching text with some context, on one line."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "agent": self.agent,
            "index": self.index,
            "role": self.role,
            "snippet": self.snippet,
        }


def _snippet(text: str, start: int, length: int, width: int = 90) -> str:
    flat = " ".join(text.split())
    # positions move when whitespace collapses: find the match again in the flattened text
    needle = " ".join(text[start : start + length].split())
    found = flat.lower().find(needle.lower()) if needle else -1
    if found < 0:
        return flat[:width]
    before = max(0, found - (width - len(needle)) // 2)
    piece = flat[before : before + width]
    return ("…" if before else "") + piece + ("…" if before + width < len(flat) else "")


def search_threads(
    home: Home, text: str, *, agent: str | None = None, limit: int | None = None
) -> Iterator[Match]:
    """Messages containing `text` (case-insensitive) in the latest state of every registered
    thread, newest thread first: their text, tool calls' names and arguments, tool results."""
    if not text.strip():
        raise RunError("search for some text (it was empty)")
    pattern = re.compile(re.escape(text), re.IGNORECASE)
    count = 0
    for info in home.threads(agent=agent):
        transcript = latest_transcript(home, info.thread_id)
        for index, message in enumerate(transcript.messages if transcript else ()):
            body = text_of(getattr(message, "content", None) or getattr(message, "text", ""))
            calls = getattr(message, "tool_calls", None) or []
            for call in calls:
                body += f" {call.get('name')}({json.dumps(call.get('args'), ensure_ascii=False)})"
            found = pattern.search(body)
            if found is None:
                continue
            yield Match(
                info.thread_id,
                info.agent,
                index,
                _role(message),
                _snippet(body, found.start(), len(found.group(0))),
            )
            count += 1
            if limit is not None and count >= limit:
                return


# --------------------------------------------------------------------------- prune

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_age(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `2w`, `45s`; ValueError with the expected form otherwise."""
    found = _AGE.match(text)
    if found is None:
        raise ValueError(
            f"expected a number and a unit (s, m, h, d or w), like 30d or 12h; found {text!r}"
        )
    return timedelta(**{_UNITS[found.group(2).lower()]: float(found.group(1))})


@dataclass(frozen=True)
class PruneOutcome:
    deleted: list[ThreadInfo]
    """Deleted (or, in a dry run, to be deleted)."""
    running: list[tuple[ThreadInfo, str]]
    """Old enough but run by a process now (who), so kept."""


def prune_threads(
    home: Home, older_than: timedelta, *, dry_run: bool = False, now: datetime | None = None
) -> PruneOutcome:
    """Delete the threads whose last activity (`updated_at`: the end of their last turn) is
    older than `older_than`. A thread some process runs now is never deleted: its lease is
    taken first (held while it is deleted, so no run starts on it meanwhile); a dry run only
    asks who holds it."""
    from runner.threads.guards import ThreadBusy

    cutoff = (now or datetime.now(UTC)) - older_than
    deleted: list[ThreadInfo] = []
    running: list[tuple[ThreadInfo, str]] = []
    for info in home.threads():
        try:
            updated = datetime.fromisoformat(info.updated_at)
        except ValueError:
            continue  # not a time we wrote: leave it alone
        if updated.tzinfo is None:
            updated = updated.replace(tzinfo=UTC)
        if updated >= cutoff:
            continue
        if dry_run:
            holder = home.lease.holder(info.thread_id)
            if holder is not None:
                running.append((info, holder.describe()))
            else:
                deleted.append(info)
            continue
        try:
            lease = home.lease.acquire(info.thread_id)
        except ThreadBusy as busy:
            running.append((info, busy.holder.describe()))
            continue
        try:
            home.delete(info.thread_id)
        finally:
            lease.release()
        deleted.append(info)
    return PruneOutcome(deleted, running)
