"""What `agentctl threads` does beyond listing: export, fork, search, prune, checkpoints.

Everything goes through `runner.run.Home`'s methods (the thread registry, the settings, the answer
log, the lease) and the LangGraph checkpointer API (`list`, `get_tuple`, `put`, `put_writes`),
which every LangGraph saver implements; nothing here writes SQL, so the same code serves a
Postgres thread database. No spec is loaded and no agent is built: a thread stays exportable and
forkable after its spec moved.

Records (`thread_record`, `message_records`, ...) are plain JSON-able dicts with the fields the
docs/threads.md documents under "Export"; `threads show --json`, `threads export --format jsonl` and
`threads search --json` print them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from runner.errors import RunError
from runner.events import is_summary
from runner.threads.transcripts import text_of
from runner.threads.values import checkpoint_values

if TYPE_CHECKING:
    from runner.threads.home import Home, ThreadInfo, Transcript

__all__ = [
    "approval_records",
    "export_jsonl",
    "export_markdown",
    "latest_transcript",
    "message_records",
    "thread_record",
]

EXPORT_FORMAT = 1
"""The `format` field of an export's `thread` record; raised when a field changes meaning."""


# --------------------------------------------------------------------------- reading


def latest_transcript(home: Home, thread_id: str) -> Transcript | None:
    """The latest checkpoint's messages and pending approvals. Read without LangChain when the
    checkpoint is plain msgpack (`Home.saved_transcript`, fast for `show` and `search`);
    otherwise through the checkpointer."""
    from runner.threads.home import Transcript
    from runner.threads.transcripts import Unreadable

    try:
        found = home.saved_transcript(thread_id)
    except Unreadable:
        return home.transcript(thread_id)
    return None if found is None else Transcript(list(found[0]), found[1])


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
    values = checkpoint_values(home.checkpointer, saved) if saved is not None else {}
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
