"""Hostile model arguments and hostile servers against `http:` and `openapi:` tools, on a real
HTTP server on 127.0.0.1: the deadline, the response size cap, path segments, argument checks.
Each case runs through the sync (`invoke`) and the async (`ainvoke`) path."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.spec import HttpTool
from runner.tools.http import tools_from_http

TRICKLE_BYTES = 600
"""The trickled body: one byte every 0.1 s, a minute in all."""
HUGE_BYTES = 200_000_000
CHUNK = 65536


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Hostile)
        self.sent: dict[str, int] = {}
        """Body bytes sent by each finished `/trickle` and `/huge` request, by its query."""
        self.requests: list[str] = []
        self.finished = threading.Condition()


class _Hostile(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        if self.path.startswith("/trickle"):
            self._stream(self.path, TRICKLE_BYTES, 1, pause=0.1)
        elif self.path.startswith("/huge"):
            self._stream(self.path, HUGE_BYTES, CHUNK, pause=0)
        else:
            data = json.dumps({"path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    do_POST = do_GET

    def _stream(self, key: str, total: int, step: int, *, pause: float) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(total))
        self.end_headers()
        sent = 0
        block = b"x" * step
        try:
            while sent < total:
                self.wfile.write(block)
                self.wfile.flush()
                sent += step
                if pause:
                    time.sleep(pause)
        except OSError:  # the client hung up: what the tests want
            pass
        finally:
            with self.server.finished:
                self.server.sent[key] = sent
                self.server.finished.notify_all()


def _sent(server: _Server, key: str) -> int:
    """Bytes the server sent for the request `key`, once it stopped sending."""
    with server.finished:
        assert server.finished.wait_for(lambda: key in server.sent, timeout=120)
        return server.sent[key]


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    httpd = _Server()
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _base(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


API = """\
openapi: 3.0.3
info: {title: Hostile, version: "1"}
paths:
  /repos/{repo}/issues:
    get:
      operationId: listIssues
      parameters:
        - {name: repo, in: path, required: true, schema: {type: string, maxLength: 20}}
        - {name: state, in: query, schema: {type: string, enum: [open, closed]}}
        - {name: per_page, in: query, schema: {type: integer, minimum: 1, maximum: 100}}
        - {name: since, in: query, schema: {type: number, minimum: 0, exclusiveMinimum: true}}
  /trickle:
    get: {operationId: trickle, parameters: [{name: n, in: query, schema: {type: string}}]}
  /huge:
    get: {operationId: huge, parameters: [{name: n, in: query, schema: {type: string}}]}
"""


def _openapi(folder: Path, base: str, extra: str = "") -> dict[str, Any]:
    (folder / "api.yaml").write_text(API)
    (folder / "agent.yaml").write_text(
        "name: hostile\nmodel: openai:gpt-4.1\ntools:\n  - openapi:\n"
        "      spec: ./api.yaml\n      operations: [listIssues, trickle, huge]\n"
        f"      base_url: {base}\n      timeout: 1\n{extra}"
    )
    spec = runner.load_spec(folder / "agent.yaml")
    return {t.name: t for entry in spec.tools for t in tools_from_http(entry)}  # type: ignore[arg-type]


def _http(base: str, **fields: Any) -> Any:
    entry = {
        "name": "list_issues",
        "description": "Issues of a repository",
        "url": f"{base}/repos/{{repo}}/issues",
        "timeout": 1,
        "args": {
            "repo": {},
            "state": {"enum": ["open", "closed"], "default": "open"},
            "per_page": {"type": "integer", "default": 10},
        },
        **fields,
    }
    (tool,) = tools_from_http(HttpTool.model_validate({"http": entry}))
    return tool


@pytest.fixture(scope="module")
def tools(server: _Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = _base(server)
    found = _openapi(tmp_path_factory.mktemp("api"), base)
    found["list_issues"] = _http(base)
    found["trickle_http"] = _http(base, name="trickle_http", url=f"{base}/trickle", args={})
    found["huge_http"] = _http(
        base, name="huge_http", url=f"{base}/huge", args={}, max_response_bytes=1000
    )
    return found


def call(tool: Any, args: dict[str, Any], how: str) -> tuple[str, str]:
    """(content, status) of the ToolMessage a call gives, by `invoke` or `ainvoke`."""
    message = {"type": "tool_call", "name": tool.name, "args": args, "id": "1"}
    result = tool.invoke(message) if how == "invoke" else asyncio.run(tool.ainvoke(message))
    return result.content, result.status


PATHS = ["invoke", "ainvoke"]


# --------------------------------------------------------------------------- the deadline


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("name", ["trickle", "trickle_http"])
def test_timeout_is_a_deadline_for_the_body_too(
    tools: dict[str, Any], server: _Server, name: str, how: str
) -> None:
    """The server answers at once, then sends its body one byte at a time (a minute in all):
    no single read ever waits a second, yet the call ends at its 1 s deadline."""
    key = f"{name}-{how}"
    args = {"n": key} if name == "trickle" else {}
    tool = tools[name]
    if name == "trickle_http":  # one URL per case, so the server tells the requests apart
        tool = _http(_base(server), name=name, url=f"{_base(server)}/trickle?n={key}", args={})
    content, status = call(tool, args, how)
    assert status == "error"
    url = f"{_base(server)}/trickle" + ("" if name == "trickle" else f"?n={key}")
    assert content == f"Error: GET {url} timed out after 1 seconds"
    # the client hung up long before the end of the body
    assert _sent(server, f"/trickle?n={key}") < TRICKLE_BYTES / 4


# --------------------------------------------------------------------------- the size cap


@pytest.mark.parametrize("how", PATHS)
def test_a_200_mb_body_is_cut_at_the_cap_and_never_read_whole(
    tools: dict[str, Any], server: _Server, how: str
) -> None:
    tracemalloc.start()
    try:
        content, status = call(tools["huge"], {"n": how}, how)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    notice, body = content.split("\n", 1)
    assert status == "success"
    assert notice == (
        f"[The response of GET {_base(server)}/huge is longer than 1000000 bytes "
        "(`max_response_bytes`): only its first 1000000 bytes follow. Ask for less (a page, "
        "a filter, a range) to see the rest.]"
    )
    assert body == "x" * 1_000_000
    assert peak < 20_000_000  # the cap and a few chunks, not 200 MB
    # the client stopped reading: the server sent what the kernel's socket buffers took (tens
    # of MB on loopback, where they grow to 32 MB) and could send no more
    assert _sent(server, f"/huge?n={how}") < HUGE_BYTES / 4


@pytest.mark.parametrize("how", PATHS)
def test_max_response_bytes_is_the_authors_to_set(
    tools: dict[str, Any], server: _Server, how: str
) -> None:
    content, status = call(tools["huge_http"], {}, how)
    notice, body = content.split("\n", 1)
    assert status == "success" and "longer than 1000 bytes" in notice and body == "x" * 1000


# --------------------------------------------------------------------------- path segments


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("name", ["listIssues", "list_issues"])
@pytest.mark.parametrize(
    ("repo", "path"),
    [
        ("a/b", "/repos/a%2Fb/issues"),
        ("?x=1", "/repos/%3Fx%3D1/issues"),
        ("#frag", "/repos/%23frag/issues"),
        ("..a", "/repos/..a/issues"),
        ("%41", "/repos/%2541/issues"),
    ],
)
def test_a_path_argument_stays_one_segment(
    tools: dict[str, Any], name: str, how: str, repo: str, path: str
) -> None:
    content, status = call(tools[name], {"repo": repo, "state": "open"}, how)
    assert status == "success"
    assert json.loads(content)["path"].split("?")[0] == path


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("name", ["listIssues", "list_issues"])
@pytest.mark.parametrize("repo", ["..", ".", "%2e%2e", "%2E.", "%252e%252e", "%2e", ""])
def test_dot_segments_are_refused_before_anything_is_sent(
    tools: dict[str, Any], server: _Server, name: str, how: str, repo: str
) -> None:
    before = len(server.requests)
    content, status = call(tools[name], {"repo": repo}, how)
    assert status == "error"
    shown = "an empty value" if not repo else repr(repo)
    assert content == (
        f"Error: argument 'repo' goes into the URL path, where {shown} would change which "
        "resource is requested; give the name of one item (not `.`, `..` or empty)"
    )
    assert len(server.requests) == before


# --------------------------------------------------------------------------- argument checks


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("list_issues", {"state": "opened"}, "argument 'state': 'opened' is not one of"),
        ("list_issues", {"per_page": "3"}, "argument 'per_page': '3' is not of type 'integer'"),
        ("list_issues", {"per_page": True}, "argument 'per_page': True is not of type 'integer'"),
        ("list_issues", {"repo": ["a"]}, "argument 'repo': ['a'] is not of type 'string'"),
        ("listIssues", {"state": "all"}, "argument 'state': 'all' is not one of ['open', 'closed"),
        ("listIssues", {"per_page": 0}, "argument 'per_page': 0 is less than the minimum of 1"),
        ("listIssues", {"per_page": 101}, "argument 'per_page': 101 is greater than the maximum"),
        ("listIssues", {"per_page": 2.5}, "argument 'per_page': 2.5 is not of type 'integer'"),
        ("listIssues", {"since": 0}, "argument 'since': 0 is less than or equal to the minimum"),
        ("listIssues", {"repo": "r" * 21}, "argument 'repo': 'rrrrrrrrrrrrrrrrrrrrr' is too long"),
    ],
)
def test_arguments_outside_their_schema_are_refused(
    tools: dict[str, Any], server: _Server, how: str, name: str, args: dict[str, Any], message: str
) -> None:
    before = len(server.requests)
    content, status = call(tools[name], {"repo": "r", **args}, how)
    assert status == "error" and content.startswith(f"Error: {message}")
    assert len(server.requests) == before


def test_a_huge_value_is_cut_in_the_message(tools: dict[str, Any]) -> None:
    content, status = call(tools["listIssues"], {"repo": "r" * 100_000}, "invoke")
    assert status == "error" and " … " in content and len(content) < 400


@pytest.mark.parametrize("how", PATHS)
def test_a_query_written_in_the_url_is_kept(server: _Server, how: str) -> None:
    base = _base(server)
    tool = _http(base, url=f"{base}/repos/{{repo}}/issues?format=json")
    content, status = call(tool, {"repo": "r", "state": "closed"}, how)
    assert status == "success"
    assert json.loads(content)["path"] == "/repos/r/issues?format=json&state=closed&per_page=10"
