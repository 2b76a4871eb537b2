"""`LiveAgents` in process, with an engine that records what it is told: what a refresh adds,
removes and refuses."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from runner.serve.agents import collect_agents
from runner.serve.factory import GraphFactory
from runner.serve.graphs import MODULE, register
from runner.serve.live import LiveAgents

AGENT = "name: {name}\nmodel: replay:none.cassette.yaml\nprompt: Hi.\n"


class Recorder:
    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    async def add_graph(self, name: str, make_graph: Any, description: str | None) -> None:
        assert callable(make_graph)
        self.told.append(("add", name))

    def remove_graph(self, name: str) -> None:
        self.told.append(("remove", name))


def _live(folder: Path, engine: Recorder) -> LiveAgents:
    def find() -> list[Any]:
        return collect_agents([folder], keep_broken=True, allow_empty=True)

    factory = GraphFactory()
    agents = find()
    register(agents, factory)
    return LiveAgents(agents, find=find, factory=factory, engine=engine, targets=(folder,))


def test_a_refresh_serves_new_files_and_drops_gone_ones(tmp_path: Path) -> None:
    import sys

    (tmp_path / "none.cassette.yaml").write_text("- content: Hello.\n", encoding="utf-8")
    (tmp_path / "one.yaml").write_text(AGENT.format(name="one"), encoding="utf-8")
    engine = Recorder()
    live = _live(tmp_path, engine)
    assert dict(live) == {"one": tmp_path / "one.yaml"}
    assert asyncio.run(live.refresh()).as_json() == {"added": [], "removed": [], "problem": None}

    (tmp_path / "two.yaml").write_text(AGENT.format(name="two"), encoding="utf-8")
    (tmp_path / "one.yaml").unlink()
    refreshed = asyncio.run(live.refresh())
    assert (refreshed.added, refreshed.removed) == (("two",), ("one",))
    assert engine.told == [("remove", "one"), ("add", "two")]
    assert set(live) == {"two"}
    assert hasattr(sys.modules[MODULE], "two") and not hasattr(sys.modules[MODULE], "one")

    # two files with one name cannot be served together: nothing changes, and it says why
    (tmp_path / "copy.yaml").write_text(AGENT.format(name="two"), encoding="utf-8")
    refreshed = asyncio.run(live.refresh())
    assert refreshed.problem and "'two' is also the name of" in refreshed.problem
    assert (refreshed.added, refreshed.removed, set(live)) == ((), (), {"two"})
    (tmp_path / "copy.yaml").unlink()
    assert asyncio.run(live.refresh()).problem is None

    # a file renamed on disk, its `name:` kept: the graph is served from the new file
    engine.told.clear()
    (tmp_path / "two.yaml").rename(tmp_path / "second.yaml")
    assert asyncio.run(live.refresh()).as_json() == {"added": [], "removed": [], "problem": None}
    assert engine.told == [("add", "two")]  # replaced: never missing meanwhile
    assert dict(live) == {"two": tmp_path / "second.yaml"}
