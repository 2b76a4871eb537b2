"""Scripted model servers on a real socket, speaking the wire formats real providers speak.

`OpenAIServer` answers `POST /v1/chat/completions` (OpenAI-compatible: llama.cpp, vLLM, Ollama's
`/v1`), `AnthropicServer` answers `POST /v1/messages`; both stream server-sent events when the
request says `stream`, and answer with one JSON document otherwise. Each is a stdlib
`ThreadingHTTPServer` on 127.0.0.1 with an ephemeral port.

Replies are `Turn`s, taken in the order requests arrive (so "429, then the answer" is two turns),
written at the wire level: a tool call's `arguments` are the raw text the server sends (invalid
JSON, a JSON array, a cut-off object), ids may repeat or be empty, `finish` is the stop reason as
the provider names it. Like strict servers, both check every request before answering: a tool
call whose arguments are not a JSON object, a missing or repeated call id, a call without its
result or a result without its call, an empty assistant message (Anthropic) get HTTP 500 (400
for Anthropic), and the request is kept in `rejected`. No network is used.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Call:
    """A tool call as the server sends it: `arguments` is raw text."""

    name: str
    arguments: str = "{}"
    id: str | None = None
    """None: the server makes a unique one; "" sends an empty id (or none, in a stream)."""


@dataclass
class Turn:
    """One scripted answer: a reply, or an HTTP error when `status` is set."""

    text: str | None = ""
    calls: list[Call] = field(default_factory=list)
    finish: str | None = None
    """The stop reason; default: tool calls when there are any, else a normal stop."""
    status: int | None = None
    error: str = "failed"
    headers: dict[str, str] = field(default_factory=dict)


def call(name: str, args: dict[str, Any] | None = None, **kw: Any) -> Call:
    return Call(name, json.dumps(args or {}), **kw)


Script = list[Turn] | Callable[[dict[str, Any]], Turn]


class _Server:
    """What both wire formats share: the socket, the script, the request log, strictness."""

    endpoint = ""
    reject_status = 500

    def __init__(self, script: Script, *, usage: bool = True) -> None:
        self.script = script
        self.usage = usage
        self.turns = list(script) if not callable(script) else []
        self.requests: list[dict[str, Any]] = []
        self.rejected: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                owner._answer(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # A short poll interval: `shutdown()` waits for the next poll (0.5 s by default).
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Any:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ----------------------------------------------------------------------- answering

    def _next(self, body: dict[str, Any]) -> Turn:
        with self.lock:
            self.requests.append(body)
            if callable(self.script):
                return self.script(body)
            if not self.turns:
                return Turn(status=500, error="the script has no more turns")
            return self.turns.pop(0)

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if not handler.path.endswith(self.endpoint):
            self._send_json(handler, 404, {"error": {"message": f"no route {handler.path}"}})
            return
        problem = self.check(body)
        if problem is not None:
            with self.lock:
                self.requests.append(body)
                self.rejected.append((problem, body))
            self._send_json(handler, self.reject_status, self.error_body(problem))
            return
        turn = self._next(body)
        if turn.status is not None:
            self._send_json(handler, turn.status, self.error_body(turn.error), turn.headers)
            return
        if body.get("stream"):
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            handler.end_headers()
            for event, data in self.events(body, turn):
                prefix = f"event: {event}\n" if event else ""
                handler.wfile.write(f"{prefix}data: {json.dumps(data)}\n\n".encode())
                handler.wfile.flush()
            self.stream_end(handler)
            handler.close_connection = True
            return
        self._send_json(handler, 200, self.document(body, turn))

    @staticmethod
    def _send_json(
        handler: BaseHTTPRequestHandler,
        status: int,
        data: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        payload = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)

    @staticmethod
    def ids(turn: Turn) -> list[str]:
        return [c.id if c.id is not None else f"call_{uuid.uuid4().hex[:12]}" for c in turn.calls]

    # ----------------------------------------------------------------------- per format

    def check(self, body: dict[str, Any]) -> str | None:
        raise NotImplementedError

    def error_body(self, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def document(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        raise NotImplementedError

    def events(self, body: dict[str, Any], turn: Turn) -> Iterator[tuple[str, dict[str, Any]]]:
        raise NotImplementedError

    def stream_end(self, handler: BaseHTTPRequestHandler) -> None:
        pass


def _pieces(text: str, count: int = 3) -> list[str]:
    """`text` in `count` nearly equal pieces (streams send arguments in fragments)."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _json_object(text: Any) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (TypeError, ValueError):
        return False


class OpenAIServer(_Server):
    """OpenAI chat completions (`base_url` ends in `/v1`, as OpenAI-compatible servers do)."""

    endpoint = "/chat/completions"

    @property
    def base_url(self) -> str:
        return super().base_url + "/v1"

    def error_body(self, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "server_error", "code": None}}

    def check(self, body: dict[str, Any]) -> str | None:
        waiting: list[str] = []
        seen: set[str] = set()
        for message in body.get("messages", []):
            role = message.get("role")
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in waiting:
                    return f"tool message answers no pending call: {call_id!r}"
                waiting.remove(call_id)
                continue
            if waiting:
                return f"tool calls without results: {waiting}"
            for tool_call in message.get("tool_calls") or () if role == "assistant" else ():
                call_id = tool_call.get("id")
                if not call_id or call_id in seen:
                    return f"tool call id missing or repeated: {call_id!r}"
                if not _json_object(tool_call["function"].get("arguments")):
                    return "Failed to parse tool call arguments as JSON"
                seen.add(call_id)
                waiting.append(call_id)
        return None

    def _finish(self, turn: Turn) -> str:
        return turn.finish or ("tool_calls" if turn.calls else "stop")

    def _usage(self) -> dict[str, int]:
        return {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}

    def document(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c, i in zip(turn.calls, self.ids(turn), strict=True)
            ]
        document: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish(turn)}],
        }
        if self.usage:
            document["usage"] = self._usage()
        return document

    def events(self, body: dict[str, Any], turn: Turn) -> Iterator[tuple[str, dict[str, Any]]]:
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, dict[str, Any]]:
            return "", {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": "" if turn.text is not None else None})
        for word in (turn.text or "").split(" "):
            if word:
                yield chunk({"content": word + " "})
        for index, (c, call_id) in enumerate(zip(turn.calls, self.ids(turn), strict=True)):
            for n, piece in enumerate(_pieces(c.arguments)):
                delta: dict[str, Any] = {"index": index, "function": {"arguments": piece}}
                if n == 0:
                    delta.update(type="function", function={"name": c.name, "arguments": piece})
                    if call_id:
                        delta["id"] = call_id
                yield chunk({"tool_calls": [delta]})
        yield chunk({}, self._finish(turn))
        if self.usage and (body.get("stream_options") or {}).get("include_usage"):
            yield "", {**base, "choices": [], "usage": self._usage()}

    def stream_end(self, handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"data: [DONE]\n\n")


class AnthropicServer(_Server):
    """Anthropic messages (`base_url` without `/v1`: the client adds it)."""

    endpoint = "/v1/messages"
    reject_status = 400

    def error_body(self, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}

    def check(self, body: dict[str, Any]) -> str | None:
        waiting: list[str] = []
        seen: set[str] = set()
        for message in body.get("messages", []):
            content = message.get("content")
            blocks = content if isinstance(content, list) else []
            if message.get("role") == "user":
                for block in blocks:
                    if block.get("type") == "tool_result":
                        if block.get("tool_use_id") not in waiting:
                            return f"tool_result answers no tool_use: {block.get('tool_use_id')!r}"
                        waiting.remove(block["tool_use_id"])
                if waiting:
                    return f"tool_use ids were found without tool_result blocks: {waiting}"
                continue
            if waiting:
                return f"tool_use ids were found without tool_result blocks: {waiting}"
            if not content or (isinstance(content, str) and not content.strip()):
                return "all messages must have non-empty content"
            for block in blocks:
                if block.get("type") != "tool_use":
                    continue
                if not block.get("id") or block["id"] in seen:
                    return f"tool_use ids must be unique: {block.get('id')!r}"
                if not isinstance(block.get("input"), dict):
                    return "tool_use.input: Input should be a valid dictionary"
                seen.add(block["id"])
                waiting.append(block["id"])
        return None

    def _stop(self, turn: Turn) -> str:
        return turn.finish or ("tool_use" if turn.calls else "end_turn")

    def document(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for c, call_id in zip(turn.calls, self.ids(turn), strict=True):
            # The API sends `input` as an object, parsed as far as it goes (a cut-off reply).
            from langchain_core.utils.json import parse_partial_json

            try:
                value = parse_partial_json(c.arguments)
            except ValueError:
                value = None
            value = value if isinstance(value, dict) else {}
            content.append({"type": "tool_use", "id": call_id, "name": c.name, "input": value})
        return {
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "test-model"),
            "content": content,
            "stop_reason": self._stop(turn),
            "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 7},
        }

    def events(self, body: dict[str, Any], turn: Turn) -> Iterator[tuple[str, dict[str, Any]]]:
        yield (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{uuid.uuid4().hex[:12]}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "test-model"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 11, "output_tokens": 1},
                },
            },
        )
        index = 0
        if turn.text:
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for word in turn.text.split(" "):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": word + " "},
                    },
                )
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
            index += 1
        for c, call_id in zip(turn.calls, self.ids(turn), strict=True):
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": call_id,
                        "name": c.name,
                        "input": {},
                    },
                },
            )
            for piece in _pieces(c.arguments):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
            index += 1
        yield (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": self._stop(turn), "stop_sequence": None},
                "usage": {"output_tokens": 7},
            },
        )
        yield "message_stop", {"type": "message_stop"}


def refused_url() -> str:
    """A 127.0.0.1 URL nothing listens on (a port bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
