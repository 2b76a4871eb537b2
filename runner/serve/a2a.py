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
- Typed inputs: a data part `{"vars": {...}}` of a sent message is taken out of the message and
  given as the run's `context` (`params.context`, which the engine's A2A passes to the run it
  starts; the engine makes a run's context its `configurable`), so the agent reads them as
  `configurable.vars`, as on Aegra (`runner.serve.a2a_server`).
- The tokens the run used, in the metadata of a stream's final status update (`usage`:
  `{"input_tokens", "output_tokens"}`), so a delegating agentctl agent counts them against its
  budgets (`runner.tools.a2a`). The engine's stream drops the replies' usage; the middleware
  reads it from the thread's history (the replies the latest run added, found by the `run_id`
  of its checkpoints), through the engine's in-process client. The served agent's own replies
  are counted, not those of its subagents.

Aegra (`--db`) has no A2A endpoint; serving A2A on it is not done yet (the paths answer 404).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Container
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "A2A_PREFIX",
    "USAGE_KEY",
    "A2AMiddleware",
    "assistant_id",
    "reported_usage",
    "stream_event_v1",
]

A2A_PREFIX = "/a2a/"

NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""The namespace of the ids the LangGraph server gives each graph's default assistant."""

USAGE_KEY = "usage"
"""The metadata key of an A2A event that reports the tokens used since the previous report
(`runner.tools.a2a` reads it on the calling side)."""

HISTORY_READ = 200
"""Checkpoints of a thread read to find where the latest run began."""

_FINAL_STATES = frozenset(
    {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_AUTH_REQUIRED",
        "TASK_STATE_FAILED",
        "completed",
        "input-required",
        "auth-required",
        "failed",
    }
)

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


def reported_usage(message: Any) -> dict[str, int] | None:
    """`{"input_tokens", "output_tokens"}` of a message (a dict) that says what it used: its
    `usage_metadata` (the in-memory engine's thread state keeps it in `additional_kwargs`)."""
    if not isinstance(message, dict):
        return None
    usage = message.get("usage_metadata")
    if not usage:
        usage = (message.get("additional_kwargs") or {}).get("usage_metadata")
    if not isinstance(usage, dict):
        return None
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    if not isinstance(tokens_in, int) and not isinstance(tokens_out, int):
        return None
    return {
        "input_tokens": tokens_in if isinstance(tokens_in, int) else 0,
        "output_tokens": tokens_out if isinstance(tokens_out, int) else 0,
    }


def _final_update(result: Any) -> str | None:
    """The context (thread) of a final status update of a stream, in either shape; else None."""
    if not isinstance(result, dict):
        return None
    update = result.get("statusUpdate") if "statusUpdate" in result else result
    if not isinstance(update, dict) or (
        "statusUpdate" not in result and result.get("kind") != "status-update"
    ):
        return None
    state = (update.get("status") or {}).get("state")
    context = update.get("contextId")
    return str(context) if state in _FINAL_STATES and context else None


async def run_usage(thread_id: str, headers: dict[str, str]) -> dict[str, int] | None:
    """The tokens of the replies the latest run of the thread added (see the module)."""
    from langgraph_sdk import get_client

    found = await get_client(url=None).threads.get_history(
        thread_id, limit=HISTORY_READ, headers=headers
    )
    history: list[dict[str, Any]] = [dict(h) for h in found]
    if not history:
        return None

    def messages(state: dict[str, Any] | None) -> list[Any]:
        values = (state or {}).get("values")
        found = values.get("messages") if isinstance(values, dict) else None
        return found if isinstance(found, list) else []

    run_id = (history[0].get("metadata") or {}).get("run_id")
    earlier = next((h for h in history if (h.get("metadata") or {}).get("run_id") != run_id), None)
    seen = {m.get("id") for m in messages(earlier) if isinstance(m, dict)}
    total = {"input_tokens": 0, "output_tokens": 0}
    counted = False
    for message in messages(history[0]):
        if not isinstance(message, dict) or message.get("type") != "ai":
            continue
        if message.get("id") in seen:
            continue
        usage = reported_usage(message)
        if usage:
            counted = True
            for key in total:
                total[key] += usage[key]
    return total if counted else None


async def _rewrite_sse_event(event: bytes, *, v1: bool, headers: dict[str, str]) -> bytes:
    lines = event.split(b"\n")
    for index, line in enumerate(lines):
        if not line.startswith(b"data:"):
            continue
        try:
            payload = json.loads(line[5:])
        except ValueError:
            continue
        if not isinstance(payload, dict) or "result" not in payload:
            continue
        result = payload["result"]
        thread_id = _final_update(result)
        if thread_id is not None:
            try:
                usage = await run_usage(thread_id, headers)
            except Exception:  # the answer matters more than its count
                usage = None
            if usage:
                update = result.get("statusUpdate", result)
                update["metadata"] = {**(update.get("metadata") or {}), USAGE_KEY: usage}
        if v1:
            result = stream_event_v1(result)
        payload["result"] = result
        lines[index] = b"data: " + json.dumps(payload, separators=(",", ":")).encode()
    return b"\n".join(lines)


class A2AMiddleware:
    """Agent names in `/a2a/` paths, typed inputs as the run's context, 1.0 stream events for
    1.0 clients and the run's tokens in the final update (see the module)."""

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
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        scope = dict(scope)
        receive = await _with_vars(scope, receive)
        # the caller's credentials, for reading the thread's history as the caller
        credentials = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in headers.items()
            if k.lower() in (b"authorization", b"x-api-key")
        }
        stream = _V1Stream(send, v1=version.startswith("1."), headers=credentials)
        await self.app(scope, receive, stream)


_SEND_METHODS = frozenset({"SendMessage", "SendStreamingMessage", "message/send", "message/stream"})

MAX_BODY = 32 * 1024 * 1024
"""The largest request body read to look for typed inputs (a larger one passes unread)."""


def vars_as_context(request: Any) -> bool:
    """Move a `{"vars": {...}}` data part of a JSON-RPC send request's message into its
    `params.context` (in place); whether there was one."""
    if not isinstance(request, dict) or request.get("method") not in _SEND_METHODS:
        return False
    params = request.get("params")
    if not isinstance(params, dict):
        return False
    message = params.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return False
    for index, part in enumerate(parts):
        data = part.get("data") if isinstance(part, dict) else None
        if isinstance(data, dict) and isinstance(data.get("vars"), dict):
            context = params.get("context")
            context = dict(context) if isinstance(context, dict) else {}
            params["context"] = {**context, "vars": data["vars"]}
            del parts[index]
            return True
    return False


async def _with_vars(scope: Scope, receive: Receive) -> Receive:
    """The request's `receive`, its body rewritten when its message carries typed inputs
    (`vars_as_context`); the body is read whole first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return _replay([message], receive)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if not message.get("more_body", False) or size > MAX_BODY:
            more = message.get("more_body", False)
            break
    body = b"".join(chunks)
    if not more:
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if vars_as_context(request):
            body = json.dumps(request, separators=(",", ":")).encode()
            headers = [(k, v) for k, v in scope.get("headers") or () if k != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            scope["headers"] = headers
    return _replay([{"type": "http.request", "body": body, "more_body": more}], receive)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` that gives `messages` first, then what `receive` gives."""

    async def replayed() -> Message:
        return messages.pop(0) if messages else await receive()

    return replayed


class _V1Stream:
    """Passes a response on, rewriting the events of an SSE body (kept whole across chunks):
    1.0 events for a 1.0 client (`v1`), the run's tokens in the final status update."""

    def __init__(
        self, send: Send, *, v1: bool = True, headers: dict[str, str] | None = None
    ) -> None:
        self.send = send
        self.v1 = v1
        self.headers = headers or {}
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
        rewritten = [
            await _rewrite_sse_event(e, v1=self.v1, headers=self.headers) for e in events if e
        ]
        body = b"".join(e + b"\n\n" for e in rewritten)
        await self.send({"type": "http.response.body", "body": body, "more_body": more})
