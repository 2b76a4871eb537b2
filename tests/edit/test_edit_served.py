"""The editor on a real `agentctl serve --edit` with users, on both engines (in memory, and Aegra
on Postgres): only an admin edits, and an agent made, renamed or deleted in the editor is served
(or no longer served) to the API and the page without a restart. The runs go through
`langgraph-sdk`, as a client of the server would make them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.serve import servers

sdk = pytest.importorskip("langgraph_sdk")
pytest.importorskip("langgraph_api")
pytestmark = pytest.mark.slow

ADMIN_KEY = "ada-key-" + "a" * 24
USER_KEY = "bob-key-" + "b" * 24

GREETER = """\
name: greeter
description: Says hello
model: replay:greeter.cassette.yaml
prompt: You greet.
"""


@dataclass
class Served:
    engine: str
    url: str
    folder: Path

    def client(self, key: str = ADMIN_KEY) -> Any:
        return sdk.get_sync_client(url=self.url, api_key=key)

    def call(self, route: str, body: Any = None, *, key: str | None = ADMIN_KEY) -> Any:
        """(status, JSON answer) of the page's side API route."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json"}
        if key is not None:
            headers["x-api-key"] = key
        request = urllib.request.Request(f"{self.url}/web/api{route}", data, headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as refused:
            return refused.code, json.loads(refused.read() or b"null")


@pytest.fixture(scope="module", params=servers.ENGINES)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    engine = request.param
    folder = tmp_path_factory.mktemp(f"edit-{engine}")
    (folder / "greeter.yaml").write_text(GREETER, encoding="utf-8")
    (folder / "greeter.cassette.yaml").write_text("- content: Hello there.\n", encoding="utf-8")
    keys = folder.parent / f"keys-{engine}.yaml"
    digest = hashlib.sha256(USER_KEY.encode()).hexdigest()
    keys.write_text(
        f'keys:\n  - {{user: ada, key: "{ADMIN_KEY}"}}\n  - {{user: bob, sha256: "{digest}"}}\n',
        encoding="utf-8",
    )
    args = ["--edit", "--api-keys", str(keys), "--admin", "ada"]
    with contextlib.ExitStack() as stack:
        if engine == "aegra":
            pytest.importorskip("aegra_api")
            from tests.services import fresh_database

            database = stack.enter_context(
                fresh_database(request.getfixturevalue("postgres_server"))
            )
            args += ["--db", database]
        server = stack.enter_context(
            servers.serving([folder], cwd=folder, args=args, log=folder.parent / f"{engine}.log")
        )
        yield Served(engine, server.url, folder)


def _reply(client: Any, agent: str) -> str:
    thread = client.threads.create()["thread_id"]
    state = client.runs.wait(
        thread, agent, input={"messages": [{"role": "user", "content": "hi"}]}, raise_error=True
    )
    return state["messages"][-1]["content"]


def _refused(client: Any, agent: str) -> str:
    """The engine's answer to a run of an agent it does not serve (a 4xx naming it)."""
    import httpx

    with pytest.raises(httpx.HTTPStatusError) as refused:
        _reply(client, agent)
    assert 400 <= refused.value.response.status_code < 500, refused.value.response.text
    assert agent in refused.value.response.text
    return refused.value.response.text


def _listed(served: Served) -> set[str]:
    """The agents the page lists; each links to its file in the editor."""
    status, body = served.call("/agents")
    assert status == 200, body
    for row in body["agents"]:
        assert (served.folder / row["edit"]).is_file(), row
    return {row["name"] for row in body["agents"]}


def _graphs(served: Served) -> set[str]:
    return {a["graph_id"] for a in served.client().assistants.search(limit=100)}


def test_only_an_admin_may_use_the_editor(served: Served) -> None:
    for route, body in (
        ("/edit/files", None),
        ("/edit/file?path=greeter.yaml", None),
        ("/edit/check", {"path": "greeter.yaml", "text": GREETER}),
        ("/edit/save", {"path": "greeter.yaml", "text": GREETER, "base": None}),
    ):
        status, answer = served.call(route, body, key=None)
        assert status == 401, (route, answer)
        status, answer = served.call(route, body, key=USER_KEY)
        assert (status, answer) == (
            403,
            {"error": "only admins (serve --admin) may edit agent files"},
        )
    status, answer = served.call("/edit/files")
    assert status == 200 and "greeter.yaml" in answer["files"], answer
    status, answer = served.call("/edit/check", {"path": "greeter.yaml", "text": "nme: x\n"})
    assert status == 200 and answer["problems"], answer
    # the user who may not edit still chats with the agents
    assert _reply(served.client(USER_KEY), "greeter") == "Hello there."


def test_a_new_agent_is_served_at_once_and_a_renamed_or_deleted_one_goes(served: Served) -> None:
    client = served.client()
    status, made = served.call("/edit/new", {"name": "planner"})
    assert status == 201, made
    assert made["served"] == {"added": ["planner"], "removed": [], "problem": None}
    cassette = yaml.safe_load((served.folder / "planner.cassette.yaml").read_text())
    answer = cassette[-2]["content"]  # its last recorded answer (the last entry is a fallback)
    assert _reply(client, "planner") == answer
    assert "planner" in _listed(served) and "planner" in _graphs(served)

    # renamed in the editor: served under its new name, the old one refused
    text = made["text"].replace("name: planner", "name: organiser", 1)
    status, saved = served.call(
        "/edit/save", {"path": "planner.yaml", "text": text, "base": made["version"]}
    )
    assert status == 200, saved
    assert saved["served"] == {"added": ["organiser"], "removed": ["planner"], "problem": None}
    assert _reply(client, "organiser") == answer
    assert "planner" not in _listed(served)
    assert _refused(client, "planner")

    # deleted on disk: gone from the page's list (which looks again) and from the API
    (served.folder / "planner.yaml").unlink()
    assert _listed(served) == {"greeter"}
    assert _refused(client, "organiser")
    assert _reply(client, "greeter") == "Hello there."
