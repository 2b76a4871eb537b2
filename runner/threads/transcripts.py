"""A saved thread's conversation read without LangChain, for `agentctl threads show`.

`Home.transcript` decodes the latest checkpoint with LangGraph's serializer into LangChain
message objects; importing those (langchain_core, the checkpointer) takes longer than everything
`threads show` does. A checkpoint is msgpack, where LangGraph writes each object as an extension
holding (module, class, arguments): a pydantic model (every LangChain message) as its field
values, a dataclass (an `Interrupt`) as its keyword arguments. This module reads those as plain
values: a message becomes a `SavedMessage` with what the transcript shows. Anything else (another
serializer, an extension it does not know) raises `Unreadable`, and the caller falls back to
`Home.transcript`. Each database reads its own tables (`Home.saved_transcript`: SQLite's
checkpoint blob holds every channel value, Postgres keeps the messages in `checkpoint_blobs`)
and decodes here (`decode`, `transcript_of`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

    from runner.events import Action

__all__ = [
    "SavedMessage",
    "Unreadable",
    "decode",
    "pending_actions",
    "question_action",
    "saved_transcript",
    "text_of",
    "transcript_of",
]

# LangGraph's msgpack extension codes (langgraph.checkpoint.serde.jsonplus)
_SINGLE_ARG, _POSITIONAL, _KEYWORDS, _METHOD, _PYDANTIC_V1, _PYDANTIC_V2 = range(6)
_DELTA_SNAPSHOT = 7
"""A `DeltaChannel`'s full value (`runner.agent.state`), stored every few updates."""
_REMOVE_ALL = "__remove_all__"
"""The id of a `RemoveMessage` that removes every message before it (LangGraph's)."""


class Unreadable(Exception):
    """The checkpoint is not in the format this module reads."""


@dataclass(frozen=True)
class SavedMessage:
    """What `threads show` needs of a message: its kind (human, ai, tool), text, tool calls
    (name, args, id) and, for a tool result, its status."""

    type: str
    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: str = "success"


def _ext(code: int, data: bytes) -> Any:
    import ormsgpack

    if code == _DELTA_SNAPSHOT:
        return ormsgpack.unpackb(data, ext_hook=_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    if code not in (_SINGLE_ARG, _POSITIONAL, _KEYWORDS, _METHOD, _PYDANTIC_V1, _PYDANTIC_V2):
        raise Unreadable(f"msgpack extension {code}")
    parts = ormsgpack.unpackb(data, ext_hook=_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    if not isinstance(parts, list | tuple) or len(parts) < 3:
        raise Unreadable("unexpected extension layout")
    module, name, argument = parts[0], parts[1], parts[2]
    if code == _SINGLE_ARG and (module, name) == ("uuid", "UUID"):
        return str(argument)
    return argument


def decode(kind: str | None, blob: bytes | None) -> Any:
    """A value LangGraph's serializer stored (`type`, `blob` columns) as plain values;
    `Unreadable` unless msgpack."""
    if kind != "msgpack" or blob is None:
        raise Unreadable(f"serializer {kind!r}")
    import ormsgpack

    try:
        return ormsgpack.unpackb(blob, ext_hook=_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    except ormsgpack.MsgpackDecodeError as exc:
        raise Unreadable(str(exc)) from None


def text_of(content: Any) -> str:
    """The text of a message's content: strings and text parts joined (a part with no `type` but
    a `text` counts as text, as streamed chunks carry it); images and other blocks left out."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str)
            or (isinstance(part, dict) and part.get("type", "text") in (None, "text"))
        )
    return str(content)


def _message(value: Any) -> SavedMessage:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise Unreadable("a message without a type")
    chunks = {"AIMessageChunk": "ai", "HumanMessageChunk": "human", "ToolMessageChunk": "tool"}
    kind = chunks.get(value["type"], str(value["type"]))
    calls = [
        {"name": c.get("name", ""), "args": dict(c.get("args") or {}), "id": c.get("id")}
        for c in value.get("tool_calls") or ()
        if isinstance(c, dict)
    ]
    return SavedMessage(
        kind, text_of(value.get("content", "")), calls, str(value.get("status") or "success")
    )


def _replayed_messages(conn: sqlite3.Connection, thread_id: str, parent: str | None) -> list[Any]:
    """The messages of a checkpoint that keeps them as deltas, from LangGraph's SQLite tables
    (`replayed_messages`)."""

    def ancestor(checkpoint_id: str) -> tuple[str | None, Any] | None:
        found = conn.execute(
            "SELECT parent_checkpoint_id, json_extract(CAST(metadata AS TEXT), "
            "'$.counters_since_delta_snapshot.messages') FROM checkpoints "
            "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
            (thread_id, checkpoint_id),
        ).fetchone()
        if found is None:
            return None
        if found[1] is not None:  # counted since a snapshot: a delta
            return found[0], None
        kind, blob = conn.execute(
            "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? "
            "AND checkpoint_ns = '' AND checkpoint_id = ?",
            (thread_id, checkpoint_id),
        ).fetchone()
        values = decode(kind, blob).get("channel_values") or {}
        return found[0], values.get("messages")

    def writes(chain: list[str]) -> list[tuple[str, str | None, bytes | None]]:
        marks = ",".join("?" * len(chain))
        try:
            return conn.execute(
                "SELECT checkpoint_id, type, value FROM writes WHERE thread_id = ? "
                f"AND checkpoint_ns = '' AND channel = 'messages' AND checkpoint_id IN ({marks}) "
                "ORDER BY task_path, task_id, idx",
                (thread_id, *chain),
            ).fetchall()
        except conn.OperationalError as exc:  # a writes table from before `task_path`
            raise Unreadable(str(exc)) from None

    return replayed_messages(parent, ancestor, writes)


def replayed_messages(
    parent: str | None,
    ancestor: Callable[[str], tuple[str | None, Any] | None],
    writes: Callable[[list[str]], Iterable[tuple[str, str | None, bytes | None]]],
) -> list[Any]:
    """The messages of a checkpoint that keeps them as deltas (`runner.agent.state`), as
    LangGraph rebuilds them: the nearest ancestor's stored list (a snapshot, or the full list
    of an agentctl before deltas), then the `messages` writes of the ancestors after it, oldest
    first, in the order a step applies them, through the reducer's rules (`_apply`).

    `ancestor(id)` gives a checkpoint's parent and its stored list (None for a delta, or when
    it stores none), or None when there is no such checkpoint; `writes(ids)` the `messages`
    writes of those checkpoints as (checkpoint id, type, blob) rows, in the order a step
    applies them."""
    chain: list[str] = []
    seed: Any = []
    seen: set[str] = set()
    while parent and parent not in seen:
        seen.add(parent)
        found = ancestor(parent)
        if found is None:
            break  # LangGraph's walk ends there too, as at the first checkpoint
        chain.append(parent)
        if found[1] is not None:
            seed = found[1]
            break
        parent = found[0]
    if not chain:
        return list(seed or ())
    by_checkpoint: dict[str, list[Any]] = {}
    for checkpoint_id, kind, blob in writes(chain):
        by_checkpoint.setdefault(checkpoint_id, []).append(decode(kind, blob))
    ordered = [w for cid in reversed(chain) for w in by_checkpoint.get(cid, ())]
    return _apply(list(seed or ()), ordered)


def _apply(messages: list[Any], writes: list[Any]) -> list[Any]:
    """LangGraph's message rules on decoded messages: a message with a known id replaces it, a
    `remove` deletes it (`__remove_all__` everything before), any other is added."""
    result: list[Any] = list(messages)
    index = {m.get("id"): i for i, m in enumerate(result) if isinstance(m, dict) and m.get("id")}
    for write in writes:
        for message in write if isinstance(write, list) else [write]:
            if not isinstance(message, dict) or not isinstance(message.get("type"), str):
                raise Unreadable("a write that is not a message")
            mid = message.get("id")
            if message["type"] == "remove":
                if mid == _REMOVE_ALL:
                    result, index = [], {}
                elif mid in index:
                    result[index.pop(mid)] = None
            elif mid and mid in index:
                result[index[mid]] = message
            else:
                if mid:
                    index[mid] = len(result)
                result.append(message)
    return [m for m in result if m is not None]


def saved_transcript(
    conn: sqlite3.Connection, lock: threading.Lock, thread_id: str
) -> tuple[list[SavedMessage], list[Action]] | None:
    """The messages and pending approvals of the thread's latest checkpoint (None without
    one), from LangGraph's SQLite tables; `Unreadable` when they are not plain msgpack."""

    with lock:
        tables = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
            "AND name IN ('checkpoints', 'writes')"
        ).fetchone()[0]
        if tables != 2:
            return None
        row = conn.execute(
            "SELECT checkpoint_id, type, checkpoint, parent_checkpoint_id FROM checkpoints "
            "WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1",
            (thread_id,),
        ).fetchone()
        if row is None:
            return None
        writes = conn.execute(
            "SELECT type, value FROM writes WHERE thread_id = ? AND checkpoint_ns = '' "
            "AND checkpoint_id = ? AND channel = '__interrupt__' ORDER BY task_id, idx",
            (thread_id, row[0]),
        ).fetchall()
        checkpoint = decode(row[1], row[2])
        values = checkpoint.get("channel_values") if isinstance(checkpoint, dict) else None
        if not isinstance(values, dict):
            raise Unreadable("no channel values")
        stored = values.get("messages")
        if "messages" not in values and "messages" in (checkpoint.get("channel_versions") or {}):
            stored = _replayed_messages(conn, thread_id, row[3])
    return transcript_of(stored, writes)


def transcript_of(
    messages: Any, interrupt_writes: Iterable[tuple[str | None, bytes | None]]
) -> tuple[list[SavedMessage], list[Action]]:
    """The messages (the `messages` channel's decoded value) and the approvals pending in a
    checkpoint's `__interrupt__` writes ((type, blob) rows), as `saved_transcript` gives them."""
    if messages is not None and not isinstance(messages, list | tuple):
        raise Unreadable("the messages are not a list")
    saved = [_message(m) for m in messages or ()]
    interrupts = []
    for kind, blob in interrupt_writes:
        for item in decode(kind, blob) or ():
            if not isinstance(item, dict) or "value" not in item:
                raise Unreadable("an interrupt without a value")
            interrupts.append(SimpleNamespace(id=item.get("id", ""), value=item["value"]))
    pending = pending_actions(SimpleNamespace(interrupts=interrupts))
    return saved, [action for _, actions in pending for action in actions]


def pending_actions(
    state: Any, agents: Mapping[str, str] | None = None
) -> list[tuple[str, list[Action]]]:
    """(interrupt id, actions) for each approval the thread waits on; `agents` names the agent
    behind each interrupt id when the stream showed it."""
    from runner.events import Action  # here: listing threads needs none of the events

    found: list[tuple[str, list[Action]]] = []
    for interrupt in getattr(state, "interrupts", ()) or ():
        value = interrupt.value
        agent = (agents or {}).get(interrupt.id)
        remote = value.get("remote") if isinstance(value, dict) else None
        if isinstance(remote, dict) and remote.get("agent"):
            agent = str(remote["agent"])  # a remote subagent's request, passed up by `task`
        actions: list[Action] = []
        if isinstance(value, dict) and value.get("type") == "ask_user":
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


def question_action(value: dict[str, Any], agent: str | None) -> Action:
    """A pending question as the `Action` an `Interrupt` event lists: named `ask_user`, its
    `args` the question and the choices (None for a free answer), decided by `answer`."""
    from runner.events import ASK_USER_TOOL, Action

    return Action(
        name=ASK_USER_TOOL,
        args={"question": str(value.get("question", "")), "choices": value.get("choices")},
        id=value.get("tool_call_id"),
        allowed_decisions=["answer"],
        agent=agent,
    )
