"""Runs on an event loop block nothing: every hook and backend call a server makes is async and
does its disk work off the loop thread (blockbuster raises BlockingError for a blocking call
made on the loop from runner's code)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

blockbuster = pytest.importorskip("blockbuster")

SPEC = """\
name: worker
description: Writes notes in a per-thread folder
model: replay:worker.cassette.yaml
prompt: You write notes.
backend: {kind: filesystem, root_dir: "./ws/{thread_id}"}
skills: [/skills/]
memory: [/AGENTS.md]
"""

CASSETTE = """\
- content: Writing.
  tool_calls:
    - {name: write_file, args: {file_path: /notes.md, content: "hello"}}
- content: Reading.
  tool_calls:
    - {name: read_file, args: {file_path: /notes.md}}
    - {name: ls, args: {path: /}}
    - {name: glob, args: {pattern: "*.md"}}
    - {name: grep, args: {pattern: hello}}
    - {name: edit_file, args: {file_path: /notes.md, old_string: hello, new_string: bye}}
- content: Done.
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    (tmp_path / "worker.cassette.yaml").write_text(CASSETTE, encoding="utf-8")
    path = tmp_path / "worker.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def test_a_run_on_an_event_loop_makes_no_blocking_call(spec: Path, tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from runner.agent.build import build_agent

    graph = build_agent(spec, checkpointer=InMemorySaver())

    async def run(thread: str) -> dict:
        config = {"configurable": {"thread_id": thread}}
        return await graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)

    async def both() -> list[dict]:
        # One detector for both runs: nested activations would not restore the originals.
        with blockbuster.blockbuster_ctx(["runner"]):
            return await asyncio.gather(run("t-1"), run("t-2"))

    results = asyncio.run(both())
    for result in results:
        assert result["messages"][-1].text == "Done."
        tools = [m for m in result["messages"] if m.type == "tool"]
        assert [m.status for m in tools] == ["success"] * 6, [m.text for m in tools]
    # each thread wrote its own folder
    for thread in ("t-1", "t-2"):
        assert (tmp_path / "ws" / thread / "notes.md").read_text(encoding="utf-8") == "bye"


def test_the_skills_hook_has_an_async_twin_off_the_loop(spec: Path, tmp_path: Path) -> None:
    """Its sync hook, called on the loop, is caught (so the test above can fail); the async
    one does the same work, folder creation included, in a worker thread."""
    from langgraph.store.memory import InMemoryStore

    from runner.agent.resolve import Resolver
    from runner.load.loader import load_spec
    from runner.middleware.skills import BackendSkillsMiddleware

    resolved = Resolver().resolve(load_spec(spec))
    assert resolved.backend is not None
    middleware = BackendSkillsMiddleware(["/skills/"], resolved.backend)

    class Runtime:
        store = InMemoryStore()

    async def on_loop(thread: str, *, sync: bool) -> dict | None:
        from langchain_core.runnables.config import var_child_runnable_config

        var_child_runnable_config.set({"configurable": {"thread_id": thread}})
        with blockbuster.blockbuster_ctx(["runner"]):
            if sync:
                return middleware.before_agent({}, Runtime())
            return await middleware.abefore_agent({}, Runtime())

    with pytest.raises(blockbuster.BlockingError):
        asyncio.run(on_loop("t-3", sync=True))
    assert os.path.abspath.__module__ == "posixpath"  # the detector is gone again
    assert asyncio.run(on_loop("t-4", sync=False)) == {"skills_metadata": {"/skills/": {}}}
    assert (tmp_path / "ws" / "t-4").is_dir()
