"""Test doubles: a scripted chat model and a local OpenAI-compatible server. No network."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

Reply = dict[str, Any]


def ai(content: str = "", *calls: tuple[str, dict[str, Any]]) -> Reply:
    """A scripted reply: text plus tool calls given as (name, args)."""
    return {"content": content, "tool_calls": [{"name": n, "args": a} for n, a in calls]}


class ScriptedChatModel(BaseChatModel):
    """Replies from a script, chosen by the number of AI messages already in the conversation,
    so one model serves resumed threads and concurrent subagents alike.

    `script` is a list of replies, or a function `(messages) -> reply`. `delay` sleeps per call.
    Every call is recorded in `calls` (the messages it saw), and the tools last bound (the tool
    schemas the agent sends) in `bound_tools`.
    """

    script: Any
    delay: float = 0.0
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.bound_tools = list(tools)
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        self.calls.append(list(messages))
        if callable(self.script):
            reply = self.script(messages)
        else:
            index = sum(1 for m in messages if m.type == "ai")
            if index >= len(self.script):
                raise AssertionError(f"scripted model ran out of replies at call {index + 1}")
            reply = self.script[index]
        if isinstance(reply, AIMessage):
            return reply
        return AIMessage(
            content=reply.get("content", ""),
            tool_calls=[
                {
                    "name": c["name"],
                    "args": c.get("args", {}),
                    "id": c.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                }
                for c in reply.get("tool_calls", [])
            ],
        )

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if self.delay:
            time.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if self.delay:
            import asyncio

            await asyncio.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])


# ----------------------------------------------------------------- OpenAI-compatible server


class FakeOpenAI:
    """A local OpenAI chat-completions server (stdlib `http.server` on 127.0.0.1).

    `script(request_json) -> reply` decides each answer; by default replies are taken in order
    of the number of assistant messages in the request. Requests are kept in `requests`.
    Streaming requests get server-sent events, tool calls included. A reply with `status` (e.g.
    `{"status": 500}`) is an HTTP error response instead.
    """

    def __init__(self, replies: list[Reply] | Callable[[dict[str, Any]], Reply]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                if not self.path.endswith("/chat/completions"):
                    self.send_response(404)
                    self.end_headers()
                    return
                reply = fake._reply(body)
                if "status" in reply:
                    error = {"error": {"message": reply.get("content") or "failed", "type": "x"}}
                    payload = json.dumps(error).encode()
                    self.send_response(int(reply["status"]))
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for chunk in fake._stream_chunks(body, reply):
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                payload = json.dumps(fake._completion(body, reply)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _reply(self, body: dict[str, Any]) -> Reply:
        if callable(self.replies):
            return self.replies(body)
        index = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        return self.replies[min(index, len(self.replies) - 1)]

    @staticmethod
    def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
        return [
            {
                "id": c.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}))},
            }
            for c in reply.get("tool_calls", [])
        ]

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        calls = self._tool_calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or None}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }

    def _stream_chunks(self, body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
        }
        yield {
            **base,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
            ],
        }
        for word in (reply.get("content") or "").split(" "):
            if word:
                yield {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"content": word + " "}, "finish_reason": None}
                    ],
                }
        calls = self._tool_calls(reply)
        for index, call in enumerate(calls):
            yield {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": index, **call}]},
                        "finish_reason": None,
                    }
                ],
            }
        yield {
            **base,
            "choices": [
                {"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}
            ],
        }
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
