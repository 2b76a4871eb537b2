"""A file saved in the editor is what the served agent runs next, without a restart: a real
`agentctl serve --edit`, the save through the editor's API, the run through the LangGraph API
(`langgraph-sdk`), as a person on the page and a client of the server would see it."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve.servers import Server, start, stop

sdk = pytest.importorskip("langgraph_sdk")
pytest.importorskip("langgraph_api")
pytestmark = pytest.mark.slow

GREETER = "name: greeter\ndescription: Says hello\nmodel: replay:greeter.cassette.yaml\nprompt: You greet.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("served")
    (folder / "greeter.yaml").write_text(GREETER, encoding="utf-8")
    (folder / "greeter.cassette.yaml").write_text("- content: Hello there.\n", encoding="utf-8")
    (folder / "formal.cassette.yaml").write_text("- content: Good day.\n", encoding="utf-8")
    served = start([folder], cwd=folder, args=["--edit"], log=folder / "serve.log")
    try:
        yield served
    finally:
        stop(served)


def _call(url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _greet(client: Any) -> str:
    thread = client.threads.create()["thread_id"]
    state = client.runs.wait(
        thread, "greeter", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    return state["messages"][-1]["content"]


def test_a_saved_file_is_used_by_the_next_run(server: Server) -> None:
    client = sdk.get_sync_client(url=server.url)
    assert _greet(client) == "Hello there."
    api = f"{server.url}/web/api/edit"
    for cassette, reply in (("formal", "Good day."), ("greeter", "Hello there.")):
        opened = _call(f"{api}/file?path=greeter.yaml")
        text = GREETER.replace("replay:greeter.", f"replay:{cassette}.")
        _call(f"{api}/save", {"path": "greeter.yaml", "text": text, "base": opened["version"]})
        assert _greet(client) == reply
