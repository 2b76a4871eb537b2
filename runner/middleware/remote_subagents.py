"""Remote subagents: the `task` tool's calls of an agent on an Agent Server (`remote:`).

A call runs the remote assistant through `langgraph-sdk` on ONE remote thread per (thread of the
calling agent, subagent, place among the parallel calls of one reply): its id is derived from
those, so it needs no storage to be found again, later calls of the same subagent continue its
conversation, and a parent resumed in another process finds the same thread.

Each call's runs carry `agentctl_call` (the `task` call's id) in their metadata and config (Aegra
returns only the config). Before starting a run the call reads the remote thread's runs and goes
on from the latest of its own:

- none: start one with the description;
- running or pending (the parent crashed, or lost the connection, while it ran): join it;
- success: its answer is the thread's last message: a finished call never runs twice;
- interrupted (an approval in the remote agent): the parent run pauses with the remote request
  (`interrupt()`; the value names the remote agent under `remote`), and the parent's answer
  resumes the remote run (`Command(resume={interrupt id: answer})`). The k-th answer of a call
  is the answer to its k-th paused run, so a call re-entered after an answer replays the earlier
  answers in order before it asks again;
- error: the tool result is the error.

Runs are created in the background (they go on if the caller goes away) and joined for their
events, which go into the parent's stream under the `task` call's namespace, as a local
subagent's do, so the terminal, JSONL, the web page and serve's clients show them nested. A lost
connection (the remote server restarted) is waited out until `timeout`, then the run is joined
again. The remote tokens count against the parent run's budgets. When OpenTelemetry is on, the
`task` call's span context goes along as `traceparent` (header and run metadata).

The async path runs the same code in a thread of its own pool: the sync client is the one that
cannot leak a half-read stream into the event loop, and the pool is sized for many concurrent
calls (the default executor of a 2-core machine allows 6).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from runner.tools.runtime import calling_message

if TYPE_CHECKING:
    from langchain.tools import ToolRuntime

    from runner.spec.remote import RemoteAgentServer

__all__ = ["ProbeError", "RemoteAgent", "RemoteCallError", "probe", "remote_thread_id"]

CALL_KEY = "agentctl_call"
"""Run metadata: the id of the `task` call a remote run belongs to."""
RESUME_KEY = "agentctl_resume"
"""Run metadata of a run that answers an approval: the remote interrupt id it answers."""
STREAM_MODES = ["updates", "messages-tuple", "custom"]
RECONNECT_PAUSE = 0.5
"""Seconds between attempts to reach a server that went away (doubling up to 5)."""
RUNS_READ = 100
"""Runs of a remote thread read to find a call's own (the newest first)."""

_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="agentctl-remote")


class RemoteCallError(Exception):
    """A remote call that cannot go on (its run failed, the deadline passed); its message is
    the `task` call's error result."""


def remote_thread_id(parent_thread: str, name: str, server: RemoteAgentServer, slot: int) -> str:
    """The remote thread of a parent thread's calls of one subagent (`slot` tells apart the
    parallel calls of one reply)."""
    key = f"agentctl:{server.url}:{server.assistant}:{parent_thread}:{name}:{slot}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, key))


def _slot(runtime: ToolRuntime, subagent_type: str) -> int:
    """This call's place among the calling reply's `task` calls of the same subagent."""
    calling = calling_message(runtime)
    if calling is None:
        return 0
    same = [
        c.get("id")
        for c in calling.tool_calls
        if c.get("name") == "task" and (c.get("args") or {}).get("subagent_type") == subagent_type
    ]
    return same.index(runtime.tool_call_id) if runtime.tool_call_id in same else 0


def _trace_headers(runtime: ToolRuntime) -> dict[str, str]:
    """The `traceparent` of the `task` call's span, from a callback handler that knows it
    (`runner.run.telemetry.SpanRecorder.trace_headers`); empty when tracing is off."""
    from langchain_core.runnables.config import var_child_runnable_config

    # the tool's own run (its callbacks' parent), not the tool node's config the runtime holds
    config = var_child_runnable_config.get() or runtime.config or {}
    manager = config.get("callbacks")
    run_id = getattr(manager, "parent_run_id", None)
    for handler in getattr(manager, "handlers", None) or ():
        headers = getattr(handler, "trace_headers", None)
        if run_id is not None and callable(headers):
            found = headers(run_id)
            if found:
                return dict(found)
    return {}


_MESSAGE_TYPES = {
    "ai": "AIMessage",
    "AIMessageChunk": "AIMessageChunk",
    "tool": "ToolMessage",
    "human": "HumanMessage",
    "system": "SystemMessage",
}


def _message(value: Any) -> Any:
    """A message as the server sent it (a dict) -> a LangChain message, as local events hold."""
    if not isinstance(value, Mapping) or value.get("type") not in _MESSAGE_TYPES:
        return value
    import langchain_core.messages as lc

    cls = getattr(lc, _MESSAGE_TYPES[str(value["type"])])
    try:
        return cls.model_validate(dict(value))
    except ValueError:
        return value


def _update(data: Any) -> Any:
    """An `updates` chunk with its messages made LangChain messages, its interrupts left out
    (the parent raises its own)."""
    if not isinstance(data, Mapping):
        return data
    converted: dict[str, Any] = {}
    for node, update in data.items():
        if node == "__interrupt__":
            continue
        if isinstance(update, Mapping) and isinstance(update.get("messages"), list):
            update = {**update, "messages": [_message(m) for m in update["messages"]]}
        converted[node] = update
    return converted


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text") or "")
            for part in content
            if isinstance(part, str | Mapping)
        )
    return "" if content is None else str(content)


class RemoteAgent:
    """A remote subagent's calls: one `RemoteAgent` per `remote:` entry, shared by every call."""

    def __init__(
        self,
        name: str,
        server: RemoteAgentServer,
        *,
        budget: Any = None,
        client_factory: Callable[..., Any] | None = None,
    ) -> None:
        """`budget`: the parent's `BudgetMiddleware` (the remote tokens count against it)."""
        self.name = name
        self.server = server
        self.budget = budget
        self._client_factory = client_factory
        self._client: Any = None

    # ----------------------------------------------------------------------- the client

    def headers(self) -> dict[str, str]:
        return dict(self.server.headers)

    def client(self) -> Any:
        if self._client is None:
            from langgraph_sdk import get_sync_client

            factory = self._client_factory or get_sync_client
            self._client = factory(
                url=self.server.url,
                api_key=self.server.api_key,
                headers=self.headers() or None,
                timeout=(5.0, self.server.timeout, self.server.timeout, 5.0),
            )
        return self._client

    # ----------------------------------------------------------------------- a call

    async def acall(self, description: str, runtime: ToolRuntime, subagent_type: str) -> str:
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            _POOL, lambda: context.run(self.call, description, runtime, subagent_type)
        )

    def call(self, description: str, runtime: ToolRuntime, subagent_type: str) -> str:
        """Run the call to its answer (raising `GraphInterrupt` to ask the parent's person, or
        `RemoteCallError`). A budget of the parent's reached while the remote run goes on
        cancels that run and stops the parent's, as a local subagent's model call would."""
        from runner.errors import RunError

        configurable = (runtime.config or {}).get("configurable") or {}
        parent_thread = str(configurable.get("thread_id") or uuid.uuid4())
        thread_id = remote_thread_id(
            parent_thread, self.name, self.server, _slot(runtime, subagent_type)
        )
        call_id = runtime.tool_call_id or str(uuid.uuid4())
        try:
            return self._call(description, runtime, thread_id, call_id)
        except RunError:
            self._cancel_latest(thread_id, call_id)
            raise

    def _call(self, description: str, runtime: ToolRuntime, thread_id: str, call_id: str) -> str:
        import httpx
        from langgraph.types import interrupt

        trace = _trace_headers(runtime)
        deadline = time.monotonic() + self.server.timeout
        pause = RECONNECT_PAUSE
        answered = 0  # paused runs of this call whose answers were replayed
        while True:
            try:
                runs = self._runs_of_call(thread_id, call_id)
                latest = runs[-1] if runs else None
                status = latest.get("status") if latest else None
                if latest is None:
                    self._run(runtime, thread_id, call_id, trace, deadline, input=description)
                elif status in ("pending", "running"):
                    self._join(runtime, thread_id, latest["run_id"], deadline)
                elif status in ("success", "interrupted"):
                    # a run that stopped for an approval counts as a success on some servers
                    waiting = self._interrupts(thread_id)
                    if not waiting:
                        return self._answer(thread_id)
                    first = waiting[0]
                    resumes = [r for r in runs if _mark(r, RESUME_KEY)]
                    while answered < len(resumes):
                        interrupt(None)  # an answer sent before: its place in the order
                        answered += 1
                    answer = interrupt(self._request(first))
                    answered += 1
                    self._run(
                        runtime,
                        thread_id,
                        call_id,
                        trace,
                        deadline,
                        resume=(str(first.get("id") or ""), answer),
                    )
                else:
                    raise RemoteCallError(
                        f"the remote run {latest['run_id']} on {self.where()} ended with "
                        f"status {status!r}; see that server's log"
                    )
                pause = RECONNECT_PAUSE
            except httpx.HTTPError as exc:  # the server's answers; interrupts and budgets go up
                if not _unreachable(exc):
                    raise RemoteCallError(self._failure(exc)) from None
                if time.monotonic() + pause > deadline:
                    raise RemoteCallError(
                        f"{self.where()} could not be reached for {self.server.timeout:g} s "
                        f"(the `remote.timeout`): {type(exc).__name__}: {exc}"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 5.0)
            if time.monotonic() > deadline:
                self._cancel_latest(thread_id, call_id)
                raise RemoteCallError(
                    f"{self.name!r} on {self.where()} did not finish within "
                    f"{self.server.timeout:g} s (the `remote.timeout`); its run was cancelled"
                )

    def where(self) -> str:
        return f"{self.server.url} (assistant {self.server.assistant!r})"

    def _failure(self, exc: Exception) -> str:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in (401, 403):
            return (
                f"{self.where()} refused the credentials ({status}): check `remote.api_key` "
                "and `remote.headers`"
            )
        if status == 404:
            return (
                f"{self.where()} answered 404: no assistant or graph {self.server.assistant!r} "
                "there (`agentctl inspect --probe` lists what it serves)"
            )
        return f"{self.where()} failed: {type(exc).__name__}: {exc}"

    def _runs_of_call(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        """The call's runs on the thread, oldest first (none when the thread does not exist)."""
        try:
            runs = self.client().runs.list(thread_id, limit=RUNS_READ)
        except Exception as exc:
            if getattr(getattr(exc, "response", None), "status_code", None) == 404:
                return []
            raise
        own = [r for r in runs if _mark(r, CALL_KEY) == call_id]
        return sorted(own, key=lambda r: str(r.get("created_at") or ""))

    def _run(
        self,
        runtime: ToolRuntime,
        thread_id: str,
        call_id: str,
        trace: Mapping[str, str],
        deadline: float,
        *,
        input: str | None = None,
        resume: tuple[str, Any] | None = None,
    ) -> None:
        marks: dict[str, Any] = {CALL_KEY: call_id}
        kwargs: dict[str, Any] = {}
        if resume is not None:
            marks[RESUME_KEY] = resume[0] or "-"
            kwargs["command"] = {"resume": {resume[0]: resume[1]} if resume[0] else resume[1]}
        else:
            kwargs["input"] = {"messages": [{"role": "user", "content": input}]}
        parts = self.client().runs.stream(
            thread_id,
            self.server.assistant,
            stream_mode=STREAM_MODES,
            stream_subgraphs=True,
            stream_resumable=True,
            on_disconnect="continue",
            metadata={**marks, **trace},
            config={"configurable": {**marks, **trace}},
            if_not_exists="create",
            multitask_strategy="enqueue",
            headers=dict(trace) or None,
            **kwargs,
        )
        self._forward(runtime, parts, deadline)

    def _join(self, runtime: ToolRuntime, thread_id: str, run_id: str, deadline: float) -> None:
        """Follow a run started before (by this call before a crash or a lost connection)."""
        parts = self.client().runs.join_stream(
            thread_id, run_id, stream_mode=STREAM_MODES, last_event_id="-1"
        )
        self._forward(runtime, parts, deadline)

    def _forward(self, runtime: ToolRuntime, parts: Iterable[Any], deadline: float) -> None:
        """Pass a run's events into the parent's stream, under the `task` call, until it ends."""
        from langgraph._internal._constants import CONFIG_KEY_STREAM

        configurable = (runtime.config or {}).get("configurable") or {}
        stream = configurable.get(CONFIG_KEY_STREAM)
        caller_ns = tuple(p for p in str(configurable.get("checkpoint_ns") or "").split("|") if p)
        for mode, ns, data in _chunks(parts):
            if mode == "error":
                raise RemoteCallError(f"the remote run on {self.where()} failed: {data}")
            if mode == "updates":
                data = _update(data)
            elif mode == "messages" and isinstance(data, list | tuple) and len(data) == 2:
                data = (_message(data[0]), data[1])
            if stream is not None and mode in stream.modes and data:
                stream((caller_ns + ns, mode, data))
            if mode == "updates":
                self._count(data)  # after it is shown: the reply that crosses a budget counts
            if time.monotonic() > deadline:
                return

    def _count(self, update: Mapping[str, Any]) -> None:
        """Add the remote replies' tokens to the parent run's budget, and stop at its limit."""
        middleware = self.budget
        if middleware is None or not middleware.budget.active:
            return
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
        budget = middleware.budget
        tally = budget.begin(
            str(configurable.get("thread_id") or ""),
            _turn(configurable),
            new_run=False,
        )
        for part in update.values():
            for message in (part or {}).get("messages") or () if isinstance(part, dict) else ():
                if getattr(message, "type", None) == "ai":
                    budget.add(tally, message, {})
        budget.check(tally)

    def _interrupts(self, thread_id: str) -> list[dict[str, Any]]:
        state = self.client().threads.get_state(thread_id)
        found = list(state.get("interrupts") or ())
        if not found:
            for task in state.get("tasks") or ():
                found.extend(task.get("interrupts") or ())
        return [i for i in found if isinstance(i, dict)]

    def _request(self, remote: Mapping[str, Any]) -> Any:
        """What the parent's person sees: the remote request, naming the remote agent."""
        origin = {
            "agent": self.name,
            "url": self.server.url,
            "assistant": self.server.assistant,
            "interrupt_id": remote.get("id"),
        }
        value = remote.get("value")
        if isinstance(value, dict):
            return {**value, "remote": origin}
        return {"value": value, "remote": origin}

    def _answer(self, thread_id: str) -> str:
        state = self.client().threads.get_state(thread_id)
        messages = (state.get("values") or {}).get("messages") or []
        if not messages:
            raise RemoteCallError(f"{self.name!r} on {self.where()} finished without a message")
        last = messages[-1]
        return _text(last.get("content") if isinstance(last, Mapping) else last)

    def _cancel_latest(self, thread_id: str, call_id: str) -> None:
        try:
            runs = self._runs_of_call(thread_id, call_id)
            if runs and runs[-1].get("status") in ("pending", "running"):
                self.client().runs.cancel(thread_id, runs[-1]["run_id"])
        except Exception:  # best effort: the error reported is the timeout
            pass


def _mark(run: Mapping[str, Any], key: str) -> Any:
    """A mark this module put on a run: in its metadata, or in its config where a server
    (Aegra) does not return the metadata."""
    metadata = run.get("metadata") or {}
    configurable = (run.get("config") or {}).get("configurable") or {}
    return metadata.get(key) or configurable.get(key)


def _turn(configurable: Mapping[str, Any]) -> str | None:
    turn = configurable.get("agentctl_turn") or configurable.get("run_id")
    return str(turn) if turn is not None else None


def _chunks(parts: Iterable[Any]) -> Iterator[tuple[str, tuple[str, ...], Any]]:
    """(mode, namespace, data) of each SSE part (`updates|tools:1`), `messages-tuple` named
    `messages` as a local stream names it; the server's metadata and end parts left out."""
    for part in parts:
        event = str(getattr(part, "event", "") or "")
        mode, _, rest = event.partition("|")
        if mode in ("metadata", "end", ""):
            continue
        if mode == "messages-tuple":
            mode = "messages"
        ns = tuple(rest.split("|")) if rest else ()
        yield mode, ns, getattr(part, "data", None)


def _unreachable(exc: BaseException) -> bool:
    """A connection that failed or broke (the server is down or restarting), or a gateway's
    5xx: worth waiting out; anything else is the answer."""
    import httpx

    if isinstance(exc, httpx.TransportError):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status in (502, 503, 504)


class ProbeError(Exception):
    """The server did not answer as an Agent Server serving the assistant (`inspect --probe`)."""


def probe(server: RemoteAgentServer) -> dict[str, Any]:
    """Ask the server for the assistant (by id, else the default assistant of a graph of that
    id) and its input schema: what `agentctl inspect --probe` shows; `ProbeError` otherwise."""
    import httpx
    from langgraph_sdk import get_sync_client

    client = get_sync_client(
        url=server.url,
        api_key=server.api_key,
        headers=dict(server.headers) or None,
        timeout=(5.0, 30.0, 30.0, 5.0),
    )
    where = f"{server.url} (assistant {server.assistant!r})"
    try:
        try:
            found = client.assistants.search(graph_id=server.assistant, limit=1)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code not in (404, 422):
                raise
            found = []  # no graph of that id (agentctl serve says so): an assistant's id?
        if not found:
            try:
                found = [client.assistants.get(server.assistant)]
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code not in (404, 422):
                    raise
                served = sorted({a["graph_id"] for a in client.assistants.search(limit=100)})
                raise ProbeError(
                    f"{server.url} serves no assistant or graph {server.assistant!r}; it serves: "
                    + (", ".join(served) or "nothing")
                ) from None
        assistant = found[0]
        schemas = client.assistants.get_schemas(assistant["assistant_id"])
    except httpx.HTTPStatusError as exc:
        status = exc.response.status_code
        if status in (401, 403):
            raise ProbeError(
                f"{where} refused the credentials ({status}): check `remote.api_key` and "
                "`remote.headers`"
            ) from None
        raise ProbeError(f"{where} answered {status}: {exc.response.text[:200]}") from None
    except httpx.HTTPError as exc:
        raise ProbeError(
            f"cannot reach {server.url}: {type(exc).__name__}: {exc or 'no answer'}"
        ) from None
    inputs = (schemas.get("input_schema") or {}).get("properties") or {}
    return {
        "assistant_id": assistant["assistant_id"],
        "graph_id": assistant["graph_id"],
        "name": assistant.get("name"),
        "input": sorted(inputs),
    }
