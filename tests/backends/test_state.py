"""The state backend and its reducer, including through a real LangGraph graph with checkpoints."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from runner.backends import FileData, FilesState, StateBackend, merge_files
from runner.backends.state import PrefixedFiles, merge_file_writes


def data(content: str) -> FileData:
    return FileData(content=content, created_at="t0", modified_at="t0")


def test_merge_files_adds_replaces_and_deletes_without_mutating() -> None:
    left = {"/a": data("a"), "/b": data("b")}
    right: dict[str, FileData | None] = {"/b": data("B"), "/c": data("c"), "/a": None}
    merged = merge_files(left, right)
    assert merged == {"/b": data("B"), "/c": data("c")}
    assert left == {"/a": data("a"), "/b": data("b")}
    assert right["/a"] is None
    assert merge_files(None, {"/x": data("x"), "/gone": None}) == {"/x": data("x")}
    assert merge_files(left, None) == left


UPDATES: list[dict[str, FileData | None]] = [
    {"/a": data("a"), "/b": data("b")},
    {"/a": None, "/c": data("c")},
    {},
    {"/a": data("A"), "/c": None},
    {"/gone": None, "/b": data("B")},
]


@pytest.mark.parametrize("split", range(len(UPDATES) + 1))
def test_the_batch_reducer_does_not_depend_on_the_batches(split: int) -> None:
    # A DeltaChannel replays the writes since a snapshot in batches other than the steps'
    start = {"/old": data("old")}
    whole = merge_file_writes(start, UPDATES)
    assert whole == merge_file_writes(merge_file_writes(start, UPDATES[:split]), UPDATES[split:])
    assert whole == {"/old": data("old"), "/a": data("A"), "/b": data("B")}
    one_by_one: dict[str, FileData] = dict(start)
    for update in UPDATES:
        one_by_one = merge_files(one_by_one, update)
    assert whole == one_by_one and start == {"/old": data("old")}


def test_the_files_channel_replays_onto_a_snapshot_or_a_plain_mapping() -> None:
    from langgraph.checkpoint.base import PendingWrite
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    from runner.backends.files_channel import FILES_SNAPSHOT_EVERY, FilesChannel

    channel = FilesChannel(merge_file_writes, dict, snapshot_frequency=FILES_SNAPSHOT_EVERY)
    writes: list[PendingWrite] = [("t", "files", update) for update in UPDATES]
    seed = {"/old": data("old")}
    expected = merge_file_writes(seed, UPDATES)
    # a snapshot, the whole mapping an agentctl before deltas stored, or nothing (a new thread)
    for stored, base in ((_DeltaSnapshot(seed), seed), (seed, seed), (None, {})):
        restored = channel.from_checkpoint(stored)
        restored.replay_writes(writes)
        assert restored.get() == merge_file_writes(base, UPDATES)
    assert expected["/a"] == data("A")
    # a step that wrote no file counts as an update (the snapshot cadence counts steps), and
    # leaves the files as they were; before any value, it is not counted
    live = channel.from_checkpoint(seed)
    assert live.update([]) is True and live.get() == seed
    assert live.update([{"/n": data("n")}]) is True and set(live.get()) == {"/old", "/n"}
    assert channel.update([]) is False
    assert isinstance(live, FilesChannel) and isinstance(live.copy(), FilesChannel)


class NoScan(dict[str, Any]):
    """A files mapping that fails when something walks it: a write must only look up keys."""

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the whole mapping was walked")

    def items(self) -> Any:
        raise AssertionError("the whole mapping was walked")

    def keys(self) -> Any:
        raise AssertionError("the whole mapping was walked")

    def values(self) -> Any:
        raise AssertionError("the whole mapping was walked")


def test_write_and_edit_only_look_up_keys() -> None:
    files = NoScan({f"/dir/f{n}.txt": data(f"file {n}") for n in range(1000)})
    backend = StateBackend(files)
    written = backend.write("/dir/sub/new.txt", "new")
    assert list(written.files_update or {}) == ["/dir/sub/new.txt"]
    edited = backend.edit("/dir/f7.txt", "file 7", "seven")
    assert edited.files_update == {
        "/dir/f7.txt": FileData(
            content="seven",
            created_at="t0",
            modified_at=edited.files_update["/dir/f7.txt"]["modified_at"],  # type: ignore[index]
        )
    }
    assert backend.read("/dir/f3.txt").content == "file 3"


def test_none_values_in_state_count_as_deleted() -> None:
    backend = StateBackend({"/gone.txt": None, "/here.txt": data("x")})
    assert [info.path for info in backend.ls("/")] == ["/here.txt"]
    assert backend.write("/gone.txt", "again").path == "/gone.txt"


def test_prefixed_files_is_a_view_under_a_prefix() -> None:
    files = {"/scratch/a.txt": data("a"), "/scratch/d/b.txt": data("b"), "/other.txt": data("o")}
    view = PrefixedFiles(files, "/scratch")
    assert sorted(view) == ["/a.txt", "/d/b.txt"]
    assert len(view) == 2
    assert view["/a.txt"] == data("a")
    assert view.get("/other.txt") is None
    assert StateBackend(view).read("/d/b.txt").content == "b"


def test_edit_keeps_created_at_and_moves_modified_at() -> None:
    state: dict[str, Any] = {"files": {}}
    written = StateBackend(state["files"]).write("/t.txt", "v1")
    state["files"] = merge_files(state["files"], written.files_update)
    edited = StateBackend(state["files"]).edit("/t.txt", "v1", "v2").files_update
    assert edited is not None
    created = state["files"]["/t.txt"]["created_at"]
    assert edited["/t.txt"]["created_at"] == created
    assert edited["/t.txt"]["modified_at"] >= created


# Through LangGraph: the reducer must keep every streamed value and every checkpoint intact.


class GraphState(FilesState):
    step: int


def build_graph(steps: int) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(GraphState)

    def writer(index: int) -> Any:
        def node(state: Mapping[str, Any]) -> dict[str, Any]:
            backend = StateBackend(state.get("files"))
            if index == steps - 1:  # the last step deletes the first file and edits the second
                edited = backend.edit("/f1.txt", "file 1", "edited")
                return {"files": {"/f0.txt": None, **(edited.files_update or {})}, "step": index}
            written = backend.write(f"/f{index}.txt", f"file {index}")
            return {"files": written.files_update, "step": index}

        return node

    previous = START
    for index in range(steps):
        graph.add_node(f"w{index}", writer(index))
        graph.add_edge(previous, f"w{index}")
        previous = f"w{index}"
    graph.add_edge(previous, END)
    return graph.compile(checkpointer=InMemorySaver())


def expected_files(step: int, steps: int) -> list[str]:
    if step == steps - 1:
        return [f"/f{n}.txt" for n in range(1, steps - 1)]
    return [f"/f{n}.txt" for n in range(step + 1)]


@pytest.mark.parametrize("run", ["sync", "async"])
def test_streamed_values_and_checkpoints_keep_their_own_files(run: str) -> None:
    steps = 6
    graph = build_graph(steps)
    config = {"configurable": {"thread_id": "t"}}
    start = {"files": {}, "step": -1}
    if run == "sync":
        values = list(graph.stream(start, config, stream_mode="values"))
    else:

        async def collect() -> list[Any]:
            return [v async for v in graph.astream(start, config, stream_mode="values")]

        values = asyncio.run(collect())
    assert [(v["step"], sorted(v["files"])) for v in values[1:]] == [
        (step, expected_files(step, steps)) for step in range(steps)
    ]
    history = {
        snapshot.values["step"]: sorted(snapshot.values["files"])
        for snapshot in graph.get_state_history(config)
        if snapshot.values.get("step", -1) >= 0
    }
    assert history == {step: expected_files(step, steps) for step in range(steps)}
    final = graph.get_state(config).values["files"]
    assert final["/f1.txt"]["content"] == "edited"
    assert final["/f1.txt"]["created_at"] <= final["/f1.txt"]["modified_at"]


def test_files_state_works_as_a_middleware_state_schema() -> None:
    """`create_agent` merges middleware state schemas: `files` must keep its reducer there and
    must not be required in the input."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langgraph.checkpoint.memory import InMemorySaver

    class FilesMiddleware(AgentMiddleware[Any, Any]):
        state_schema = FilesState

        def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
            written = StateBackend(state.get("files")).write(f"/run{len(state['messages'])}", "x")
            return {"files": written.files_update}

    agent = create_agent(
        FakeListChatModel(responses=["one", "two"]),
        middleware=[FilesMiddleware()],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [("user", "hi")]}, config)
    result = agent.invoke({"messages": [("user", "again")]}, config)
    assert sorted(result["files"]) == ["/run1", "/run3"]
