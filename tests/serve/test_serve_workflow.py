"""`agentctl serve` serves a workflow file as a graph like an agent's: the served file is found
and checked as `agentctl validate` does, a run takes the workflow's inputs as
`configurable.vars`, and its values end with the workflow's state and result."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serve import servers

pytest.importorskip("langgraph_api")
sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Server]:
    folder = tmp_path_factory.mktemp("served-workflows")
    shutil.copytree(ROOT / "workflows", folder / "workflows")
    served = folder / "workflows" / "research.yaml"
    text = served.read_text(encoding="utf-8")
    assert "model: openai:gpt-4.1-mini" in text
    # serve takes each file's own model: the example's agents play its cassette
    text = text.replace("model: openai:gpt-4.1-mini", "model: replay:research.cassette.yaml")
    served.write_text(text, encoding="utf-8")
    with servers.serving([served], cwd=folder, log=folder / "serve.log") as server:
        yield servers.wait_ready(server)


def test_a_served_workflow_runs_its_steps_and_ends_with_its_result(server: servers.Server) -> None:
    client = sdk.get_sync_client(url=server.url)
    [assistant] = client.assistants.search(graph_id="research")
    thread = client.threads.create()
    values: Any = client.runs.wait(
        thread["thread_id"],
        assistant["assistant_id"],
        input={},
        config={"configurable": {"vars": {"topic": "SQLite or DuckDB"}}},
    )
    assert "__error__" not in values, values
    state = values["state"]
    assert {"usage", "internals", "risks", "report"} <= set(state), state
    assert values["output"] == state["report"]
    assert "B-tree" in state["internals"]


def test_a_served_workflow_refuses_a_missing_input_with_its_located_message(
    server: servers.Server,
) -> None:
    client = sdk.get_sync_client(url=server.url)
    thread = client.threads.create()
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.runs.wait(thread["thread_id"], "research", input={})
    assert refused.value.response.status_code == 422
    assert "research.yaml:10:" in refused.value.response.text
    assert "required input 'topic' has no value" in refused.value.response.text
