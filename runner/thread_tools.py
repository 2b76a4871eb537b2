"""What `agentctl threads` does beyond listing: export, fork, search, prune, checkpoints.

Everything goes through `runner.run.Home`'s methods (the thread registry, the settings, the answer
log, the lease) and the LangGraph checkpointer API (`list`, `get_tuple`, `put`, `put_writes`),
which every LangGraph saver implements; nothing here writes SQL, so the same code serves a
Postgres thread database. No spec is loaded and no agent is built: a thread stays exportable and
forkable after its spec moved.

Records (`thread_record`, `message_records`, ...) are plain JSON-able dicts with the fields the
README documents under "Thread tools"; `threads show --json`, `threads export --format jsonl` and
`threads search --json` print them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from runner.errors import RunError
from runner.events import is_summary
from runner.transcripts import text_of

if TYPE_CHECKING:
    from runner.run import Home, ThreadInfo, Transcript

__all__ = [
    "CheckpointInfo",
    "Fork",
    "Match",
    "PruneOutcome",
    "approval_records",
    "checkpoints",
    "export_jsonl",
    "export_markdown",
    "fork_thread",
    "latest_transcript",
    "message_records",
    "parse_age",
    "prune_threads",
    "search_threads",
    "thread_record",
]

EXPORT_FORMAT = 1
"""The `format` field of an export's `thread` record; raised when a field changes meaning."""


# --------------------------------------------------------------------------- reading


def latest_transcript(home: Home, thread_id: str) -> Transcript | None:
    """The latest checkpoint's messages and pending approvals. On SQLite, read without LangChain
    when the checkpoint is plain msgpack (`runner.transcripts`, fast for `show` and `search`);
    otherwise through the checkpointer."""
    import sqlite3

    from runner.run import Transcript
    from runner.transcripts import Unreadable, saved_transcript

    conn = getattr(home, "conn", None)
    lock = getattr(home, "_lock", None)
    if isinstance(conn, sqlite3.Connection) and lock is not None:
        try:
            found = saved_transcript(conn, lock, thread_id)
        except Unreadable:
            return home.transcript(thread_id)
        return None if found is None else Transcript(list(found[0]), found[1])
    return home.transcript(thread_id)


def _config(thread_id: str, checkpoint_id: str | None = None, ns: str | None = "") -> Any:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if ns is not None:
        configurable["checkpoint_ns"] = ns
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _require(home: Home, thread_id: str) -> ThreadInfo | None:
    info = home.thread(thread_id)
    if info is None and home.checkpointer.get_tuple(_config(thread_id)) is None:
        raise RunError(f"no thread {thread_id!r} in {home.path}")
    return info


_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _role(message: Any) -> str:
    kind = str(getattr(message, "type", ""))
    kind = kind.removesuffix("MessageChunk").lower() if kind.endswith("MessageChunk") else kind
    return _ROLES.get(kind, kind)


def _blocks(content: Any) -> list[dict[str, Any]] | None:
    """The non-text content blocks of a message (images, files), described without their data."""
    if not isinstance(content, list):
        return None
    found = []
    for part in content:
        if isinstance(part, dict) and part.get("type") not in (None, "text"):
            described = {k: v for k, v in part.items() if k not in ("base64", "data", "image_url")}
            if "base64" in part or "data" in part:
                data = part.get("base64") or part.get("data") or ""
                described["bytes"] = len(data) * 3 // 4 if isinstance(data, str) else None
            found.append(described)
    return found or None


def message_records(messages: list[Any]) -> list[dict[str, Any]]:
    """One record per message: `index`, `role` (user, assistant, tool, system), `content` (its
    text), and as they apply `tool_calls` ([{id, name, args}]), `tool_call_id`, `name`, `status`,
    `attachments` (non-text content blocks, without their data), `summary` (true for the summary
    that replaced older messages), `id`."""
    records = []
    for index, message in enumerate(messages):
        record: dict[str, Any] = {
            "type": "message",
            "index": index,
            "role": _role(message),
            "content": text_of(getattr(message, "content", getattr(message, "text", ""))),
        }
        message_id = getattr(message, "id", None)
        if message_id:
            record["id"] = message_id
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            record["tool_calls"] = [
                {"id": c.get("id"), "name": c.get("name"), "args": c.get("args") or {}}
                for c in calls
            ]
        if record["role"] == "tool":
            record["tool_call_id"] = getattr(message, "tool_call_id", None)
            record["name"] = getattr(message, "name", None)
            record["status"] = getattr(message, "status", None) or "success"
        blocks = _blocks(getattr(message, "content", None))
        if blocks:
            record["attachments"] = blocks
        if is_summary(message):
            record["summary"] = True
        records.append(record)
    return records


def tool_call_records(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each tool call joined with its result: `id`, `name`, `args`, `result` (None while it has
    none), `status`, `message_index` (of the assistant message that made it)."""
    results = {m["tool_call_id"]: m for m in messages if m["role"] == "tool"}
    records = []
    for message in messages:
        for call in message.get("tool_calls", ()):
            result = results.get(call["id"])
            records.append(
                {
                    "type": "tool_call",
                    "id": call["id"],
                    "name": call["name"],
                    "args": call["args"],
                    "result": result["content"] if result else None,
                    "status": result["status"] if result else None,
                    "message_index": message["index"],
                }
            )
    return records


def thread_record(home: Home, thread_id: str, info: ThreadInfo | None) -> dict[str, Any]:
    """`thread_id`, `agent`, `spec`, `created_at`, `updated_at` (ISO 8601 UTC),
    `first_message`, `model` (the `--model` it runs with, None for the spec's), `vars`."""
    settings = home.settings(thread_id)
    return {
        "type": "thread",
        "thread_id": thread_id,
        "agent": info.agent if info else None,
        "spec": info.spec if info else None,
        "created_at": info.created_at if info else None,
        "updated_at": info.updated_at if info else None,
        "first_message": info.first_message if info else None,
        "model": settings.model if settings else None,
        "vars": settings.vars if settings else {},
    }


def _action(request: dict[str, Any], configs: dict[str, Any]) -> dict[str, Any]:
    config = configs.get(str(request.get("name")), {})
    return {
        "id": request.get("id"),
        "name": request.get("name"),
        "args": request.get("args") or {},
        "description": request.get("description"),
        "allowed_decisions": list(config.get("allowed_decisions", ["approve", "edit", "reject"])),
    }


def _interrupts(home: Home, thread_id: str) -> Iterator[tuple[str, str, str, Any]]:
    """(checkpoint namespace, checkpoint id, interrupt id, value) of every approval the thread
    asked for that its kept checkpoints still show (retention keeps every checkpoint where the
    thread waited), oldest first; subagents' included."""
    seen: set[str] = set()
    found = []
    for saved in home.checkpointer.list(_config(thread_id, ns=None)):
        for _task, channel, value in saved.pending_writes or ():
            if channel != "__interrupt__":
                continue
            for interrupt in value or ():
                interrupt_id = str(getattr(interrupt, "id", ""))
                if interrupt_id in seen:
                    continue
                seen.add(interrupt_id)
                configurable = saved.config["configurable"]
                found.append(
                    (
                        configurable.get("checkpoint_ns", ""),
                        configurable["checkpoint_id"],
                        interrupt_id,
                        getattr(interrupt, "value", None),
                    )
                )
    found.sort(key=lambda item: item[1])
    yield from found


def approval_records(home: Home, thread_id: str) -> list[dict[str, Any]]:
    """Every approval the thread asked for, with its answer from the answer log: `interrupt_id`,
    `checkpoint_id`, `agent_namespace` ("" for the main agent), `actions` ([{id, name, args,
    description, allowed_decisions}]), `status` (answered, pending), `decisions` (what was sent:
    [{type: approve}, {type: edit, edited_action}, {type: reject, message}]), `summary`,
    `answered_at`."""
    interrupts = list(_interrupts(home, thread_id))
    answers = home.answers.recorded(thread_id, [iid for _, _, iid, _ in interrupts])
    records = []
    for namespace, checkpoint_id, interrupt_id, value in interrupts:
        if isinstance(value, dict) and "action_requests" in value:
            configs = {c.get("action_name"): c for c in value.get("review_configs", [])}
            actions = [_action(r, configs) for r in value["action_requests"]]
        else:
            actions = [{"name": "interrupt", "args": {"value": value}}]
        answer = answers.get(interrupt_id)
        resume = answer.resume if answer is not None else None
        records.append(
            {
                "type": "approval",
                "interrupt_id": interrupt_id,
                "checkpoint_id": checkpoint_id,
                "agent_namespace": namespace,
                "actions": actions,
                "status": "answered" if answer is not None else "pending",
                "decisions": resume.get("decisions") if isinstance(resume, dict) else resume,
                "summary": answer.summary if answer is not None else None,
                "answered_at": answer.answered_at if answer is not None else None,
            }
        )
    return records


def file_records(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The files the thread keeps in its state (`state` backends): `path`, `content` (text, or
    base64 when `encoding` is base64), `encoding`, `created_at`, `modified_at`. Files of
    `filesystem` and `store` backends are not the thread's and are not exported."""
    files = values.get("files") or {}
    records = []
    for path in sorted(files):
        data = files[path]
        if not isinstance(data, dict):
            continue
        content = data.get("content", "")
        if isinstance(content, list):  # an older layout: a list of lines
            content = "\n".join(str(line) for line in content)
        records.append(
            {
                "type": "file",
                "path": path,
                "content": content,
                "encoding": data.get("encoding") or "utf-8",
                "created_at": data.get("created_at"),
                "modified_at": data.get("modified_at"),
            }
        )
    return records


# --------------------------------------------------------------------------- export


def export_records(home: Home, thread_id: str) -> list[dict[str, Any]]:
    """The thread as records: one `thread`, then its `message`s, `tool_call`s, `approval`s and
    `file`s (see each record function for the fields)."""
    info = _require(home, thread_id)
    saved = home.checkpointer.get_tuple(_config(thread_id))
    values = dict(saved.checkpoint.get("channel_values") or {}) if saved is not None else {}
    messages = message_records(list(values.get("messages") or []))
    header = thread_record(home, thread_id, info)
    header["format"] = EXPORT_FORMAT
    header["checkpoint_id"] = saved.config["configurable"]["checkpoint_id"] if saved else None
    return [
        header,
        *messages,
        *tool_call_records(messages),
        *approval_records(home, thread_id),
        *file_records(values),
    ]


def export_jsonl(home: Home, thread_id: str) -> str:
    return "".join(
        json.dumps(record, ensure_ascii=False, default=str) + "\n"
        for record in export_records(home, thread_id)
    )


def _fence(text: str, info: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{info}\n{text}\n{fence}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines()) or ">"


def export_markdown(home: Home, thread_id: str) -> str:
    """The thread as a Markdown document: its details, the conversation (tool calls with their
    arguments and results), the approvals with their decisions, and its state files."""
    records = export_records(home, thread_id)
    header = records[0]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for record in records[1:]:
        by_type.setdefault(record["type"], []).append(record)
    results = {r["id"]: r for r in by_type.get("tool_call", [])}
    agent = header["agent"] or "agent"
    lines = [f"# Thread {thread_id}", ""]
    for label, key in (
        ("Agent", "agent"),
        ("Spec", "spec"),
        ("Model", "model"),
        ("Created", "created_at"),
        ("Updated", "updated_at"),
    ):
        if header.get(key):
            lines.append(f"- {label}: `{header[key]}`")
    if header.get("vars"):
        lines.append(f"- Vars: `{json.dumps(header['vars'], ensure_ascii=False)}`")
    lines += ["", "## Conversation", ""]
    for message in by_type.get("message", []):
        role = message["role"]
        if role == "tool":
            continue  # shown under its call
        who = {"user": "User", "assistant": agent}.get(role, role.capitalize())
        if message.get("summary"):
            who = "Summary of the earlier conversation"
        lines.append(f"### {who}")
        lines.append("")
        if message["content"].strip():
            lines += [message["content"].strip(), ""]
        for block in message.get("attachments", ()):
            name = block.get("filename") or block.get("mime_type") or block.get("type")
            lines += [f"*attachment: {name}*", ""]
        for call in message.get("tool_calls", ()):
            lines.append(f"**Tool call** `{call['name']}` (`{call['id']}`)")
            lines += ["", _fence(json.dumps(call["args"], indent=2, ensure_ascii=False), "json")]
            joined = results.get(call["id"])
            if joined is not None and joined["result"] is not None:
                failed = " (error)" if joined["status"] == "error" else ""
                lines += ["", f"Result{failed}:", "", _fence(joined["result"])]
            else:
                lines += ["", "*no result*"]
            lines.append("")
    approvals = by_type.get("approval", [])
    if approvals:
        lines += ["## Approvals", ""]
        for approval in approvals:
            names = ", ".join(f"`{a['name']}`" for a in approval["actions"])
            answered = (
                f"answered: {approval['summary']} ({approval['answered_at']})"
                if approval["status"] == "answered"
                else "pending"
            )
            lines.append(f"- {names}: {answered}")
            for action, decision in zip(
                approval["actions"], approval["decisions"] or [None] * 99, strict=False
            ):
                args = json.dumps(action["args"], ensure_ascii=False)
                said = f" → {json.dumps(decision, ensure_ascii=False)}" if decision else ""
                lines.append(f"  - `{action['name']}` {args}{said}")
        lines.append("")
    files = by_type.get("file", [])
    if files:
        lines += ["## Files", ""]
        for file in files:
            lines.append(f"### {file['path']}")
            lines.append("")
            if file["encoding"] == "base64":
                size = len(file["content"]) * 3 // 4
                lines += [f"*binary, about {size:,} bytes*", ""]
            else:
                lines += [_fence(file["content"]), ""]
    return "\n".join(lines).rstrip() + "\n"


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
    for saved in home.checkpointer.list(_config(thread_id)):
        values = saved.checkpoint.get("channel_values") or {}
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


# --------------------------------------------------------------------------- fork


@dataclass(frozen=True)
class Fork:
    thread_id: str
    source: str
    checkpoint_id: str
    spec: str | None


def _copy(home: Home, saved: Any, new_thread: str, extra: dict[str, Any]) -> None:
    """Put one checkpoint tuple (and its pending writes: saved results of finished tasks, the
    approvals it waits for) into `new_thread`, keeping its id so the tasks it resumes keep
    theirs. `new_versions` names every channel: savers that store channel values apart from the
    checkpoint (Postgres) write only the versions named there."""
    checkpointer = home.checkpointer
    checkpoint = saved.checkpoint
    namespace = saved.config["configurable"].get("checkpoint_ns", "")
    metadata = {**(saved.metadata or {}), **extra}
    written = checkpointer.put(
        _config(new_thread, ns=namespace),
        checkpoint,
        metadata,
        dict(checkpoint.get("channel_versions") or {}),
    )
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in saved.pending_writes or ():
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, writes in by_task.items():
        if any(channel == "__interrupt__" for channel, _ in writes):
            # A task that stopped for approval: the answer (`__resume__`) and what the task
            # wrote after it belong to the source's future, not to the fork's
            by_task[task_id] = [(c, v) for c, v in writes if c == "__interrupt__"]
    for task_id, writes in by_task.items():
        checkpointer.put_writes(written, writes, task_id)


def fork_thread(home: Home, thread_id: str, *, at: str | None = None) -> Fork:
    """A new thread that starts from checkpoint `at` of `thread_id` (default: its latest), as
    if the conversation had stopped there: `agentctl run SPEC --thread NEW` continues it (a new
    message, or the answer to the approval it waited for then). It is registered with the
    source's agent, spec and settings (model, vars).

    A subagent that was in the middle of its run at that checkpoint (waiting for approval) is
    copied with it: its latest checkpoint that ran under the chosen one."""
    from runner.run import new_thread_id

    info = _require(home, thread_id)
    saved = _resolve_checkpoint(home, thread_id, at)
    checkpoint_id = saved.config["configurable"]["checkpoint_id"]
    new_thread = new_thread_id()
    marker = {"agentctl_forked_from": {"thread_id": thread_id, "checkpoint_id": checkpoint_id}}
    _copy(home, saved, new_thread, marker)
    latest_sub: dict[str, Any] = {}
    for sub in home.checkpointer.list(_config(thread_id, ns=None)):
        namespace = sub.config["configurable"].get("checkpoint_ns", "")
        parents = (sub.metadata or {}).get("parents") or {}
        if namespace and parents.get("") == checkpoint_id and namespace not in latest_sub:
            latest_sub[namespace] = sub  # list() is newest first
    for sub in latest_sub.values():
        _copy(home, sub, new_thread, marker)
    values = saved.checkpoint.get("channel_values") or {}
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
    from runner.threads_db import ThreadBusy

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
