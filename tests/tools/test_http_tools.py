"""`openapi:` and `http:` tools against a real HTTP server on 127.0.0.1: how arguments are
encoded, what errors the model gets, and what `validate` and `inspect` say about the spec."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

import runner
from runner.agent.inspect import describe
from runner.check.validate import validate_file
from runner.spec import HttpTool
from runner.tools.http import tools_from_http
from tests.fakes import ScriptedChatModel, ai

API = """\
openapi: 3.0.3
info: {title: Echo, version: "1"}
servers: [{url: http://127.0.0.1:1}]
paths:
  /items/{item_id}:
    parameters:
      - {name: item_id, in: path, required: true, schema: {type: string}}
    get:
      operationId: getItem
      summary: One item
      parameters:
        - {name: verbose, in: query, schema: {type: boolean}}
        - {name: X-Trace, in: header, schema: {type: string}}
        - {name: "filter[tag]", in: query, schema: {type: string}}
  /items:
    post:
      operationId: createItem
      description: Make an item
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Item"}
  /status/{code}:
    get:
      operationId: failWith
      parameters:
        - {name: code, in: path, required: true, schema: {type: integer}}
  /slow:
    get: {operationId: slow}
  /big:
    get: {operationId: big}
components:
  schemas:
    Item:
      type: object
      required: [name]
      properties:
        name: {type: string}
        tags: {type: array, items: {$ref: "#/components/schemas/Tag"}}
    Tag: {type: string}
"""


class _Echo(BaseHTTPRequestHandler):
    """Answers every request with what it received, as JSON; `/status/N` fails with N."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        if self.path.startswith("/status/"):
            code = int(self.path.rsplit("/", 1)[1])
            self._send(code, b"the server says no: " + b"x" * 3000)
            return
        if self.path == "/slow":
            time.sleep(3)
        if self.path == "/big":
            self._send(200, b"word " * 40_000)
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else None
        seen = {
            "method": self.command,
            "path": self.path,
            "authorization": self.headers.get("Authorization"),
            "trace": self.headers.get("X-Trace"),
            "body": json.loads(body) if body else None,
        }
        self._send(200, json.dumps(seen).encode())

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError):  # `/slow`: the client gave up, as wanted
            self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _answer


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def write_agent(folder: Path, base_url: str, extra: str = "", api: str = API) -> Path:
    (folder / "api.yaml").write_text(api)
    path = folder / "agent.yaml"
    path.write_text(
        f"""\
name: caller
model: openai:gpt-4.1
tools:
  - openapi:
      spec: ./api.yaml
      operations: [getItem, createItem, failWith, slow, big]
      base_url: {base_url}
      headers: {{Authorization: "Bearer ${{API_TOKEN}}"}}
      timeout: 0.5
{extra}"""
    )
    return path


def tools_of(path: Path) -> dict[str, Any]:
    spec = runner.load_spec(path, env={"API_TOKEN": "s3cret"})
    return {t.name: t for entry in spec.tools for t in tools_from_http(entry)}  # type: ignore[arg-type]


def call(tool: Any, args: dict[str, Any]) -> tuple[str, str]:
    """(content, status) of the ToolMessage a tool call gives, sync."""
    message = tool.invoke({"type": "tool_call", "name": tool.name, "args": args, "id": "1"})
    return message.content, message.status


def test_operation_arguments_come_from_parameters_and_the_body_schema(
    tmp_path: Path, server: str
) -> None:
    tools = tools_of(write_agent(tmp_path, server))
    get_item = tools["getItem"].tool_call_schema
    assert get_item["properties"].keys() == {"item_id", "verbose", "X-Trace", "filter_tag_"}
    assert get_item["required"] == ["item_id"]
    create = tools["createItem"].tool_call_schema
    assert create["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert create["required"] == ["name"]
    assert tools["createItem"].description == "Make an item"


def test_path_query_header_and_body_are_encoded(tmp_path: Path, server: str) -> None:
    tools = tools_of(write_agent(tmp_path, server))
    content, status = call(
        tools["getItem"],
        {"item_id": "a/b?c=1 d", "verbose": True, "X-Trace": "t-1", "filter_tag_": "x&y"},
    )
    seen = json.loads(content)
    assert status == "success"
    assert seen["path"] == "/items/a%2Fb%3Fc%3D1%20d?verbose=true&filter%5Btag%5D=x%26y"
    assert seen["authorization"] == "Bearer s3cret" and seen["trace"] == "t-1"
    content, _ = call(tools["createItem"], {"name": "cup", "tags": ["kitchen"]})
    assert json.loads(content)["body"] == {"name": "cup", "tags": ["kitchen"]}
    assert json.loads(content)["method"] == "POST"


def test_http_errors_come_back_as_tool_errors_with_status_and_body_start(
    tmp_path: Path, server: str
) -> None:
    tools = tools_of(write_agent(tmp_path, server))
    content, status = call(tools["failWith"], {"code": 404})
    assert status == "error"
    assert content.startswith(f"Error: HTTP 404 Not Found from GET {server}/status/404\n")
    assert "the server says no: xxx" in content and len(content) < 2200
    content, status = call(tools["failWith"], {"code": 503})
    assert status == "error" and "HTTP 503 Service Unavailable" in content


def test_timeouts_and_network_errors_are_tool_errors(tmp_path: Path, server: str) -> None:
    tools = tools_of(write_agent(tmp_path, server))
    content, status = call(tools["slow"], {})
    assert (content, status) == (f"Error: GET {server}/slow timed out after 0.5 seconds", "error")
    closed = tools_of(write_agent(tmp_path, "http://127.0.0.1:9"))  # nothing listens on port 9
    content, status = call(closed["getItem"], {"item_id": "1"})
    assert status == "error" and content.startswith("Error: GET http://127.0.0.1:9/items/1 failed:")


def test_missing_and_unknown_arguments_are_tool_errors(tmp_path: Path, server: str) -> None:
    tools = tools_of(write_agent(tmp_path, server))
    assert call(tools["getItem"], {}) == ("Error: missing argument 'item_id'", "error")
    content, status = call(tools["getItem"], {"item_id": "1", "colour": "red"})
    assert status == "error" and "has no argument 'colour'" in content


def test_the_async_path_does_not_block_the_loop(tmp_path: Path, server: str) -> None:
    tools = tools_of(write_agent(tmp_path, server))

    async def both() -> list[Any]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        message = await tools["slow"].ainvoke(
            {"type": "tool_call", "name": "slow", "args": {}, "id": "1"}
        )
        task.cancel()
        return [message, ticks]

    message, ticks = asyncio.run(both())
    assert message.status == "error" and "timed out" in message.content
    assert ticks > 0  # the loop kept running while the request waited


def test_http_tool_url_template_args_and_body(server: str) -> None:
    entry = HttpTool.model_validate(
        {
            "http": {
                "name": "put_note",
                "description": "Store a note",
                "method": "POST",
                "url": f"{server}/notes/{{slug}}",
                "args": {
                    "slug": {"description": "The note's name"},
                    "text": {},
                    "draft": {"type": "boolean", "default": False},
                },
                "headers": {"X-Trace": "abc"},
            }
        }
    )
    (tool,) = tools_from_http(entry)
    assert tool.tool_call_schema["required"] == ["slug", "text"]
    content, status = call(tool, {"slug": "../etc", "text": "hi"})
    seen = json.loads(content)
    assert status == "success" and seen["path"] == "/notes/..%2Fetc"
    assert seen["body"] == {"text": "hi", "draft": False} and seen["trace"] == "abc"


def test_large_responses_are_evicted_like_any_large_result(tmp_path: Path, server: str) -> None:
    path = write_agent(tmp_path, server, "filesystem: {evict_results_over_tokens: 1000}\n")
    model = ScriptedChatModel(script=[ai("", ("big", {})), ai("done")])
    spec = runner.load_spec(path, env={"API_TOKEN": "s3cret"})
    agent = runner.build_agent(spec, model=model, checkpointer=InMemorySaver())
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "go"}]}, {"configurable": {"thread_id": "t"}}
    )
    (message,) = [m for m in result["messages"] if m.type == "tool"]
    assert "/large_tool_results/" in message.content and len(message.content) < 5000
    saved = next(v for k, v in result["files"].items() if k.startswith("/large_tool_results/"))
    assert "word word" in "".join(saved["content"])


def test_validate_locates_unknown_operations_missing_files_and_invalid_documents(
    tmp_path: Path,
) -> None:
    path = write_agent(tmp_path, "http://127.0.0.1:1")
    text = path.read_text().replace("[getItem, createItem,", "[getItem, createItme,")
    path.write_text(text)
    problems = [str(p) for p in validate_file(path, env={"API_TOKEN": "x"})]
    assert problems == [
        f"{path}:6:29: tools[0].openapi.operations[1]: no operation 'createItme' in "
        f"{tmp_path / 'api.yaml'}; did you mean 'createItem'?"
    ]

    (tmp_path / "api.yaml").unlink()
    (problem,) = validate_file(path, env={"API_TOKEN": "x"})
    assert problem.path == "tools[0].openapi.spec" and problem.line == 5
    assert problem.message.startswith("OpenAPI document not found: ")

    (tmp_path / "api.yaml").write_text("openapi: 2.0\npaths: {}\n")
    (problem,) = validate_file(path, env={"API_TOKEN": "x"})
    assert problem.file.endswith("api.yaml") and (problem.line, problem.path) == (1, "openapi")
    assert "expected an OpenAPI 3.x document" in problem.message

    broken = API.replace('$ref: "#/components/schemas/Tag"', '$ref: "#/components/schemas/Tags"')
    write_agent(tmp_path, "http://127.0.0.1:1", api=broken)
    (problem,) = validate_file(path, env={"API_TOKEN": "x"})
    assert problem.file.endswith("api.yaml") and "points at nothing" in problem.message
    assert problem.path == 'components.schemas.Item.properties.tags.items["$ref"]'


def test_cli_validate_exits_2_with_the_located_error(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    path = write_agent(tmp_path, "http://127.0.0.1:1")
    path.write_text(path.read_text().replace("getItem,", "getitem,"))
    done = run_cli("validate", str(path), cwd=tmp_path, env={"API_TOKEN": "x"})
    assert done.returncode == 2
    assert "tools[0].openapi.operations[0]: no operation 'getitem'" in done.stderr + done.stdout
    assert "did you mean 'getItem'?" in done.stderr + done.stdout


def test_inspect_masks_header_values(tmp_path: Path, server: str) -> None:
    path = write_agent(tmp_path, server)
    spec = runner.load_spec(path, env={"API_TOKEN": "s3cret"})
    info = describe(spec)
    details = {t["name"]: t for t in info["tool_details"]}
    assert details["getItem"]["request"] == f"GET {server}/items/{{item_id}}"
    assert details["getItem"]["headers"] == {"Authorization": "***"}
    assert "s3cret" not in json.dumps(info)


def test_cassette_calls_are_checked_against_the_operations_arguments(tmp_path: Path) -> None:
    write_agent(tmp_path, "http://127.0.0.1:1")
    (tmp_path / "agent.cassette.yaml").write_text(
        "agents:\n  caller:\n"
        "    - tool_calls: [{name: getItem, args: {id: 1}}]\n"
        "    - content: done\n"
    )
    problems = sorted(
        p.message for p in validate_file(tmp_path / "agent.cassette.yaml", env={"API_TOKEN": "x"})
    )
    assert problems == [
        "getItem has no argument 'id'; its arguments: X-Trace, filter_tag_, item_id, verbose",
        "getItem needs the argument 'item_id'",
    ]


def test_a_spec_built_in_python_reads_its_document_when_resolved(
    tmp_path: Path, server: str
) -> None:
    (tmp_path / "api.yaml").write_text(API)
    entry = {"spec": str(tmp_path / "api.yaml"), "operations": ["getItem"], "base_url": server}
    spec = runner.AgentSpec.model_validate({"name": "py", "tools": [{"openapi": entry}]})
    model = ScriptedChatModel(script=[ai("", ("getItem", {"item_id": "7"})), ai("done")])
    result = runner.build_agent(spec, model=model).invoke(
        {"messages": [{"role": "user", "content": "go"}]}
    )
    (message,) = [m for m in result["messages"] if m.type == "tool"]
    assert json.loads(message.content)["path"] == "/items/7"
    entry["operations"] = ["getItems"]
    spec = runner.AgentSpec.model_validate({"name": "py", "tools": [{"openapi": entry}]})
    with pytest.raises(runner.SpecError, match=r"no operation 'getItems' .*did you mean 'getItem'"):
        runner.build_agent(spec, model=model)


@pytest.mark.parametrize(
    ("http", "message"),
    [
        ({"url": "http://x/{id}"}, "url: {id} names no argument; declare it under `args:`"),
        ({"url": "http://x/{id", "args": {"id": {}}}, "url: a lone '{' in 'http://x/{id'"),
        ({"url": "http://x", "body": ["text"]}, "body: 'text' names no argument under `args:`"),
        ({"url": "http://x", "method": "FETCH"}, "found text 'FETCH'; did you mean 'PATCH'?"),
    ],
)
def test_http_tool_mistakes_are_located_spec_errors(
    tmp_path: Path, http: dict[str, Any], message: str
) -> None:
    import yaml

    path = tmp_path / "agent.yaml"
    entry = {"name": "get_thing", "description": "Get a thing", **http}
    path.write_text(yaml.safe_dump({"name": "t", "tools": [{"http": entry}]}))
    with pytest.raises(runner.SpecError) as info:
        runner.load_spec(path)
    (problem,) = info.value.problems
    assert problem.path.startswith("tools[0].http") and message in problem.message
