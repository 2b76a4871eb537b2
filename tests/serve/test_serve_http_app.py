"""Both engines serve an app in front of the API (`Engine.run(web_app=...)`): where agentctl's web
page is mounted. A plain Starlette app (Aegra itself takes only FastAPI apps). Started the way
`agentctl serve` starts them, from a small script."""

from __future__ import annotations

import contextlib
import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve import servers
from tests.services import fresh_database

pytest.importorskip("langgraph_api")
sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

ROUTES = """\
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


async def hello(request):
    return JSONResponse({"hello": "from the app"})


app = Starlette(routes=[Route("/", hello)])
"""
SERVE = """\
import sys

sys.path.insert(0, ".")
from runner.serve.agents import collect_agents
from runner.serve.engines import Engine
from runner.serve.factory import GraphFactory
from runner.serve.graphs import register
from routes import app

port, database = int(sys.argv[1]), sys.argv[2] or None
agents = collect_agents(["greeter.yaml"])
graphs = register(agents, GraphFactory())
engine = Engine.choose(database=database, redis=None, dev=False)
try:
    engine.run(graphs, {}, host="127.0.0.1", port=port, jobs=2, web_app=app)
except KeyboardInterrupt:
    pass
print("stopped")
"""


@pytest.fixture(params=["memory", "aegra"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    (tmp_path / "routes.py").write_text(ROUTES, encoding="utf-8")
    (tmp_path / "serve.py").write_text(SERVE, encoding="utf-8")
    (tmp_path / "greeter.yaml").write_text(
        "name: greeter\ndescription: d\nmodel: replay:c.cassette.yaml\nprompt: p\n",
        encoding="utf-8",
    )
    (tmp_path / "c.cassette.yaml").write_text("- content: Hello there.\n", encoding="utf-8")
    database = ""
    with contextlib.ExitStack() as stack:
        if request.param == "aegra":
            if sys.version_info < (3, 12):
                pytest.skip("Aegra needs Python 3.12 or newer")
            pytest.importorskip("aegra_api")
            database = stack.enter_context(
                fresh_database(request.getfixturevalue("postgres_server"))
            )
        server = servers.wait_ready(
            servers.launch_command(
                lambda port: [sys.executable, "serve.py", str(port), database],
                cwd=tmp_path,
                log=tmp_path / "serve.log",
            )
        )
        try:
            yield server.url
        finally:
            servers.stop(server)


def test_the_app_is_served_in_front_of_the_api(served: str) -> None:
    with urllib.request.urlopen(f"{served}/", timeout=30) as reply:
        assert json.load(reply) == {"hello": "from the app"}
    client = sdk.get_sync_client(url=served)
    assert [a["graph_id"] for a in client.assistants.search()] == ["greeter"]
    thread = client.threads.create()["thread_id"]
    state = client.runs.wait(
        thread, "greeter", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    assert state["messages"][-1]["content"] == "Hello there."
