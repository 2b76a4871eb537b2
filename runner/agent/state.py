"""The graph state agentctl's agents keep: `messages` as a LangGraph `DeltaChannel`.

LangGraph's default `messages` channel stores the whole conversation in every checkpoint, so a
thread's checkpoints grow with its length and every step writes the history again. A
`DeltaChannel` stores only the messages a step wrote (in the checkpoint's writes) and the whole
list every `SNAPSHOT_EVERY` updates (a `_DeltaSnapshot`); reading a checkpoint starts from the
nearest snapshot before it (or the full list an agentctl before deltas stored) and replays the
writes since through the channel's reducer. Retention keeps that chain of ancestors
(`runner.threads.retention`), and the thread tools read values through it
(`runner.threads.values`).

The reducer is LangGraph's own batch reducer for messages: LangGraph gives every message written
to a channel with that reducer a stable id before it is saved, which a replay needs.

No `from __future__ import annotations` here: the state class is made inside `agent_state`,
and LangChain reads its annotations, which must name the cadence there.
"""

import functools
from typing import Annotated, Any, Required

from langchain.agents.middleware.types import AgentState
from langchain_core.messages import AnyMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer

__all__ = ["SNAPSHOT_EVERY", "agent_state"]

SNAPSHOT_EVERY = 50
"""Updates of `messages` between two snapshots of the whole list. A snapshot costs a write of
the whole conversation; between two, retention keeps every checkpoint back to the last one (a
turn of one tool call updates `messages` four times)."""


@functools.cache
def agent_state(snapshot_every: int) -> type:
    """The state schema `create_agent` merges the middleware's schemas into."""

    class AgentctlState(AgentState[Any]):
        messages: Required[
            Annotated[
                list[AnyMessage],
                DeltaChannel(_messages_delta_reducer, snapshot_frequency=snapshot_every),
            ]
        ]

    return AgentctlState
