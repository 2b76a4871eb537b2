"""A tiny A2A agent built with the official SDK (`a2a-sdk`), served on loopback for tests.

`Translator` answers from a script, no model: a text is "translated" (upper-cased, numbered by
how many texts its context has seen, so a test can tell a reused context from a new one); a text
starting `ask:` makes the task wait for input (`input-required`) and the next message of that
task is the language; `fail` fails the task; `slow` waits until canceled; `hold` stays working
until the test sets `Seen.release`, then answers. Requests to the agent
need `Authorization: Bearer sekret` (the card is public).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

TOKEN = "sekret"


@dataclass
class Seen:
    """What the agent was sent: (context id, task id, text) per message, canceled tasks, and
    the `traceparent` header of each JSON-RPC request."""

    messages: list[tuple[str, str, str]] = field(default_factory=list)
    canceled: list[str] = field(default_factory=list)
    traceparents: list[str | None] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    """The JSON-RPC method of each request (`SendStreamingMessage`, `GetTask`, ...)."""
    release: threading.Event = field(default_factory=threading.Event)
    """Lets the tasks of `hold` finish."""
    finished: list[str] = field(default_factory=list)
    """The tasks of `hold` that finished."""
    no_subscribe: bool = False
    """Refuse `SubscribeToTask` (as an agent that cannot subscribe does)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def translator_app(port: int, seen: Seen) -> Any:
    from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        Role,
        TaskState,
    )
    from starlette.applications import Starlette
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import JSONResponse

    class Translator(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            text = context.get_user_input()
            task_id, context_id = str(context.task_id), str(context.context_id)
            seen.messages.append((context_id, task_id, text))
            updater = TaskUpdater(event_queue, task_id, context_id)
            waiting = context.current_task is not None and (
                context.current_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            )
            if context.current_task is None and context.message is not None:
                await event_queue.enqueue_event(new_task_from_user_message(context.message))
            await updater.start_work(
                new_text_message("translating", context_id=context_id, task_id=task_id)
            )
            if waiting:
                await updater.add_artifact([new_text_part(f"translated into {text}")])
                await updater.complete()
            elif text.startswith("ask:"):
                question = new_text_message(
                    "Which language?", context_id=context_id, task_id=task_id, role=Role.ROLE_AGENT
                )
                await updater.requires_input(question)
            elif text == "fail":
                await updater.failed(
                    new_text_message("no dictionary", context_id=context_id, task_id=task_id)
                )
            elif text == "slow":
                await asyncio.sleep(3600)
            elif text == "hold":
                await asyncio.to_thread(seen.release.wait)
                await updater.add_artifact([new_text_part("held and released")])
                await updater.complete()
                seen.finished.append(task_id)
            else:
                count = sum(1 for c, _, _ in seen.messages if c == context_id)
                await updater.add_artifact([new_text_part(f"[{count}] {text.upper()}")])
                await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            seen.canceled.append(str(context.task_id))
            updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
            await updater.cancel()

    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="translator",
        description="Translates text",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="translate", name="translate", description="Translates", tags=["text"])
        ],
        version="1.0",
    )
    handler = DefaultRequestHandler(
        agent_executor=Translator(), task_store=InMemoryTaskStore(), agent_card=card
    )

    class NeedsToken(BaseHTTPMiddleware):
        async def dispatch(self, request: Any, call_next: Any) -> Any:
            if request.method == "POST":
                seen.traceparents.append(request.headers.get("traceparent"))
                try:
                    sent = json.loads(await request.body())
                except ValueError:
                    sent = {}
                seen.methods.append(str(sent.get("method")))
                if seen.no_subscribe and sent.get("method") == "SubscribeToTask":
                    refusal = {"code": -32601, "message": "Method not found"}
                    return JSONResponse({"jsonrpc": "2.0", "id": sent.get("id"), "error": refusal})
            if request.method == "POST" and request.headers.get("authorization") != (
                f"Bearer {TOKEN}"
            ):
                return JSONResponse({"error": "unauthorized"}, status_code=401)
            return await call_next(request)

    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    app.add_middleware(NeedsToken)
    return app


@contextmanager
def serving_translator() -> Iterator[tuple[str, Seen]]:
    """The translator on a loopback port, for the block: (its base URL, what it saw)."""
    import uvicorn

    port = free_port()
    seen = Seen()
    config = uvicorn.Config(
        translator_app(port, seen), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test A2A agent did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        seen.release.set()  # no task left holding a thread
        server.should_exit = True
        thread.join(timeout=10)
