"""A saved checkpoint's channel values, with the channels a `DeltaChannel` keeps as deltas.

agentctl's graphs keep `messages` in a LangGraph `DeltaChannel` (`runner.agent.state`), and the
`files` of a `state` backend too (`runner.backends.files_channel`): a checkpoint holds a whole
value only at a snapshot (a `_DeltaSnapshot`), every few updates or steps; the others hold
nothing for it, and its value is the nearest ancestor's snapshot (or the full value an agentctl
before deltas stored) with the writes of the checkpoints since replayed through the channel's
reducer. The graph does that when it loads a checkpoint; the thread tools read
checkpoints through the checkpointer alone (`threads show`, `export`, `fork`), so they call
`checkpoint_values` here, which does the same through the saver's `get_delta_channel_history`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DELTA_CHANNELS", "checkpoint_values", "materialized"]

DELTA_CHANNELS = ("messages", "files")
"""The channels agentctl's graphs keep as deltas."""


def _channel(name: str) -> Any:
    """An empty `DeltaChannel` with the reducer and value type the graph gives `name`."""
    from langgraph.channels.delta import DeltaChannel
    from langgraph.graph.message import _messages_delta_reducer

    from runner.backends.state import merge_file_writes

    if name == "files":
        return DeltaChannel(merge_file_writes, dict)
    reducer: Any = _messages_delta_reducer  # typed for its messages, called with any values
    return DeltaChannel(reducer, list)


def checkpoint_values(checkpointer: Any, saved: Any) -> dict[str, Any]:
    """The channel values of `saved` (a `CheckpointTuple` read from `checkpointer`), with each
    delta channel's value rebuilt and each snapshot unwrapped: what the graph's state holds."""
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    checkpoint = saved.checkpoint
    values = {
        key: value.value if isinstance(value, _DeltaSnapshot) else value
        for key, value in (checkpoint.get("channel_values") or {}).items()
    }
    versions = checkpoint.get("channel_versions") or {}
    missing = [c for c in DELTA_CHANNELS if c not in values and c in versions]
    if missing:
        histories = checkpointer.get_delta_channel_history(config=saved.config, channels=missing)
        for name in missing:
            history = histories.get(name) or {"writes": []}
            channel = _channel(name).from_checkpoint(history.get("seed"))
            channel.replay_writes(history["writes"])
            values[name] = channel.get()
    return values


def materialized(checkpointer: Any, saved: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(checkpoint, metadata) of `saved` standing on their own: each delta channel's value
    stored in it as a snapshot and the metadata's counters since the last snapshot dropped, so
    it needs none of its ancestors (a fork's first checkpoint, in a thread without them)."""
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    checkpoint = dict(saved.checkpoint)
    values = dict(checkpoint.get("channel_values") or {})
    rebuilt = checkpoint_values(checkpointer, saved)
    for name in DELTA_CHANNELS:
        if name in rebuilt and not isinstance(values.get(name), _DeltaSnapshot):
            values[name] = _DeltaSnapshot(rebuilt[name])
    checkpoint["channel_values"] = values
    metadata = dict(saved.metadata or {})
    metadata.pop("counters_since_delta_snapshot", None)
    return checkpoint, metadata
