"""A Postgres thread's latest checkpoint as this process wrote it, so that the next turn need not
read it back (`runner.threads.postgres`'s saver).

LangGraph reads the thread's latest checkpoint at the start of every `invoke` (`get_tuple`), then
rebuilds the `messages` (and a `state` backend's `files`), kept as deltas, from the writes of
the checkpoints back to the channel's last snapshot (`get_delta_channel_history`: two more
statements, some 50 rows walked and some 30 writes). Those rows are what this process wrote in
its last turn: `LatestCheckpoints` keeps, per thread, the main graph's latest checkpoint as
LangGraph's statements sent it (its JSON, its metadata, the values stored at its versions, the
writes put on it since) and the delta channels' chains behind it (each chain checkpoint's writes
of that channel, and the snapshot the chain starts from), all as the bytes sent or read, never
as live objects: what is served is decoded afresh, as from the database, so no object of one
run is shared with the next.

Filled by the saver's own statements (`sent`: each checkpoint, each task's writes) and by what
its reads returned (`read_tuple`, `read_history`: a session's first turn on a thread); a
checkpoint is derived from its parent's entry, else the thread is forgotten.

Served only after one statement (`CHECK`: sent with the thread's lease as it is taken, in the
same round trip, and good for the holding's first `get_tuple`; else just before the `get_tuple`)
finds the database as the entry expects it: the
thread's latest main-graph checkpoint is the entry's, with the same metadata (retention's
`SNAPSHOT_NEXT` rewrites its counters), the same number of writes, and the same number of
writes of each delta channel on its chain. Anything else that wrote to the thread (another
process, a session on another connection, a prune, `threads rm`, a fork) changed one of them,
and the thread is read as before. A checkpoint with a pending write of LangGraph's special
channels (an error, an interrupt, a resume: rows another writer replaces in place, leaving the
count) is never served. Served: `get_tuple` of the latest checkpoint (no checkpoint id given),
then, once, `get_delta_channel_history` of that checkpoint.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CHECK", "LatestCheckpoints", "ServedLatest", "jsonb_loads"]

CHECK = (
    "SELECT c.checkpoint_id, c.metadata, (SELECT count(*) FROM checkpoint_writes w "
    "WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = '' "
    "AND w.checkpoint_id = c.checkpoint_id) AS pending, "
    "(SELECT count(*) FROM checkpoint_writes w JOIN unnest(%s::text[], %s::text[]) AS k(ch, since) "
    "ON w.channel = k.ch AND w.checkpoint_id >= k.since "
    "WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = '' "
    "AND w.checkpoint_id < c.checkpoint_id) AS chained "
    "FROM checkpoints c WHERE c.thread_id = %s AND c.checkpoint_ns = '' "
    "ORDER BY c.checkpoint_id DESC LIMIT 1"
)
"""The thread's latest main-graph checkpoint (id, metadata), the writes on it, and the writes of
each given channel from the given checkpoint on (its chain's oldest) up to the latest: what
`LatestCheckpoints.matches` compares. Where the thread branched, the count takes in the other
branch's writes too, and does not match: the thread is read."""

Row = tuple[str, str, str, Any, str, int]
"""A write: (task id, channel, type, blob, task path, idx)."""

ChainWrite = tuple[str, Any, str, int, str]
"""A write of one channel on a chain checkpoint: (type, blob, task id, idx, task path)."""

Seed = tuple[str, Any, Any] | None
"""Where a delta channel's chain starts: ("blob", type, blob), ("inline", value, None), or None
(no stored value: it starts empty)."""


@dataclass
class Walk:
    """A delta channel's value at a checkpoint's parent, as LangGraph's history of it: the seed
    and the chain, newest first, each chain checkpoint with its writes of the channel."""

    seed: Seed
    chain: list[tuple[str, list[ChainWrite]]]


@dataclass
class Entry:
    """A thread's latest main-graph checkpoint, as sent or read."""

    id: str
    parent: str | None
    versions: dict[str, Any]
    blobs: dict[str, tuple[str, Any]]
    """Channel -> (type, blob) of each value stored at the checkpoint's version of it."""
    inline: dict[str, Any]
    """The checkpoint JSON's own `channel_values` (primitives, and `true` for a snapshot)."""
    pending: dict[tuple[str, int], Row] = field(default_factory=dict)
    """The writes put on it, by (task id, idx) as the table keys them."""
    checkpoint: str | None = None
    """Its JSON as sent (None when read: then it only grounds the next checkpoint's entry)."""
    metadata: str | None = None
    walks: dict[str, Walk] | None = None
    """The delta channels' histories at this checkpoint (None: not known)."""
    armed: bool = False
    """Checked against the database by the `get_tuple` just served: its history may follow."""
    checked: Sequence[Any] | None = None
    """`CHECK`'s row, read as the thread's lease was taken (`checked`), for the holding's first
    `get_tuple`."""

    def special(self) -> bool:
        return any(idx < 0 for _, idx in self.pending)


def _jsonb_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object as Postgres's `jsonb` returns it: the last of duplicate keys, keys shorter
    first, then by their bytes."""
    found = dict(pairs)
    return {k: found[k] for k in sorted(found, key=lambda k: (len(k.encode()), k.encode()))}


def jsonb_loads(text: str) -> Any:
    """JSON text decoded as psycopg decodes it once stored in a `jsonb` column."""
    return json.loads(text, object_pairs_hook=_jsonb_object)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else bytes(value).decode()


class LatestCheckpoints:
    """The entries, by thread id; safe to use from several threads (tasks' writes come from
    LangGraph's workers)."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def forget(self, thread_id: str | None = None) -> None:
        """Forget a thread (every thread when None)."""
        with self._lock:
            if thread_id is None:
                self._entries.clear()
            else:
                self._entries.pop(thread_id, None)

    # ------------------------------------------------------------------ what the saver sent

    def sent(
        self, statements: Iterable[tuple[str, Any, list[Any]]], kinds: Mapping[Any, str]
    ) -> None:
        """LangGraph's statements, committed: `kinds` names each query (`checkpoint`, `blobs`,
        `upsert` or `insert` writes); a checkpoint of the main graph becomes its thread's entry
        (derived from its parent's), writes on a thread's latest one join it, anything else
        makes the thread forgotten."""
        checkpoint: Sequence[Any] | None = None
        blobs: list[Sequence[Any]] = []
        for _method, query, rows in statements:
            kind = kinds.get(query)
            if kind == "checkpoint":
                checkpoint = rows[0]
            elif kind == "blobs":
                blobs.extend(rows)
            elif kind in ("upsert", "insert"):
                self._wrote(rows, upsert=kind == "upsert")
            else:
                for row in rows:
                    self.forget(str(row[0]) if row else None)
        if checkpoint is not None:
            self._put(checkpoint, blobs)

    def _put(self, row: Sequence[Any], blob_rows: list[Sequence[Any]]) -> None:
        thread_id, ns, checkpoint_id, parent, checkpoint, metadata = row
        if ns:
            return  # a subagent's: not what a turn starts from
        thread_id = str(thread_id)
        values = checkpoint.obj
        if values.get("v", 0) < 4:  # LangGraph migrates older ones as it reads them
            self.forget(thread_id)
            return
        text, meta = checkpoint.dumps(values), metadata.dumps(metadata.obj)
        versions = dict(values.get("channel_versions") or {})
        written = {str(r[2]): (str(r[4]), r[5]) for r in blob_rows if r[3] == versions.get(r[2])}
        with self._lock:
            prev = self._entries.pop(thread_id, None)
            if parent is None:  # a thread's first checkpoint: nothing before it
                prev = None
            elif prev is None or prev.id != parent:
                return  # its parent's values are not known here: read it back next time
            blobs: dict[str, tuple[str, Any]] = {}
            for channel, version in versions.items():
                if channel in written:
                    blobs[channel] = written[channel]
                elif (
                    prev is not None
                    and prev.versions.get(channel) == version
                    and channel in prev.blobs
                ):
                    blobs[channel] = prev.blobs[channel]
                # else a new version not stored as a value: none at that version
            entry = Entry(
                str(checkpoint_id),
                parent,
                versions,
                blobs,
                dict(values.get("channel_values") or {}),
                checkpoint=text,
                metadata=meta,
                walks=_walks_from(prev) if prev is not None else {},
            )
            self._entries[thread_id] = entry

    def _wrote(self, rows: list[Sequence[Any]], *, upsert: bool) -> None:
        with self._lock:
            for thread_id, ns, checkpoint_id, task_id, path, idx, channel, kind, blob in rows:
                if ns:
                    continue
                entry = self._entries.get(str(thread_id))
                if entry is None:
                    continue
                if entry.id != checkpoint_id:  # on an older checkpoint: a chain may change
                    del self._entries[str(thread_id)]
                    continue
                key = (str(task_id), int(idx))
                if upsert or key not in entry.pending:
                    entry.pending[key] = (key[0], str(channel), str(kind), blob, str(path), key[1])

    # ------------------------------------------------------------------ what the saver read

    def read_tuple(self, thread_id: str, value: Mapping[str, Any]) -> None:
        """The latest main-graph checkpoint of `thread_id` as `get_tuple` read it (a row of
        LangGraph's `SELECT_SQL`): the ground for the entry of the next one this process
        writes."""
        checkpoint = value["checkpoint"]
        if checkpoint.get("v", 0) < 4 or value["checkpoint_ns"]:
            return
        entry = Entry(
            str(value["checkpoint_id"]),
            value["parent_checkpoint_id"],
            dict(checkpoint.get("channel_versions") or {}),
            {_text(c): (_text(t), b) for c, t, b in value["channel_values"] or ()},
            dict(checkpoint.get("channel_values") or {}),
        )
        for task_id, channel, kind, blob, path, idx in value["pending_writes"] or ():
            key = (_text(task_id), int(_text(idx)))
            entry.pending[key] = (key[0], _text(channel), _text(kind), blob, _text(path), key[1])
        with self._lock:
            known = self._entries.get(thread_id)
            if known is None or known.id <= entry.id:  # not one written since (ids sort by time)
                self._entries[thread_id] = entry

    def read_history(self, thread_id: str, checkpoint_id: str, found: Mapping[str, Any]) -> None:
        """What LangGraph's `get_delta_channel_history` of the checkpoint read, given to its
        `_build_delta_channels_writes_history` (the walk and the rows, still encoded)."""
        channels = found.get("channels")
        chains, versions = found.get("chain_by_ch"), found.get("seed_ver_by_ch")
        inline, rows = found.get("seed_inline_by_ch"), found.get("stage2_rows")
        if channels is None or chains is None or versions is None or inline is None or rows is None:
            return  # another LangGraph: not known here
        writes: dict[tuple[str, str], list[ChainWrite]] = {}
        blobs: dict[tuple[str, str], tuple[str, Any]] = {}
        for r in rows:
            if r["_kind"] == "w":
                writes.setdefault((r["channel"], r["checkpoint_id"]), []).append(
                    (r["type"], r["blob"], r["task_id"], r["idx"], r["task_path"])
                )
            else:
                blobs[(r["channel"], r["version"])] = (r["type"], r["blob"])
        walks: dict[str, Walk] = {}
        for channel in channels:
            seed: Seed = None
            version = versions.get(channel)
            if version is not None:
                blob = blobs.get((channel, version))
                if blob is not None and blob[0] != "empty":
                    seed = ("blob", blob[0], blob[1])
                elif channel in inline:
                    seed = ("inline", inline[channel], None)
            chain = [(cid, writes.get((channel, cid), [])) for cid in chains.get(channel, [])]
            walks[channel] = Walk(seed, chain)
        with self._lock:
            entry = self._entries.get(thread_id)
            if entry is not None and entry.id == checkpoint_id:
                entry.walks = {**(entry.walks or {}), **walks}

    # ------------------------------------------------------------------ serving

    def servable(self, thread_id: str) -> Entry | None:
        """The thread's entry if it can serve `get_tuple` (after `matches`)."""
        with self._lock:
            entry = self._entries.get(thread_id)
        if entry is None or entry.checkpoint is None or entry.special():
            return None
        return entry

    @staticmethod
    def check_args(thread_id: str, entry: Entry) -> tuple[list[str], list[str], str]:
        """`CHECK`'s arguments for `entry`: each chain's channel and oldest checkpoint."""
        channels: list[str] = []
        since: list[str] = []
        for channel, walk in (entry.walks or {}).items():
            if walk.chain:
                channels.append(channel)
                since.append(walk.chain[-1][0])
        return channels, since, thread_id

    def checked(self, thread_id: str, entry: Entry | None, row: Sequence[Any] | None) -> None:
        """`CHECK`'s row for `entry`, read with the thread's lease as it was taken: the next
        `get_tuple` of the thread goes by it (`take_checked`) instead of checking again. None:
        the lease was let go, and what it read no longer holds."""
        with self._lock:
            known = self._entries.get(thread_id)
            if known is not None:
                known.checked = row if known is entry else None

    def take_checked(self, thread_id: str, entry: Entry) -> Sequence[Any] | None:
        """The row `checked` left for `entry`, once."""
        with self._lock:
            row, entry.checked = entry.checked, None
        return row

    def matches(self, thread_id: str, entry: Entry, row: Sequence[Any] | None) -> bool:
        """Whether `CHECK`'s row (id, metadata, pending, chained) is what `entry` expects; arms
        it if so, else forgets it."""
        chained = sum(len(w) for walk in (entry.walks or {}).values() for _, w in walk.chain)
        ok = (
            row is not None
            and row[0] == entry.id
            and row[2] == len(entry.pending)
            and row[3] == chained
            and entry.metadata is not None
            and row[1] == json.loads(entry.metadata)
        )
        with self._lock:
            if ok and self._entries.get(thread_id) is entry:
                entry.armed = True
                return True
            if self._entries.get(thread_id) is entry:
                del self._entries[thread_id]
        return False

    @staticmethod
    def row(thread_id: str, entry: Entry) -> dict[str, Any]:
        """The entry as a row of LangGraph's `SELECT_SQL`, for the saver's
        `_load_checkpoint_tuple` (decoding its values as from the database)."""
        assert entry.checkpoint is not None and entry.metadata is not None
        return {
            "thread_id": thread_id,
            "checkpoint": jsonb_loads(entry.checkpoint),
            "checkpoint_ns": "",
            "checkpoint_id": entry.id,
            "parent_checkpoint_id": entry.parent,
            "metadata": jsonb_loads(entry.metadata),
            "channel_values": [[c.encode(), t.encode(), b] for c, (t, b) in entry.blobs.items()]
            or None,
            "pending_writes": [
                [t.encode(), c.encode(), k.encode(), b, p.encode(), str(i).encode()]
                for t, c, k, b, p, i in entry.pending.values()
            ]
            or None,
        }

    def history(
        self, thread_id: str, checkpoint_id: str, channels: Sequence[str], serde: Any
    ) -> dict[str, Any] | None:
        """LangGraph's `get_delta_channel_history` of the checkpoint `get_tuple` just served,
        once; None when it cannot be served."""
        from langgraph.checkpoint.base import writes_sort_key

        with self._lock:
            entry = self._entries.get(thread_id)
            if entry is None or entry.id != checkpoint_id or not entry.armed:
                return None
            entry.armed = False
            walks = entry.walks
        if walks is None or any(channel not in walks for channel in channels):
            return None
        result: dict[str, Any] = {}
        for channel in channels:
            walk = walks[channel]
            collected = []
            for _cid, writes in reversed(walk.chain):
                for kind, blob, task_id, _idx, _path in sorted(
                    writes, key=lambda w: writes_sort_key(w[4], w[2], w[3])
                ):
                    collected.append((task_id, channel, serde.loads_typed((kind, blob))))
            entry_history: dict[str, Any] = {"writes": collected}
            if walk.seed is not None:
                how, first, second = walk.seed
                entry_history["seed"] = (
                    serde.loads_typed((first, second)) if how == "blob" else first
                )
            result[channel] = entry_history
        return result


def _walks_from(parent: Entry) -> dict[str, Walk]:
    """The delta channels' histories at a child of `parent` (walked from `parent`, as LangGraph
    walks: a checkpoint holding the channel's value ends the chain), for the channels whose
    history at `parent` is known and those `parent` holds a value of."""
    written: dict[str, list[ChainWrite]] = {}
    for task_id, channel, kind, blob, path, idx in parent.pending.values():
        written.setdefault(channel, []).append((kind, blob, task_id, idx, path))
    before = parent.walks or {}
    walks: dict[str, Walk] = {}
    for channel in {*before, *parent.blobs, *parent.inline}:
        blob = parent.blobs.get(channel)
        inline = parent.inline.get(channel)
        if blob is not None and blob[0] != "empty":
            walks[channel] = Walk(
                ("blob", blob[0], blob[1]), [(parent.id, written.get(channel, []))]
            )
        elif inline is not None:
            seed: Seed = None if parent.versions.get(channel) is None else ("inline", inline, None)
            walks[channel] = Walk(seed, [(parent.id, written.get(channel, []))])
        elif channel in before:
            walk = before[channel]
            walks[channel] = Walk(walk.seed, [(parent.id, written.get(channel, [])), *walk.chain])
    return walks


class ServedLatest:
    """The reads of a LangGraph `PostgresSaver` (the class this is mixed into, before it) served
    from its `agentctl_latest` when they can be, and what they read kept there when not."""

    agentctl_latest: LatestCheckpoints
    serde: Any
    _reading: threading.local
    """What this thread's `get_tuple` or `get_delta_channel_history` is reading from the
    database."""

    def get_tuple(self, config: Any) -> Any:
        """The latest checkpoint as this process wrote it, when the database still has it so,
        else read."""
        from langgraph.checkpoint.base import get_checkpoint_id

        base: Any = super()
        configurable = config["configurable"]
        if get_checkpoint_id(config) or configurable.get("checkpoint_ns"):
            return base.get_tuple(config)
        thread_id = str(configurable["thread_id"])
        latest = self.agentctl_latest
        entry = latest.servable(thread_id)
        if entry is not None:
            row = latest.take_checked(thread_id, entry)  # read with the lease just taken
            if row is None:
                with base._cursor() as cur:
                    cur.execute(CHECK, latest.check_args(thread_id, entry))
                    found = cur.fetchone()
                row = None if found is None else tuple(found.values())
            if latest.matches(thread_id, entry, row):
                return base._load_checkpoint_tuple(latest.row(thread_id, entry))
        self._reading.tuple = thread_id
        try:
            return base.get_tuple(config)
        finally:
            self._reading.tuple = None

    def _load_checkpoint_tuple(self, value: Any) -> Any:
        thread_id = getattr(self._reading, "tuple", None)
        if thread_id is not None:
            self._reading.tuple = None
            self.agentctl_latest.read_tuple(thread_id, value)
        base: Any = super()
        return base._load_checkpoint_tuple(value)

    def get_delta_channel_history(self, *, config: Any, channels: Any) -> Any:
        from langgraph.checkpoint.base import get_checkpoint_id

        base: Any = super()
        checkpoint_id = get_checkpoint_id(config)
        configurable = config["configurable"]
        if not checkpoint_id or configurable.get("checkpoint_ns"):
            return base.get_delta_channel_history(config=config, channels=channels)
        thread_id = str(configurable["thread_id"])
        served = self.agentctl_latest.history(thread_id, checkpoint_id, list(channels), self.serde)
        if served is not None:
            return served
        self._reading.history = (thread_id, checkpoint_id)
        try:
            return base.get_delta_channel_history(config=config, channels=channels)
        finally:
            self._reading.history = None

    def _build_delta_channels_writes_history(self, **found: Any) -> Any:
        reading = getattr(self._reading, "history", None)
        if reading is not None:
            self._reading.history = None
            self.agentctl_latest.read_history(reading[0], reading[1], found)
        base: Any = super()
        return base._build_delta_channels_writes_history(**found)
