"""The replies of replay cassettes that no agent played in a run, reported as warnings.

A tool-name or subagent typo in a hand-written cassette leaves some replies unplayed; the run
ends with an `unused_replies` warning naming each cassette and agent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import display_path
from runner.events import RunWarning

if TYPE_CHECKING:
    from runner.replay.cassette import Cassette
    from runner.spec import AgentSpec

__all__ = ["unused_replies"]


def unused_replies(
    cassettes: Mapping[Path, Cassette],
    spec: AgentSpec,
    name: str,
    thread_id: str,
    values: Mapping[str, Any],
) -> Iterator[RunWarning]:
    """At the end of a run on replay models: the replies no agent played, per cassette (a
    tool-name or subagent typo in a hand-written cassette leaves some unplayed). A subagent
    that an earlier process of this thread called is not counted: its replies were played
    there, where this process cannot see."""
    messages = values.get("messages", [])
    main_played = 1 + max(
        (
            int(m.response_metadata.get("replay_index", -1))
            for m in messages
            if m.type == "ai" and m.response_metadata.get("replay_agent") == name
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
    for path, cassette in cassettes.items():
        unused = [
            (agent, played, total)
            for agent, played, total in cassette.unused(name, main_played, thread_id)
            if agent == name or played or agent not in earlier
        ]
        elsewhere = _played_by_other_files(spec, path, {a for a, played, _ in unused if not played})
        left = [
            f"{agent} played {played} of {total}"
            for agent, played, total in unused
            if agent not in elsewhere
        ]
        if left:
            yield RunWarning(
                agent=name,
                code="unused_replies",
                message=f"replay cassette {display_path(path)} has replies no agent "
                f"played: {'; '.join(left)} (a misspelt tool or subagent name in it, or "
                "a run that took another path)",
            )


def _played_by_other_files(spec: AgentSpec, cassette: Path, names: set[str]) -> set[str]:
    """Which of `names` (agents with no reply played) no agent of this build has, but an
    agent file in the cassette's folder plays: a shared cassette holds their replies."""
    from runner.check.tools import static_agents
    from runner.check.validate import agents_playing

    mine = {a.name for a in static_agents(spec)}
    mine |= {name + "/summary" for name in mine}
    foreign = names - mine
    if not foreign:
        return set()
    theirs: set[str] = set()
    for other in agents_playing(cassette):
        theirs |= {a.name for a in static_agents(other)}
    theirs |= {name + "/summary" for name in theirs}
    return foreign & theirs
