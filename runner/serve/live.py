"""The agents a server serves, changed while it serves (`agentctl serve --edit`).

A server starts with the agent files it found. With the editor, files come and go while it
runs: a new agent, a file whose `name:` changed (a rename), a file deleted. `LiveAgents` is the
served set as a mapping {graph id: agent file} that the page, the thread guard and the A2A
middleware read at each request, and `refresh` finds the files again, as serve did at start,
and tells the engine of each graph to add or to drop, so a new agent runs through the API and
on the page without a restart.

A file with problems is served under its name (its runs fail with the located problem until it
is fixed), as `serve --dev` serves one. When the files cannot be served together (two with one
`name:`, a shared workspace), nothing changes and `refresh` says why. A graph dropped keeps its
assistant and threads in the engine's database: they come back with a file of that name.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.serve import graphs
from runner.serve.agents import ServedAgent
from runner.serve.factory import GraphFactory

__all__ = ["LiveAgents", "Refreshed"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Refreshed:
    """What a refresh changed: graphs added and removed, or why nothing did (`problem`)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    problem: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"added": list(self.added), "removed": list(self.removed), "problem": self.problem}


@dataclass
class LiveAgents(Mapping[str, Path]):
    """{graph id: agent file} of the agents served now.

    `find()` collects the agent files as serve does at start (blocking); a new agent's graph
    comes from `factory` (made importable by `graphs.add`), and `engine`
    (`runner.serve.engines.Engine`, or anything with its `add_graph` and `remove_graph`) serves
    it. `targets`: the files and
    folders served, whose listing tells whether anything changed since the last refresh."""

    agents: list[ServedAgent]
    find: Callable[[], list[ServedAgent]]
    factory: GraphFactory
    engine: Any
    targets: tuple[Path, ...] = ()
    _by_name: dict[str, ServedAgent] = field(default_factory=dict, init=False)
    _seen: tuple[Any, ...] | None = field(default=None, init=False)
    _lock: asyncio.Lock | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._by_name = {agent.name: agent for agent in self.agents}
        self._seen = self._listing()

    def __getitem__(self, name: str) -> Path:
        return self._by_name[name].path

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._by_name))

    def __len__(self) -> int:
        return len(self._by_name)

    def served(self) -> list[ServedAgent]:
        return list(self._by_name.values())

    def _listing(self) -> tuple[Any, ...]:
        """The names and modification times of the files under `targets` (not their text: a
        change of a file already served is the factory's, which rebuilds it)."""
        seen: list[Any] = []
        for target in self.targets:
            try:
                if target.is_dir():
                    with os.scandir(target) as entries:
                        seen += sorted(
                            (entry.path, entry.stat().st_mtime_ns)
                            for entry in entries
                            if entry.is_file() and not entry.name.startswith(".")
                        )
                else:
                    seen.append((str(target), target.stat().st_mtime_ns))
            except OSError:
                seen.append((str(target), None))
        return tuple(seen)

    async def refresh(self, *, force: bool = False) -> Refreshed:
        """Find the agent files again (unless nothing under `targets` changed and not `force`)
        and serve what came, stop serving what went. Runs on the engine's event loop."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            listing = await asyncio.to_thread(self._listing)
            if not force and listing == self._seen:
                return Refreshed()
            from runner.errors import RunnerError

            try:
                found = await asyncio.to_thread(self.find)
            except RunnerError as exc:
                self._seen = None  # try again next time
                log.warning("the agent files changed but cannot be served: %s", exc)
                return Refreshed(problem=str(exc))
            self._seen = listing
            return await self._serve(found)

    async def _serve(self, found: Iterable[ServedAgent]) -> Refreshed:
        now = {agent.name: agent for agent in found}
        removed = [name for name in self._by_name if name not in now]
        moved = [
            n for n, a in now.items() if n in self._by_name and self._by_name[n].path != a.path
        ]
        added = [name for name in now if name not in self._by_name]
        for name in removed:  # a moved one is replaced below, never missing meanwhile
            self.engine.remove_graph(name)
            graphs.remove(name)
            del self._by_name[name]
        for name in added + moved:
            agent = now[name]
            make_graph = graphs.add(agent, self.factory)
            await self.engine.add_graph(name, make_graph, agent.description)
            self._by_name[name] = agent
        for name, agent in now.items():  # problems found or fixed meanwhile
            self._by_name[name] = agent
        if removed or added:
            log.warning(
                "serving now: %s",
                ", ".join([f"+{n}" for n in added] + [f"-{n}" for n in removed]),
            )
        return Refreshed(tuple(added), tuple(removed))
