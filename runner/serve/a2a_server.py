"""A2A out on Aegra (`serve --db`), which has no A2A endpoint of its own: the official A2A SDK's
JSON-RPC server, mounted beside the API at the paths the in-memory engine uses for agent NAME
(`/a2a/NAME`, its card at `/a2a/NAME/.well-known/agent-card.json`).

```
A2A client --SendStreamingMessage--> SDK request handler --> RunsExecutor --langgraph-sdk,
                                     (tasks, events)            the caller's credentials-->
                                                                the Agent Server API (Aegra)
```

A context is a thread, a task a run on it, as on the in-memory engine: the executor streams a
run of the agent on the thread named by the context (created on first use), says what the agent
writes as `working` status messages, and ends the task `completed` with the last reply as its
artifact, or `input-required` with the question of an interrupt (its value as a data part); the
next message to that task resumes the run (`Command(resume=TEXT)`). Canceling a task cancels its
run. Each reply's tokens go in its status update's metadata (`usage`, see `runner.serve.a2a`),
so a delegating agentctl agent counts them against its budgets.

Who may: the caller's credentials (`runner.serve.auth`) are checked before the SDK sees the
request (401 otherwise), and the executor calls the API with them, so the engine's ownership
rules apply to the threads behind the tasks; the SDK's task store keeps each user's tasks apart
(by the user the credentials name), so another user's task is "not found". Tasks live in this
process's memory: after a restart the threads and runs remain, the A2A tasks do not.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from runner.serve.a2a import A2A_PREFIX, USAGE_KEY, reported_usage

__all__ = ["A2AAuthMiddleware", "a2a_routes"]


class A2AAuthMiddleware:
    """`/a2a/` requests need the users the API lets in (`authenticate(headers)`, which raises
    the API's 401): the user is put in the scope for the SDK's task store."""

    def __init__(
        self, app: ASGIApp, *, authenticate: Callable[[Mapping[Any, Any]], Awaitable[Any]]
    ) -> None:
        self.app = app
        self.authenticate = authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith(A2A_PREFIX):
            await self.app(scope, receive, send)
            return
        from starlette.authentication import SimpleUser
        from starlette.responses import JSONResponse

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            user = await self.authenticate(headers)
        except Exception as exc:
            status = getattr(exc, "status_code", None)
            if not isinstance(status, int):
                raise  # not a refusal: a bug, which must not pass for one
            detail = getattr(exc, "detail", None) or "authentication required"
            extra = dict(getattr(exc, "headers", None) or {})
            refusal = JSONResponse({"detail": detail}, status_code=status, headers=extra)
            await refusal(scope, receive, send)
            return
        identity = str(user.get("identity") if isinstance(user, Mapping) else user)
        await self.app({**scope, "user": SimpleUser(identity)}, receive, send)


def _thread_id(context_id: str) -> str:
    """The thread of an A2A context: the context id when it is a UUID (the SDK makes them so),
    else a UUID made from it (threads are named by UUIDs)."""
    try:
        return str(uuid.UUID(context_id))
    except ValueError:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentctl:a2a:{context_id}"))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _interrupts(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    found = list(state.get("interrupts") or [])
    for task in state.get("tasks") or []:
        found.extend(task.get("interrupts") or [])
    seen: set[Any] = set()
    unique = []
    for interrupt in found:
        key = interrupt.get("id") or id(interrupt)
        if key not in seen:
            seen.add(key)
            unique.append(interrupt)
    return unique


def _question(value: Any) -> str:
    if isinstance(value, dict):
        if isinstance(value.get("question"), str):
            return str(value["question"])
        requests = value.get("action_requests")
        if isinstance(requests, list) and requests:
            names = ", ".join(str(r.get("name")) for r in requests if isinstance(r, dict))
            return f"approve the call of {names}?"
    return str(value)


def _executor(graph_id: str, api_url: str) -> Any:
    from a2a.helpers import new_data_part, new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.tasks import TaskUpdater
    from a2a.types import TaskState

    runs: dict[str, tuple[str, str]] = {}  # task id -> (thread id, run id) of its run

    def client_for(context: RequestContext) -> Any:
        from langgraph_sdk import get_client

        given = {k.lower(): v for k, v in (context.call_context.state.get("headers") or {}).items()}
        headers = {k: v for k, v in given.items() if k == "authorization"}
        # the SDK sends the key itself (it refuses x-api-key among the headers)
        return get_client(url=api_url, api_key=given.get("x-api-key"), headers=headers)

    class RunsExecutor(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            task_id, context_id = str(context.task_id), str(context.context_id)
            text = context.get_user_input()
            current = context.current_task
            resuming = current is not None and current.status.state in (
                TaskState.TASK_STATE_INPUT_REQUIRED,
                TaskState.TASK_STATE_AUTH_REQUIRED,
            )
            if current is None and context.message is not None:
                await event_queue.enqueue_event(new_task_from_user_message(context.message))
            updater = TaskUpdater(event_queue, task_id, context_id)
            await updater.start_work()
            client = client_for(context)
            thread_id = _thread_id(context_id)
            run_input: dict[str, Any] | None = None
            command: dict[str, Any] | None = None
            parts = context.message.parts if context.message else []
            # the agent's typed inputs: a data part `{"vars": {...}}`, as a run's
            # `configurable.vars` (the API checks them as it checks any run's)
            given_vars = _data_in(parts, "vars")
            config = (
                {"configurable": {"vars": given_vars}} if isinstance(given_vars, dict) else None
            )
            if resuming:
                # decisions on an approval come as a data part `{"resume": ...}` (as the
                # in-memory engine takes them), an answer to a question as text
                given = _data_in(parts, "resume")
                command = {"resume": text if given is None else given}
            else:
                run_input = {"messages": [{"role": "user", "content": text}]}
            async for part in client.runs.stream(
                thread_id,
                graph_id,
                input=run_input,
                command=command,
                config=config,
                stream_mode="updates",
                if_not_exists="create",
            ):
                if part.event == "metadata" and isinstance(part.data, dict):
                    runs[task_id] = (thread_id, str(part.data.get("run_id")))
                elif part.event == "error":
                    runs.pop(task_id, None)
                    message = updater.new_agent_message([new_text_part(str(part.data))])
                    await updater.failed(message)
                    return
                elif part.event == "updates" and isinstance(part.data, dict):
                    for said, usage in _replies(part.data):
                        # each reply's tokens go with it, for the caller's budgets
                        reply = updater.new_agent_message([new_text_part(said)]) if said else None
                        metadata = {USAGE_KEY: usage} if usage else None
                        await updater.update_status(
                            TaskState.TASK_STATE_WORKING, reply, metadata=metadata
                        )
            state = await client.threads.get_state(thread_id)
            runs.pop(task_id, None)  # the run is over: nothing left to cancel
            waiting = _interrupts(state)
            if waiting:
                value = waiting[0].get("value")
                parts = [new_text_part(_question(value)), new_data_part({"interrupt": waiting[0]})]
                await updater.requires_input(updater.new_agent_message(parts))
                return
            messages = (state.get("values") or {}).get("messages") or []
            answer = _text_of(messages[-1].get("content")) if messages else ""
            await updater.add_artifact([new_text_part(answer)], name="answer")
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            task_id = str(context.task_id)
            if task_id in runs:
                thread_id, run_id = runs.pop(task_id)
                await client_for(context).runs.cancel(thread_id, run_id)
            updater = TaskUpdater(event_queue, task_id, str(context.context_id))
            await updater.cancel()

    return RunsExecutor()


def _data_in(parts: Any, key: str) -> Any:
    """`key` of the first data part that has it (`resume`, `vars`), else None."""
    from google.protobuf.json_format import MessageToDict

    for part in parts:
        if part.WhichOneof("content") == "data":
            data = MessageToDict(part.data)
            if isinstance(data, dict) and key in data:
                return data[key]
    return None


def _inputs_text(inputs: Mapping[str, Any]) -> str:
    """The agent's typed inputs, for its card: how to give them, and each one."""
    if not inputs:
        return ""
    listed = []
    for name, declared in inputs.items():
        notes = [str(declared.kind)]
        if declared.required:
            notes.append("required")
        elif declared.default is not None:
            notes.append(f"default {declared.default!r}")
        about = f": {declared.description}" if getattr(declared, "description", None) else ""
        listed.append(f"{name} ({', '.join(notes)}){about}")
    how = '\nInputs, as a data part {"vars": {...}} with the first message: '
    return how + "; ".join(listed) + "."


def _replies(update: Mapping[str, Any]) -> list[tuple[str, dict[str, int] | None]]:
    """The agent's replies in one `updates` chunk of the run's stream: each one's text and the
    tokens it used (`usage`), those with either (a reply that only calls tools has tokens)."""
    said = []
    for node_update in update.values():
        for part in node_update if isinstance(node_update, list) else [node_update]:
            if not isinstance(part, dict):
                continue
            for message in part.get("messages") or []:
                if isinstance(message, dict) and message.get("type") == "ai":
                    text = _text_of(message.get("content"))
                    usage = reported_usage(message)
                    if text or usage:
                        said.append((text, usage))
    return said


def a2a_routes(
    agents: Mapping[str, tuple[str | None, Mapping[str, Any]]],
    *,
    base_url: str,
    api_url: str,
    authenticated: bool,
) -> list[Any]:
    """Starlette routes of the A2A agents for `agents` ({name: (description, typed inputs)}):
    the card and the JSON-RPC endpoint of each. `base_url`: the address clients reach this
    server at; `api_url`: where the executor reaches the API."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        APIKeySecurityScheme,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
        StringList,
    )

    routes: list[Any] = []
    for name, (description, inputs) in agents.items():
        path = f"{A2A_PREFIX}{name}"
        about = description or f"The agent {name}"
        card = AgentCard(
            name=name,
            description=about,
            supported_interfaces=[
                AgentInterface(
                    url=base_url.rstrip("/") + path,
                    protocol_binding="JSONRPC",
                    protocol_version="1.0",
                )
            ],
            capabilities=AgentCapabilities(streaming=True),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[
                AgentSkill(
                    id=name,
                    name=name,
                    description=about + _inputs_text(inputs),
                    tags=["agentctl"],
                )
            ],
            version="1.0",
        )
        if authenticated:
            card.security_schemes["apiKey"].CopyFrom(
                SecurityScheme(
                    api_key_security_scheme=APIKeySecurityScheme(
                        location="header", name="x-api-key"
                    )
                )
            )
            card.security_schemes["bearer"].CopyFrom(
                SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="bearer"))
            )
            for scheme in ("apiKey", "bearer"):
                card.security_requirements.append(
                    SecurityRequirement(schemes={scheme: StringList()})
                )
        handler = DefaultRequestHandler(
            agent_executor=_executor(name, api_url), task_store=InMemoryTaskStore(), agent_card=card
        )
        routes += create_agent_card_routes(card, card_url=f"{path}/.well-known/agent-card.json")
        routes += create_jsonrpc_routes(handler, path)
    return routes


def mount_a2a(
    app: Any,
    agents: Iterable[Any],
    *,
    vars: Mapping[str, Any],
    base_url: str,
    api_url: str,
    authenticate: Callable[[Mapping[Any, Any]], Awaitable[Any]] | None,
) -> None:
    """Add the A2A agents of the served agent files (`agents`: `runner.serve.agents`
    `ServedAgent`s; workflows and files that do not load are left out) to `app` (the Starlette
    app served in front of Aegra's API), behind `authenticate` when the server has users.
    Without the A2A SDK, nothing is added."""
    import importlib.util

    if importlib.util.find_spec("a2a") is None:
        return
    from runner.load.any import load_any
    from runner.spec import AgentSpec

    described: dict[str, tuple[str | None, Mapping[str, Any]]] = {}
    for agent in agents:
        try:
            spec = load_any(agent.path, vars=vars, require_inputs=False, allow_unused_vars=True)
        except Exception:  # a broken file (--dev): served, but not as an A2A agent
            continue
        if isinstance(spec, AgentSpec):
            described[agent.name] = (agent.description, spec.inputs)
    routes = a2a_routes(
        described, base_url=base_url, api_url=api_url, authenticated=bool(authenticate)
    )
    app.router.routes.extend(routes)
    if authenticate is not None:
        app.add_middleware(A2AAuthMiddleware, authenticate=authenticate)
