"""Replay cassettes: recorded model replies, so agents run offline, in tests and in the demo.
The file format (with an example) is `runner.spec.cassette`'s; this module reads a cassette and
keeps the cursors.

Which reply comes next is decided from the conversation, so replay survives restarts: each reply
is tagged with its index (`response_metadata["replay_index"]`), and a call continues after the
last tagged reply of the same agent in its conversation. A conversation with no reply yet starts
at 0 for the main agent (a new thread) and, for a subagent, at the next reply no earlier call in
the same thread has taken, so a subagent called several times takes successive replies. Cursors
are kept per thread (the run config's `thread_id`): a long-lived server replays each thread's
subagents from their first reply. Calls outside any thread share one process-wide cursor.

A subagent's replies form runs, each ending with a reply without tool calls (as the subagent's
loop ends). A new call to the subagent starts a run chosen from its `task` call, never from the
order in which parallel runs reach their model: the calls of one parent reply are given runs
together, in the order the parent made them, a run whose first reply names a call (`answers`:
its `description` or `id`) going to that call.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from runner.errors import Problem, SpecError
from runner.load.source import SourceMap
from runner.spec.cassette import (
    CASSETTE_SUFFIXES,
    CassetteAnswers,
    CassetteFile,
    CassetteReply,
    CassetteToolCall,
    CassetteUsage,
)

__all__ = [
    "CASSETTE_SUFFIXES",
    "Cassette",
    "CassetteAnswers",
    "CassetteDocument",
    "CassetteFile",
    "CassetteReply",
    "CassetteToolCall",
    "CassetteUsage",
    "load_cassette",
    "read_cassette",
]


class Cassette:
    """A loaded cassette plus the in-process cursor of each agent's replies, per thread."""

    def __init__(
        self, path: Path, agents: dict[str, list[CassetteReply]], main: list[CassetteReply] | None
    ) -> None:
        self.path = path
        self.agents = agents
        self.main = main
        self._cursor: dict[tuple[str | None, str], int] = {}
        self._lock = threading.Lock()
        self._taken: dict[tuple[str | None, str], set[int]] = {}
        """Per (thread, agent): the runs (see `runs`) a call has started."""
        self._assigned: dict[tuple[str | None, str], dict[str, int]] = {}
        """Per (thread, agent): the run each `task` call (by id) was given."""
        self._runs: dict[str, list[tuple[int, int]]] = {}
        self._final: dict[str, frozenset[str]] = {}
        """Per agent: the tools whose call is its final answer (a `response_format` answer)."""

    def answers_with(self, agent: str, tools: frozenset[str]) -> None:
        """A reply of `agent` that only calls these tools (its `response_format` answer) ends a
        run, as a reply without tool calls does."""
        with self._lock:
            if self._final.get(agent) != tools:
                self._final[agent] = tools
                self._runs.pop(agent, None)

    def replies_for(self, agent: str, *, is_main: bool) -> list[CassetteReply]:
        if agent in self.agents:
            return self.agents[agent]
        if is_main and self.main is not None:
            return self.main
        return []

    def unused(
        self, main: str, main_played: int, thread: str | None = None
    ) -> list[tuple[str, int, int]]:
        """(agent, replies played, replies it has) for each agent that left replies unplayed in
        `thread` in this process; the main agent's count also comes from its conversation
        (`main_played`), which survives a restart."""
        with self._lock:
            cursor = {agent: n for (at, agent), n in self._cursor.items() if at == thread}
        lists = dict(self.agents)
        if self.main is not None and main not in lists:
            lists[main] = self.main
        found = []
        for agent, replies in lists.items():
            played = cursor.get(agent, 0)
            expected = len(replies)
            if agent == main:
                played = max(played, main_played)
                # Text-only replies after the last one played answer later messages on the
                # thread (the showcase's "no more replies" note): not a slip.
                while expected > played and not replies[expected - 1].tool_calls:
                    expected -= 1
            if played < expected:
                found.append((agent, played, len(replies)))
        return found

    def claim(self, agent: str, index: int | None, thread: str | None = None) -> int:
        """The index to play: `index` when the conversation already decided it, else the next
        reply no call in `thread` has taken yet. Either way that thread's cursor moves past it,
        and the run holding it counts as started."""
        key = (thread, agent)
        with self._lock:
            chosen = self._cursor.get(key, 0) if index is None else index
            self._cursor[key] = max(self._cursor.get(key, 0), chosen + 1)
            for number, (start, end) in enumerate(self.runs(agent)):
                if start <= chosen <= end:
                    self._taken.setdefault(key, set()).add(number)
            return chosen

    def runs(self, agent: str) -> list[tuple[int, int]]:
        """(first, last) reply index of each run of a subagent: a run ends with a reply without
        tool calls, as the subagent's loop does."""
        if agent in self._runs:
            return self._runs[agent]
        replies = self.agents.get(agent) or []
        final = self._final.get(agent, frozenset())
        found: list[tuple[int, int]] = []
        start = 0
        for index, reply in enumerate(replies):
            if all(call.name in final for call in reply.tool_calls):
                found.append((start, index))
                start = index + 1
        if start < len(replies):
            found.append((start, len(replies) - 1))
        self._runs[agent] = found
        return found

    def start_of_run(
        self,
        agent: str,
        thread: str | None,
        call_id: str | None,
        description: str,
        siblings: tuple[tuple[str | None, str], ...] = (),
        run: int | None = None,
    ) -> int:
        """The first reply of the run that answers a new `task` call to subagent `agent`.

        The calls of one parent reply (`siblings`, in order, this one included) get their runs
        together, whichever call asks first: each takes the first run not yet started that names
        it (`answers`), else the first one that names no call. So parallel calls get the same
        replies on every run. `len(replies)` when no run is left for it.

        `run`, when the caller knows it (a workflow step counts its agent's runs in its state),
        is the run to play, whatever this process has played before."""
        key = (thread, agent)
        if run is not None:
            runs = self.runs(agent)
            with self._lock:
                if run >= len(runs):
                    return len(self.agents.get(agent) or [])
                self._taken.setdefault(key, set()).add(run)
                return runs[run][0]
        with self._lock:
            assigned = self._assigned.setdefault(key, {})
            if call_id is None:
                return self._take_run(agent, key, None, description)
            if call_id not in assigned:
                for sibling_id, sibling_description in siblings or ((call_id, description),):
                    if sibling_id is not None and sibling_id not in assigned:
                        assigned[sibling_id] = self._take_run(
                            agent, key, sibling_id, sibling_description
                        )
                if call_id not in assigned:  # not among the siblings given
                    assigned[call_id] = self._take_run(agent, key, call_id, description)
            return assigned[call_id]

    def _take_run(
        self, agent: str, key: tuple[str | None, str], call_id: str | None, description: str
    ) -> int:
        replies = self.agents.get(agent) or []
        taken = self._taken.setdefault(key, set())
        free = [(n, start) for n, (start, _) in enumerate(self.runs(agent)) if n not in taken]
        named = [
            (n, start)
            for n, start in free
            if isinstance(answers := replies[start].answers, CassetteAnswers)
            and answers.matches(call_id, description)
        ]
        unnamed = [(n, start) for n, start in free if replies[start].answers is None]
        for number, start in named[:1] or unnamed[:1]:
            taken.add(number)
            return start
        return len(replies)

    def unmatched_answers(self, agent: str, thread: str | None) -> list[CassetteAnswers]:
        """The calls named by `answers` on runs of `agent` no call in `thread` has started."""
        replies = self.agents.get(agent) or []
        with self._lock:
            taken = set(self._taken.get((thread, agent), ()))
        return [
            answers
            for n, (start, _) in enumerate(self.runs(agent))
            if n not in taken and isinstance(answers := replies[start].answers, CassetteAnswers)
        ]


@dataclass(frozen=True)
class CassetteDocument:
    """A cassette as read, with where each value is (for `runner.check.cassettes`)."""

    shown: str
    """The path as messages show it."""
    parsed: CassetteFile
    smap: SourceMap
    plain_list: bool
    """The file is a plain list: the main agent's replies, under the key `MAIN`."""

    def problem(
        self, path: tuple[str | int, ...], message: str, *, at_key: bool = False
    ) -> Problem:
        """A problem at `path` (`("agents", name, index, ...)`), printed as the file writes it."""
        found = self.smap.problem(path, message, at_key=at_key)
        if self.plain_list and path[:2] == ("agents", MAIN):
            prefix = f"agents.{MAIN}"
            return replace(found, path=found.path.removeprefix(prefix))
        return found


def read_cassette(path: str | Path) -> CassetteDocument:
    """Parse and validate a cassette file; problems are located like spec problems (SpecError)."""
    from runner.errors import display_path
    from runner.load.problems import problems_from_validation, read_yaml_file
    from runner.load.source import Pos

    path = Path(path)
    shown = display_path(path)
    doc = read_yaml_file(
        path, shown, missing="cassette not found", unreadable="cannot read cassette", env={}
    )
    value, pos = doc.value, doc.pos
    plain_list = isinstance(value, list)
    if plain_list:  # the main agent's replies: validate them as `agents: {__main__: [...]}`
        value = {"agents": {MAIN: value}}
        pos = Pos(pos.loc, children={"agents": Pos(pos.loc, children={MAIN: pos})})
    if not isinstance(value, dict):
        raise SpecError(
            Problem(shown, 1, 1, "", "expected a list of replies, or a mapping with `agents:`")
        )
    smap = SourceMap(pos)
    try:
        parsed = CassetteFile.model_validate(value)
    except ValidationError as exc:
        problems = problems_from_validation(exc, value, smap, CassetteFile)
        if plain_list:
            prefix = f"agents.{MAIN}"
            problems = [replace(p, path=p.path.removeprefix(prefix)) for p in problems]
        raise SpecError(problems) from None
    return CassetteDocument(shown, parsed, smap, plain_list)


def load_cassette(path: str | Path) -> Cassette:
    """Parse and validate a cassette; problems are located like spec problems (SpecError)."""
    document = read_cassette(path)
    agents = dict(document.parsed.agents)
    main = agents.pop(MAIN, None)
    return Cassette(Path(path), agents, main)


MAIN = "__main__"
"""The key a plain-list cassette's replies are read under: the main agent's, whatever its name."""
