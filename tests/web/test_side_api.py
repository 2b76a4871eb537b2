"""The page's read-only side API (`/web/api/...`): located problems, tool schemas, and files read
through the agent's own confined backend. Threat list for the file routes: `..`, a symlink out of
the root, a host-path backend, a thread id that is not a folder name, a route the API serves."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from runner.serve.agents import collect_agents
from runner.web.app import STATIC_DIR, WebAgent, create_app

AGENT = """\
name: keeper
description: Keeps notes
model: replay:keeper.cassette.yaml
prompt: You keep notes.
backend:
  kind: composite
  default: {kind: filesystem, root_dir: "./ws/{thread_id}"}
  routes:
    /shared/: {kind: filesystem, root_dir: ./shared}
    /host/: {kind: filesystem, root_dir: ./host, virtual_mode: false}
    /memories/: {kind: store, namespace: [memories]}
    /scratch/: {kind: state}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keeper.yaml").write_text(AGENT, encoding="utf-8")
    (tmp_path / "keeper.cassette.yaml").write_text("- content: ok\n", encoding="utf-8")
    (tmp_path / "ws" / "t1" / "notes").mkdir(parents=True)
    (tmp_path / "ws" / "t1" / "notes" / "a.md").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "ws" / "t1" / "shared").mkdir()  # hidden by the /shared/ route
    (tmp_path / "ws" / "t1" / "shared" / "hidden.md").write_text("x", encoding="utf-8")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "s.md").write_text("shared", encoding="utf-8")
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "h.md").write_text("host", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("do not show", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", tmp_path / "ws" / "t1" / "link.txt")
    return tmp_path


def _client(folder: Path, graph_for: Any = None) -> TestClient:
    agents = [WebAgent("keeper", folder / "keeper.yaml")]
    return TestClient(create_app(agents, graph_for=graph_for or (lambda path: None), dev=True))


def test_the_page_and_its_assets_are_served(folder: Path) -> None:
    client = _client(folder)
    page = client.get("/")
    assert page.status_code == 200 and '<script type="module"' in page.text
    assert client.get("/web/static/js/app.js").status_code == 200
    assert client.get("/web/static/../app.py").status_code == 404


def test_the_assets_need_no_network_and_never_parse_data_as_html() -> None:
    assets = [p for p in STATIC_DIR.rglob("*") if p.is_file()]
    assert {p.suffix for p in assets} == {".html", ".css", ".js"}
    for asset in assets:
        # an SVG namespace names a standard, it is never fetched (CodeMirror's inline icons)
        text = asset.read_text(encoding="utf-8").replace('xmlns="http://www.w3.org/2000/svg"', "")
        # no CDN, no web fonts: nothing that would reach beyond the server
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), asset
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, f"{asset.name} uses {sink}"


def test_agents_with_their_model_and_located_problems(folder: Path) -> None:
    client = _client(folder)
    [row] = client.get("/web/api/agents").json()["agents"]
    assert row | {"problems": None} == {
        "name": "keeper",
        "file": "keeper.yaml",
        "model": "replay:keeper.cassette.yaml",
        "description": "Keeps notes",
        "kind": "agent",
        "inputs": [],
        "problems": None,
    }
    assert row["problems"] == []
    path = folder / "keeper.yaml"
    path.write_text(AGENT.replace("prompt:", "promt:"), encoding="utf-8")
    os.utime(path, ns=(1, 1))  # another mtime, however fast the machine
    [row] = client.get("/web/api/agents").json()["agents"]
    assert row["problems"] == ["keeper.yaml:4:1: promt: unknown key; did you mean 'prompt'?"]
    assert row["model"] is None


def test_an_agent_with_a_required_input_is_not_broken(folder: Path) -> None:
    # a run gives the input (`configurable.vars`): the page lists no problem, and the agent's
    # tools can be read without it
    painter = "name: painter\nmodel: replay:keeper.cassette.yaml\nprompt: Paint {{ vars.topic }}.\n"
    painter += "inputs:\n  topic: {type: string, required: true}\n"
    (folder / "painter.yaml").write_text(painter, encoding="utf-8")
    from runner.serve.factory import GraphFactory

    factory = GraphFactory()
    app = create_app(
        [WebAgent("painter", folder / "painter.yaml")],
        graph_for=lambda path: factory.graph(path, require_inputs=False),
    )
    client = TestClient(app)
    [row] = client.get("/web/api/agents").json()["agents"]
    assert (row["file"], row["problems"]) == ("painter.yaml", [])
    tools = client.get("/web/api/agents/painter/tools")
    assert tools.status_code == 200 and "write_todos" in tools.json()["tools"]
    factory.close()


INPUTS = """\
inputs:
  topic: {type: string, required: true, description: What to write about}
  depth: {type: integer, minimum: 1, maximum: 5, default: 2}
  tone: {enum: [formal, casual], default: casual}
  strict: {type: boolean}
  brief: {type: file}
vars: {house: style}
"""


def test_typed_inputs_are_listed_as_form_fields(folder: Path) -> None:
    # the fields of serve's config schema, with each input's type; plain `vars:` are no field
    painter = "name: painter\nmodel: replay:keeper.cassette.yaml\nprompt: Paint {{ vars.topic }}.\n"
    (folder / "painter.yaml").write_text(painter + INPUTS, encoding="utf-8")
    client = TestClient(create_app([WebAgent("painter", folder / "painter.yaml")], graph_for=print))
    [row] = client.get("/web/api/agents").json()["agents"]
    assert (row["kind"], row["problems"]) == ("agent", [])
    assert row["inputs"] == [
        {"name": "topic", "type": "string", "required": True, "description": "What to write about"},
        {
            "name": "depth",
            "type": "integer",
            "required": False,
            "default": 2,
            "minimum": 1,
            "maximum": 5,
        },
        {
            "name": "tone",
            "type": "enum",
            "required": False,
            "enum": ["formal", "casual"],
            "default": "casual",
        },
        {"name": "strict", "type": "boolean", "required": False},
        {"name": "brief", "type": "file", "required": False},
    ]
    # a file with problems has no fields to show, and a workflow's inputs are listed as an agent's
    (folder / "painter.yaml").write_text(
        painter.replace("prompt:", "promt:") + INPUTS, encoding="utf-8"
    )
    os.utime(folder / "painter.yaml", ns=(1, 1))
    [row] = client.get("/web/api/agents").json()["agents"]
    assert (row["kind"], row["inputs"]) == (None, [])
    workflow = "version: 1\nname: flow\nmodel: replay:keeper.cassette.yaml\n"
    workflow += "inputs:\n  topic: {type: string, required: true}\nstate:\n  a: {type: string}\n"
    workflow += "agents:\n  one: {prompt: One.}\n"
    workflow += "workflow:\n  steps:\n    - {id: first, agent: one, input: go, output: a}\n"
    (folder / "flow.yaml").write_text(workflow, encoding="utf-8")
    client = TestClient(create_app([WebAgent("flow", folder / "flow.yaml")], graph_for=print))
    [row] = client.get("/web/api/agents").json()["agents"]
    assert row["kind"] == "workflow"
    assert row["inputs"] == [{"name": "topic", "type": "string", "required": True}]


def test_a_workflow_is_listed_with_no_files_of_its_own(folder: Path) -> None:
    workflow = "version: 1\nname: flow\ndescription: Two steps\n"
    workflow += "model: replay:keeper.cassette.yaml\nstate:\n  a: {type: string}\n"
    workflow += "agents:\n  one: {prompt: One.}\n"
    workflow += "workflow:\n  steps:\n    - {id: first, agent: one, input: go, output: a}\n"
    (folder / "flow.yaml").write_text(workflow, encoding="utf-8")
    client = TestClient(create_app([WebAgent("flow", folder / "flow.yaml")], graph_for=print))
    [row] = client.get("/web/api/agents").json()["agents"]
    assert (row["file"], row["description"], row["problems"]) == ("flow.yaml", "Two steps", [])
    assert row["model"] == "replay:keeper.cassette.yaml"
    listing = client.get("/web/api/agents/flow/files?thread_id=t1")
    assert listing.status_code == 200 and listing.json() == {"routes": [], "files": []}
    assert client.get("/web/api/agents/flow/file?thread_id=t1&path=/a.md").status_code == 404


def test_files_of_the_filesystem_routes_for_a_thread(folder: Path) -> None:
    listing = _client(folder).get("/web/api/agents/keeper/files?thread_id=t1").json()
    assert [f["path"] for f in listing["files"]] == ["/notes/a.md", "/shared/s.md"]
    assert listing["routes"] == [
        {"prefix": "/", "kind": "filesystem", "note": ""},
        {"prefix": "/shared/", "kind": "filesystem", "note": ""},
        {
            "prefix": "/host/",
            "kind": "filesystem",
            "note": "host paths (virtual_mode: false) are not shown",
        },
        {"prefix": "/memories/", "kind": "store", "namespace": ["memories"]},
        {"prefix": "/scratch/", "kind": "state"},
    ]
    without = _client(folder).get("/web/api/agents/keeper/files").json()
    assert without["routes"][0]["note"] == "one folder per thread: open a thread"
    assert [f["path"] for f in without["files"]] == ["/shared/s.md"]


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("thread_id=t1&path=/notes/a.md", 200, None),
        ("thread_id=t1&path=/shared/s.md", 200, None),
        ("thread_id=t1&path=/../secret.txt", 400, "Path traversal is not allowed"),
        ("thread_id=t1&path=/link.txt", 404, "/link.txt"),
        ("thread_id=t1&path=/host/h.md", 404, "host paths (virtual_mode: false) are not shown"),
        ("thread_id=..&path=/notes/a.md", 404, "cannot name a folder"),
        ("thread_id=t1&path=/memories/m.md", 404, "is not on a filesystem route"),
        ("thread_id=t1&path=/nope.md", 404, "/nope.md"),
    ],
)
def test_reading_a_file_is_confined(folder: Path, query: str, status: int, message: str) -> None:
    reply = _client(folder).get(f"/web/api/agents/keeper/file?{query}")
    assert reply.status_code == status, reply.text
    if message is None:
        assert reply.json()["content"] in ("one\ntwo\n", "shared")
    else:
        assert message in reply.json()["error"]
        assert "do not show" not in reply.text


def test_nothing_is_created_for_a_thread_without_a_folder(folder: Path) -> None:
    client = _client(folder)
    files = client.get("/web/api/agents/keeper/files?thread_id=t2").json()["files"]
    assert [f["path"] for f in files] == ["/shared/s.md"]
    assert client.get("/web/api/agents/keeper/file?thread_id=t2&path=/a.md").status_code == 404
    assert not (folder / "ws" / "t2").exists()


def test_unknown_agent(folder: Path) -> None:
    client = _client(folder)
    for path in ("tools", "files", "file?path=/a"):
        reply = client.get(f"/web/api/agents/nobody/{path}")
        assert (reply.status_code, reply.json()) == (404, {"error": "no agent named 'nobody'"})


def test_tool_schemas_come_from_the_built_graph(folder: Path) -> None:
    from runner.serve.factory import GraphFactory

    factory = GraphFactory()
    try:
        tools = _client(folder, factory.graph).get("/web/api/agents/keeper/tools").json()["tools"]
    finally:
        factory.close()
    assert tools["write_file"]["required"] == ["file_path", "content"]
    assert "file_path" in tools["edit_file"]["properties"]


def test_dev_serves_a_broken_file_under_its_name_with_its_problems(tmp_path: Path) -> None:
    (tmp_path / "c.cassette.yaml").write_text("- content: hi\n", encoding="utf-8")
    (tmp_path / "good.yaml").write_text(
        "name: good\nmodel: replay:c.cassette.yaml\nprompt: p\n", encoding="utf-8"
    )
    (tmp_path / "bad.yaml").write_text(
        "name: fixme\nmodel: replay:c.cassette.yaml\npromt: p\n", encoding="utf-8"
    )
    found = {a.name: a for a in collect_agents([tmp_path], keep_broken=True)}
    assert set(found) == {"good", "fixme"}
    assert found["good"].problems == ()
    assert [p.path for p in found["fixme"].problems] == ["promt"]
