"""Checkpoint retention: a thread's storage grows with its length, not with its square.

LangGraph writes a checkpoint after every graph step, and each checkpoint holds every channel's
whole value but the `messages` and a `state` backend's `files` (below, kept as deltas): a turn
writes a few of them, and kept for ever they add up. So after each turn the thread is pruned
to what something can still use:

- the latest `keep` checkpoints of each namespace (the main graph's `""` and each subagent's):
  the latest is what the next turn, a resume after a crash and `agentctl threads show` read; the
  few before it let the Python API look back over the last turn or two
  (`graph.get_state_history`);
- every checkpoint where the thread waited for an approval (it has an `__interrupt__` write):
  the pending one is what an answer resumes, the answered ones record what was asked;
- every checkpoint a fork was made from, and the fork: a checkpoint LangGraph wrote for
  `update_state` (source `update` / `fork`) and its parent, which a run from the fork replays
  by id; and every checkpoint with two or more children (a branch point, from running again
  from an older checkpoint) with those children, so the branch stays visible to later prunes;
- a subagent's checkpoints only while the main-graph checkpoint it ran under is kept (or is
  newer than the oldest kept one): they serve resuming that step and nothing after it;
- every checkpoint a kept one's values are rebuilt from: agentctl keeps `messages` in a
  LangGraph `DeltaChannel` (`runner.agent.state`), and a `state` backend's `files` too
  (`runner.backends.files_channel`), so a checkpoint holds only what its step wrote, and a
  channel's whole value only at its snapshots (`messages` every `SNAPSHOT_EVERY` updates,
  `files` every `FILES_SNAPSHOT_EVERY` steps). Reading a checkpoint walks its parents back to
  the nearest one holding the value (a snapshot, or the full value an agentctl before deltas
  stored) and replays the writes of those in between, so each kept checkpoint keeps that chain,
  with its writes, for each channel: a checkpoint whose metadata counts a channel's updates
  since its snapshot (`counters_since_delta_snapshot`) needs its parent for that channel; one
  that does not holds that channel's value. The chain is what LangGraph's
  `BaseCheckpointSaver.prune` warns about: pruned, the messages would read back as an empty or
  cut conversation and the files as missing or stale, without an error.

Two delta channels snapshot at different checkpoints, and every checkpoint left must read whole
(a fork can start from any, and the Python API lists them all): a checkpoint kept for the chain
of its files needs the chain of its messages too, which reaches back to a messages snapshot
whose files need an older files snapshot, and so on. That walk ends only at a checkpoint holding
both values, and LangGraph's cadences alone may never make one. So retention makes one: when the
latest main-graph checkpoint is `ALIGN_EVERY` or more checkpoints past the last checkpoint
holding every value (`snapshots_due`), `prune` stores in its metadata counters that every
channel's cadence has reached, and LangGraph snapshots all of them at the next step (a
checkpoint's counters are what the next step counts on from; nothing else reads them). This
costs one more write of the conversation and of the files every `ALIGN_EVERY` steps or so, and
bounds what a kept checkpoint reaches back to: one such checkpoint, at most `ALIGN_EVERY` and a
turn before it. It is done keeping all checkpoints too, so that a lower `keep` can prune later.

The `writes` rows of every removed checkpoint go with it, and so do the tool journal's entries
(`runner.threads.guards`) that no checkpoint left can need: an entry is read only when a step
runs again from a checkpoint where its call was still unanswered, and such a checkpoint was
written before the call returned and its entry was recorded. So the entries recorded before the
oldest checkpoint left was written go, less `JOURNAL_SKEW` (the clocks of the hosts sharing a
database may disagree by that much; the checkpoint's time is the one in its uuid6 id, the
entry's its `recorded_at`). Keeping every checkpoint keeps every entry.

A kept checkpoint's parent pointer may then name a removed one only where nothing is rebuilt
through it: LangGraph follows parent pointers to replay a fork (whose parent is kept, above) and
to rebuild `DeltaChannel` values (whose chain is kept, above).

So `keep` counts the checkpoints a user can go back to; a thread also keeps up to about
`ALIGN_EVERY` steps and a turn of small checkpoints (the new messages and files of each) and a
snapshot of the conversation and of the files: at 1,000 short turns, a few MB
(`bench/RESULTS.md`, section 9 and "files kept as deltas").

`agentctl threads fork --at` starts a new thread from any checkpoint kept here (it copies that
checkpoint into the new thread: nothing here needs to keep it for the fork); `threads export` and
`threads show` read only the latest checkpoint and the ones where the thread waited. The rules
above also keep what LangGraph forks made through the Python API need.

`keep` is `DEFAULT_KEEP` (10) unless the database has its own setting (`agentctl threads
keep-checkpoints N|all`, stored in `agentctl_settings`) or a run sets one (`agentctl run
--keep-checkpoints N|all`); `None` ("all") keeps every checkpoint, for full time travel, at the
price of every checkpoint. Ten covers the last two turns of one tool call each (five checkpoints
a turn) or one turn of three tool rounds.

Space: a new database uses SQLite's incremental auto-vacuum. Pages freed by pruning are reused by
the next turn's checkpoints, so pruning alone keeps the file at about the live size plus one
turn; when more than a quarter of the file (and at least `RECLAIM_MIN_BYTES`) is free, as after
`threads rm` or lowering `keep`, the free pages are returned to the file system
(`PRAGMA incremental_vacuum`). Not after a turn, though, when the free pages are no more than
twice what that turn's prune freed: the next turn's checkpoints take them again, and on a long
thread (large checkpoints) giving them back made a vacuum, and the file's growth after it, part
of every turn. So the file holds at most a quarter of free space, or two turns' worth. A
database made before incremental auto-vacuum is switched over by one full `VACUUM` in
`agentctl threads keep-checkpoints` (it says so).

Both databases: `CheckpointRetention` is what the run loop and `agentctl threads` call, and
`TableRetention` is its one implementation over a `runner.threads.guards.Database`: the settings,
the choice (`kept_checkpoints`) and the prune are written once. A database differs only in what
its subclass says: the name of LangGraph's writes table and how a checkpoint's metadata is read
(`runner.threads.sqlite.SqliteRetention`), and, on Postgres, removing the channel values
(`checkpoint_blobs`, stored once per version outside the checkpoints) that only removed
checkpoints named, and giving the space back with a bounded `VACUUM` of the checkpoint tables
when pruning has left enough dead rows, in the background, not relying on the server's
autovacuum (`runner.threads.postgres.PostgresRetention`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from runner.threads.guards import Database, Execute
from runner.threads.schema import stamp
from runner.threads.values import DELTA_CHANNELS

__all__ = [
    "DEFAULT_KEEP",
    "RECLAIM_MIN_BYTES",
    "SETTING",
    "CheckpointRetention",
    "CheckpointRow",
    "Pruned",
    "TableRetention",
    "kept_checkpoints",
    "parse_keep",
]

DEFAULT_KEEP = 10
"""Checkpoints kept per thread namespace unless the database or the run says otherwise."""

RECLAIM_MIN_BYTES = 4 * 1024 * 1024
"""Free space below this stays in the file for the next checkpoints to reuse."""

SETTING = "keep_checkpoints"

ALIGN_EVERY = 50
"""Main-graph checkpoints between two that hold every delta channel's value (see
`snapshots_due`): what a kept checkpoint's chain can reach back past the last `keep`."""

JOURNAL_SKEW = 600
"""Seconds by which a tool journal entry must be older than the oldest checkpoint left before
a prune removes it: more than the clocks of hosts sharing a database should ever disagree."""

SNAPSHOT_NOW = 1 << 30
"""Updates since a snapshot that no channel's cadence waits for: stored in a checkpoint's
counters, LangGraph snapshots the channel at the next step."""


def parse_keep(text: str) -> int | None:
    """`N` (a whole number of at least 1) or `all` (None); ValueError with the reason otherwise."""
    value = text.strip().lower()
    if value == "all":
        return None
    try:
        number = int(value)
    except ValueError:
        raise ValueError(
            f"expected a number of checkpoints (1 or more) or `all`, found {text!r}"
        ) from None
    if number < 1:
        raise ValueError(
            f"keep at least 1 checkpoint (the latest is what a thread continues from), "
            f"found {number}"
        )
    return number


def describe_keep(keep: int | None) -> str:
    return "all" if keep is None else str(keep)


@dataclass(frozen=True)
class CheckpointRow:
    """What retention needs of a checkpoint (never its blob)."""

    namespace: str
    checkpoint_id: str
    parent_id: str | None
    source: str | None
    """The metadata's `source`: input, loop, update, fork."""
    root_id: str | None
    """For a subagent's checkpoint: the main-graph checkpoint it ran under."""
    deltas: frozenset[str] = frozenset()
    """The channels whose value at this checkpoint is rebuilt from its ancestors' writes (each a
    `DeltaChannel` not snapshotted here: its metadata counts updates since the snapshot)."""

    @classmethod
    def read(cls, *row: Any) -> CheckpointRow:
        """A row of `TableRetention.ROWS`: its last column is the metadata's
        `counters_since_delta_snapshot` (JSON text, a decoded mapping, or NULL), or its keys
        (Postgres: the server lists them, sparing a JSON decode a row)."""
        namespace, checkpoint_id, parent_id, source, root_id, counters = row
        if isinstance(counters, str | bytes):
            counters = json.loads(counters)
        return cls(namespace, checkpoint_id, parent_id, source, root_id, frozenset(counters or ()))


@dataclass(frozen=True)
class Pruned:
    checkpoints: int = 0
    writes: int = 0
    calls: int = 0
    """Tool journal entries removed."""


def made_at(checkpoint_id: str) -> float | None:
    """The Unix time in a LangGraph checkpoint id (a uuid6: 100-ns intervals since 1582, in its
    first 60 bits); None for an id of another kind."""
    digits = checkpoint_id.replace("-", "")
    if len(digits) != 32 or digits[12] != "6":
        return None
    try:
        ticks = int(digits[:12], 16) << 12 | int(digits[13:16], 16)
    except ValueError:
        return None
    return (ticks - 0x01B21DD213814000) / 1e7


def kept_checkpoints(
    rows: Iterable[CheckpointRow], waited: set[tuple[str, str]], keep: int | None
) -> set[tuple[str, str]]:
    """The (namespace, checkpoint id) pairs of one thread that retention keeps (see the module
    docstring); `waited` are those with an `__interrupt__` write. Ids sort by time (uuid6)."""
    rows = list(rows)
    everything = {(r.namespace, r.checkpoint_id) for r in rows}
    if keep is None:
        return everything
    by_namespace: dict[str, list[CheckpointRow]] = {}
    for row in rows:
        by_namespace.setdefault(row.namespace, []).append(row)
    # Forks and branches stay marked across prunes: a fork checkpoint is kept with the one it
    # was made from, and a branch point with its children (the first step of each branch).
    children = Counter((r.namespace, r.parent_id) for r in rows if r.parent_id)
    branches = {key for key, count in children.items() if count > 1 and key in everything}
    forks = [r for r in rows if r.source in ("update", "fork")]
    kept = set(waited & everything) | branches
    kept |= {(r.namespace, r.checkpoint_id) for r in forks}
    kept |= {(r.namespace, r.parent_id) for r in forks if r.parent_id} & everything
    kept |= {(r.namespace, r.checkpoint_id) for r in rows if (r.namespace, r.parent_id) in branches}
    for namespace_rows in by_namespace.values():
        namespace_rows.sort(key=lambda r: r.checkpoint_id, reverse=True)
        kept |= {(r.namespace, r.checkpoint_id) for r in namespace_rows[:keep]}
    roots = {cid for ns, cid in kept if ns == ""}
    oldest_root = min(roots, default=None)
    for row in rows:
        if row.namespace == "" or (row.namespace, row.checkpoint_id) not in kept:
            continue
        ran_under = row.root_id
        if ran_under is None or ran_under in roots:
            continue
        if oldest_root is None or ran_under < oldest_root:
            kept.discard((row.namespace, row.checkpoint_id))
    return kept | delta_chains(rows, kept)


def delta_chains(rows: Iterable[CheckpointRow], kept: set[Key]) -> set[Key]:
    """The ancestors (with their writes) that the values of the `kept` checkpoints are rebuilt
    from, and so on for each of those: for each delta channel of a checkpoint, back along its
    parents to the nearest one holding that channel's value (a snapshot, or a full value
    written before deltas). Each checkpoint left must read whole (a fork can start from any), so
    one kept for its files also keeps what its messages are rebuilt from; the walk ends at a
    checkpoint holding every channel (`snapshots_due` makes one every `ALIGN_EVERY` steps)."""
    by_key = {(r.namespace, r.checkpoint_id): r for r in rows}
    chains: set[Key] = set()
    walked: set[tuple[Key, str]] = set()
    todo = list(kept)
    while todo:
        start = by_key.get(todo.pop())
        for channel in start.deltas if start is not None else ():
            row = start
            while row is not None and channel in row.deltas and row.parent_id:
                parent = (row.namespace, row.parent_id)
                if (parent, channel) in walked:
                    break  # walked from there already
                walked.add((parent, channel))
                if parent not in kept and parent not in chains:
                    chains.add(parent)
                    todo.append(parent)
                row = by_key.get(parent)
    return chains


def snapshots_due(rows: Iterable[CheckpointRow]) -> str | None:
    """The latest main-graph checkpoint when the nearest one before it holding every delta
    channel's value is `ALIGN_EVERY` or more checkpoints back and two or more channels are
    rebuilt in between: then `TableRetention.prune` marks it so that the next step snapshots
    every channel. None otherwise (one channel's chain alone ends at its own snapshot)."""
    main = {r.checkpoint_id: r for r in rows if r.namespace == ""}
    if not main:
        return None
    latest = row = main[max(main)]
    counted: set[str] = set()
    for _ in range(ALIGN_EVERY):
        if not row.deltas:
            return None
        counted |= row.deltas
        found = main.get(row.parent_id) if row.parent_id else None
        if found is None:
            return None  # the thread's first checkpoint: not that far back yet
        row = found
    return latest.checkpoint_id if row.deltas and len(counted | row.deltas) > 1 else None


class CheckpointRetention(Protocol):
    """Prunes one checkpointer's storage; `runner.run.Session` calls `prune` after each turn,
    `agentctl threads` the rest. `SqliteRetention` here,
    `runner.threads.postgres.PostgresRetention`."""

    def latest_checkpoint_id(self, thread_id: str) -> str | None:
        """The id of the thread's latest main-graph checkpoint, without reading its values
        (lets a session tell whether a thread moved since its last turn)."""
        ...

    def prune(self, thread_id: str, keep: int | None) -> Pruned:
        """Remove the checkpoints of `thread_id` (and their writes) that `kept_checkpoints`
        does not keep; `keep=None` removes nothing."""
        ...

    def prune_all(self, keep: int | None) -> Pruned:
        """`prune` every thread in the database (after lowering `keep`)."""
        ...

    def reclaim(self, *, force: bool = False) -> int:
        """Give free space back to the file system when much of the storage is free (always
        with `force`); the bytes given back."""
        ...

    def incremental(self) -> bool:
        """Whether `reclaim` can give space back without rewriting the whole database once."""
        ...

    def has_checkpoints(self, thread_id: str) -> bool: ...

    def delete_thread(self, thread_id: str) -> None:
        """Every checkpoint and write of a thread."""
        ...

    def stored_keep(self) -> tuple[bool, int | None]:
        """(whether the database has its own `keep` setting, that setting)."""
        ...

    def store_keep(self, keep: int | None) -> None: ...

    def effective_keep(self) -> int | None:
        """The database's setting, else `DEFAULT_KEEP`."""
        ...


def keep_setting(value: object) -> tuple[bool, int | None]:
    """`stored_keep` from the `agentctl_settings` value read (None when there is none): an
    unreadable value counts as no setting."""
    if value is None:
        return False, None
    try:
        return True, parse_keep(str(value))
    except ValueError:
        return False, None


Key = tuple[str, str]
"""(checkpoint namespace, checkpoint id)."""

WAITED = (
    "EXISTS (SELECT 1 FROM {writes} w WHERE w.thread_id = c.thread_id "
    "AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id "
    "AND w.channel = '__interrupt__')"
)
"""Whether checkpoint `c` has an `__interrupt__` write (SQL, `{writes}` the writes table)."""

BATCH = 500
"""Checkpoints removed by one `DELETE` (well under SQLite's 32,766 bound variables)."""


def batches(keys: Iterable[Key]) -> Iterator[tuple[str, list[str]]]:
    """`keys` as (namespace, up to `BATCH` of its checkpoint ids): a prune deletes a turn's
    obsolete checkpoints, or the chain a new snapshot cut (some 50), with a statement per
    table and namespace, not one per checkpoint."""
    by_namespace: dict[str, list[str]] = {}
    for namespace, checkpoint_id in keys:
        by_namespace.setdefault(namespace, []).append(checkpoint_id)
    for namespace, ids in by_namespace.items():
        for start in range(0, len(ids), BATCH):
            yield namespace, ids[start : start + BATCH]


def marks(values: Sequence[Any]) -> str:
    """Placeholders for `values` in an SQL `IN (...)`."""
    return ", ".join("?" * len(values))


Read = tuple[list[CheckpointRow], set[Key]]
"""A thread's checkpoints, and those of them that wait for an answer."""


def read_rows(found: Iterable[Any]) -> Read:
    """The `Read` of rows of `TableRetention.ROWS`."""
    rows: list[CheckpointRow] = []
    waited: set[Key] = set()
    for row in found:
        rows.append(CheckpointRow.read(*row[:6]))
        if row[6]:
            waited.add((row[0], row[1]))
    return rows, waited


class TableRetention:
    """`CheckpointRetention` over a thread database's `Database`, for LangGraph's checkpoint
    tables; a subclass names its dialect's differences (see the module docstring)."""

    WRITES = "writes"
    """LangGraph's table of a checkpoint's pending writes."""
    ROWS = (
        "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
        "json_extract(CAST(metadata AS TEXT), '$.source'), "
        "json_extract(CAST(metadata AS TEXT), '$.parents.\"\"'), "
        "json_extract(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot'), "
        f"{WAITED.format(writes='writes')} FROM checkpoints c WHERE thread_id = ?"
    )
    """A thread's checkpoints, one read: the columns `CheckpointRow.read` reads (ids, parent,
    metadata source, root and counters since the delta channels' snapshots), then whether each
    waits for an answer (has an `__interrupt__` write). It ends with its `WHERE`, which `prune`
    extends."""
    SNAPSHOT_NEXT = (
        "UPDATE checkpoints SET metadata = CAST(json_set(CAST(metadata AS TEXT), "
        "'$.counters_since_delta_snapshot', json(?)) AS BLOB) "
        "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?"
    )
    """Store (counters JSON, thread, checkpoint id) as a checkpoint's counters since the delta
    channels' snapshots (`snapshots_due`)."""
    OWN: tuple[str, ...] = ("checkpoints",)
    """The checkpointer's tables with rows per thread, other than the writes table."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # ----------------------------------------------------------------------- per dialect

    def ready(self) -> bool:
        """Whether LangGraph's tables exist yet (a checkpointer creates them when first used)."""
        return True

    def values_of(self, execute: Execute, thread_id: str, gone: list[Key]) -> set[Any]:
        """What the checkpoints `gone` name outside their rows, read before they are deleted,
        for `drop_values`; nothing by default."""
        return set()

    def drop_values(self, execute: Execute, thread_id: str, values: set[Any]) -> None:
        """Remove those of `values` that no kept checkpoint names (after the delete, in the
        prune's transaction); nothing by default."""

    def reclaim(self, *, force: bool = False) -> int:
        return 0

    def incremental(self) -> bool:
        return True

    # ----------------------------------------------------------------------- settings

    def stored_keep(self) -> tuple[bool, int | None]:
        rows = self.db.fetch("SELECT value FROM agentctl_settings WHERE key = ?", (SETTING,))
        return keep_setting(rows[0][0] if rows else None)

    def store_keep(self, keep: int | None) -> None:
        self.db.write(
            "INSERT INTO agentctl_settings (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [(SETTING, describe_keep(keep))],
        )

    def effective_keep(self) -> int | None:
        found, keep = self.stored_keep()
        return keep if found else DEFAULT_KEEP

    # ----------------------------------------------------------------------- pruning

    def prune(self, thread_id: str, keep: int | None) -> Pruned:
        if not self.ready():
            return Pruned()
        # Read first, outside a write transaction: most turns leave nothing to prune (a kept
        # checkpoint's delta chain goes back to the last snapshot), and then commit nothing.
        if keep is None:  # only the alignment below: the latest checkpoints are enough
            latest = self.db.fetch(
                f"{self.ROWS} AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT ?",
                (thread_id, ALIGN_EVERY + 1),
            )
            read = read_rows(latest)
        else:
            read = self._rows(self.db.fetch, thread_id)
        due = snapshots_due(read[0])
        if due is not None:  # even keeping all: a lower `keep` later can then prune
            self.db.write(
                self.SNAPSHOT_NEXT,
                [(json.dumps({c: [SNAPSHOT_NOW, 0] for c in DELTA_CHANNELS}), thread_id, due)],
            )
        if keep is None or not self._obsolete(self.db.fetch, thread_id, keep, read):
            return Pruned()
        with self.db.transaction(thread_id) as execute:
            read = self._rows(execute, thread_id)
            gone = self._obsolete(execute, thread_id, keep, read)
            if not gone:
                return Pruned()
            values = self.values_of(execute, thread_id, gone)
            writes = 0
            for ns, ids in batches(gone):
                where = f"thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({marks(ids)})"
                writes += len(
                    execute(
                        f"DELETE FROM {self.WRITES} WHERE {where} RETURNING 1",
                        (thread_id, ns, *ids),
                    )
                )
                execute(f"DELETE FROM checkpoints WHERE {where}", (thread_id, ns, *ids))
            self.drop_values(execute, thread_id, values)
            left = {(r.namespace, r.checkpoint_id) for r in read[0]}.difference(gone)
            oldest = min((cid for _, cid in left), default=None)
            calls = self._forget_journal_entries(execute, thread_id, oldest) if oldest else 0
        return Pruned(checkpoints=len(gone), writes=writes, calls=calls)

    def _forget_journal_entries(self, execute: Execute, thread_id: str, oldest: str) -> int:
        """Remove the tool journal's entries of `thread_id` recorded `JOURNAL_SKEW` seconds or
        more before checkpoint `oldest` (the oldest left) was written; how many went."""
        made = made_at(oldest)
        if made is None:
            return 0
        before = stamp(made - JOURNAL_SKEW)
        return len(
            execute(
                "DELETE FROM agentctl_tool_journal WHERE thread_id = ? AND recorded_at < ? "
                "RETURNING 1",
                (thread_id, before),
            )
        )

    def _rows(self, execute: Execute, thread_id: str) -> Read:
        return read_rows(execute(self.ROWS, (thread_id,)))

    def _obsolete(
        self,
        execute: Execute,
        thread_id: str,
        keep: int,
        read: Read | None = None,
    ) -> list[Key]:
        """The checkpoints of `thread_id` that `kept_checkpoints` does not keep (of `read`, when
        the rows were just read)."""
        rows, waited = read if read is not None else self._rows(execute, thread_id)
        if len(rows) <= keep:
            return []
        kept = kept_checkpoints(rows, waited, keep)
        return [
            (r.namespace, r.checkpoint_id)
            for r in rows
            if (r.namespace, r.checkpoint_id) not in kept
        ]

    def prune_all(self, keep: int | None) -> Pruned:
        if not self.ready():
            return Pruned()
        total = Pruned()
        for (thread_id,) in self.db.fetch("SELECT DISTINCT thread_id FROM checkpoints"):
            done = self.prune(thread_id, keep)
            total = Pruned(
                total.checkpoints + done.checkpoints,
                total.writes + done.writes,
                total.calls + done.calls,
            )
        return total

    def latest_checkpoint_id(self, thread_id: str) -> str | None:
        if not self.ready():
            return None
        rows = self.db.fetch(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            (thread_id,),
        )
        return str(rows[0][0]) if rows else None

    def has_checkpoints(self, thread_id: str) -> bool:
        return self.ready() and bool(
            self.db.fetch("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (thread_id,))
        )

    def delete_thread(self, thread_id: str) -> None:
        """Every checkpoint and write of a thread (what the savers' `delete_thread` does, without
        importing LangGraph: `agentctl threads rm` stays light)."""
        if not self.ready():
            return
        with self.db.transaction(thread_id) as execute:
            for table in (self.WRITES, *self.OWN):
                execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
