"""A2A out: every agent `agentctl serve` serves is also an A2A agent, through the in-memory
engine's own A2A endpoint (`langgraph-api`'s `/a2a/{assistant_id}`).

The engine maps A2A onto its API: a context is a thread, a task is a run on it, an interrupt
leaves the task `input-required` and the next message to the same task resumes the run
(`Command(resume=...)`), `tasks/get` and `tasks/cancel` read and cancel runs. It serves the agent
card at `/a2a/{assistant_id}/.well-known/agent-card.json`, from the agent's name and description,
its input schema's properties in the one skill. Its routes are among the engine's protected
routes: the same keys or tokens (`runner.serve.auth`) let a user in, and the same ownership
(`runner.serve.ownership`) keeps each user to their own threads, so another user's task is "not
found". Its calls to itself go through its in-process client (root path `/noauth`) within the
request that the user's credentials let in.

What this module adds, as one middleware in front of the engine:

- `/a2a/NAME...` for an agent served as NAME: the engine knows assistants by id only; the
  default assistant of a graph has a fixed id (`uuid5(NAMESPACE_GRAPH, NAME)`), which the path is
  rewritten to, so a card is at `/a2a/NAME/.well-known/agent-card.json`.
- The stream of `SendStreamingMessage` as A2A 1.0 says, for clients that speak 1.0 (`A2A-Version:
  1.0`, which the official SDK sends): langgraph-api 0.16 writes each status and artifact update
  as a bare object with a `kind` (the 0.3 shape) inside a 1.0 stream, which a 1.0 client reads as
  empty events; each is wrapped as `{"statusUpdate": ...}` / `{"artifactUpdate": ...}`.

Aegra (`--db`) has no A2A endpoint; serving A2A on it is not done yet (the paths answer 404).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Container
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["A2A_PREFIX", "A2AMiddleware", "assistant_id", "stream_event_v1"]

A2A_PREFIX = "/a2a/"

NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""The namespace of the ids the LangGraph server gives each graph's default assistant."""

_WRAPPERS = {"status-update": "statusUpdate", "artifact-update": "artifactUpdate"}
_V1_KEYS = frozenset({"task", "message", "statusUpdate", "artifactUpdate"})


def assistant_id(graph_id: str) -> str:
    """The id of the default assistant the engine makes for `graph_id`."""
    return str(uuid.uuid5(NAMESPACE_GRAPH, graph_id))


def stream_event_v1(result: Any) -> Any:
    """One `SendStreamingMessage` result as A2A 1.0 writes it (a `StreamResponse`: one of
    `task`, `message`, `statusUpdate`, `artifactUpdate`); others unchanged."""
    if not isinstance(result, dict) or _V1_KEYS & result.keys():
        return result
    kind = result.get("kind")
    if kind in _WRAPPERS:
        return {_WRAPPERS[kind]: {k: v for k, v in result.items() if k not in ("kind", "final")}}
    if kind == "message":
        return {"message": {k: v for k, v in result.items() if k != "kind"}}
    return result


def _rewrite_sse_event(event: bytes) -> bytes:
    lines = event.split(b"\n")
    for index, line in enumerate(lines):
        if not line.startswith(b"data:"):
            continue
        try:
            payload = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(payload, dict) and "result" in payload:
            payload["result"] = stream_event_v1(payload["result"])
            lines[index] = b"data: " + json.dumps(payload, separators=(",", ":")).encode()
    return b"\n".join(lines)


class A2AMiddleware:
    """Agent names in `/a2a/` paths, and 1.0 stream events for 1.0 clients (see the module)."""

    def __init__(self, app: ASGIApp, *, graphs: Container[str]) -> None:
        """`graphs`: the names served, read at each request (`runner.serve.live` changes
        them while serving)."""
        self.app = app
        self.graphs = graphs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(A2A_PREFIX):
            await self.app(scope, receive, send)
            return
        name, slash, rest = path[len(A2A_PREFIX) :].partition("/")
        if name in self.graphs:
            path = f"{A2A_PREFIX}{assistant_id(name)}{slash}{rest}"
            scope = {**scope, "path": path, "raw_path": path.encode()}
        headers = dict(scope.get("headers") or ())
        version = headers.get(b"a2a-version", b"").decode("latin-1").strip()
        if scope.get("method") != "POST" or not version.startswith("1."):
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, _V1Stream(send))


class _V1Stream:
    """Passes a response on, rewriting the events of an SSE body (kept whole across chunks)."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.streaming = False
        self.pending = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers") or ())
            kind = headers.get(b"content-type", b"").decode("latin-1")
            self.streaming = kind.startswith("text/event-stream")
            await self.send(message)
            return
        if message["type"] != "http.response.body" or not self.streaming:
            await self.send(message)
            return
        data = self.pending + message.get("body", b"")
        more = message.get("more_body", False)
        *events, self.pending = data.replace(b"\r\n", b"\n").split(b"\n\n")
        if not more:
            events.append(self.pending)
            self.pending = b""
        body = b"".join(_rewrite_sse_event(e) + b"\n\n" for e in events if e)
        await self.send({"type": "http.response.body", "body": body, "more_body": more})
