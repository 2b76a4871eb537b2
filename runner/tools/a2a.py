"""A2A agents as subagents: a small LangGraph graph that talks to the agent with the official A2A
SDK (`a2a-sdk`), so the `task` tool runs it like any other subagent. Imported only by a build
that has an A2A subagent (LangGraph is imported at the top, for the graph's state).

```
task(description) --> [exchange] --message/stream--> A2A agent   (status and artifact updates
                          |  ^                                     go out on the custom stream)
     input-required / auth-required                     completed / failed / ... --> answer
                          v  |
                        [ask]  interrupt(ask_user question, or the remote approval request)
                               -> the parent's answer is the next message of the same A2A task
```

Why a graph and not a tool: the graph has no checkpointer of its own, so it uses the parent's,
like a local subagent. A question of the remote agent becomes an `ask_user` interrupt of the
parent run (the question names the agent asking), the checkpoint keeps the remote task's id, and
the answer resumes the graph at `ask`, which sends it to the same task; nothing is sent twice.
A remote LangGraph server (`agentctl serve`) waiting on an approval sends the approval request as
data: the parent run waits on the same request (each call naming the agent), and the decisions
go back as a `{"resume": ...}` data part, as that server takes them.

A `task` call that finished is in the parent thread's tool journal (`runner.middleware.journal`):
a run resumed after a crash answers it from there and does not send it again. A call in flight
is not sent again either: the task each of its messages went to is journaled as soon as the
first event names it (`SentTasks`), and a resumed run follows that task (`A2AAgent.follow`:
`tasks/get`, then `tasks/subscribe` while it works) instead of sending the message again.

The tokens the agent reports (`usage` in an event's metadata, `event_usage`; `agentctl serve`
reports them) count against the parent run's budgets (`charger`); reaching one cancels the
remote task and stops the parent run. When runs are traced, each request carries the
`traceparent` of the subagent's span.

One A2A context (`contextId`) per parent thread and subagent: the graph reads it from the
parent's state (`a2a_contexts`, subagent name -> contextId, see `runner.middleware.subagents`)
and writes back the one the agent used, so a later `task` call to the same agent continues the
same conversation, and the id is saved with the parent's thread.

Failures (the agent unreachable, an error answer, a task that failed, was rejected or canceled,
the `timeout` passed) become the `task` call's result, an error text the parent model reads; the
run goes on. After a timeout, the remote task is canceled.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Final, TypedDict, TypeVar

from langgraph.graph.message import add_messages

from runner.errors import RunError
from runner.middleware.subagents import A2A_CONTEXTS, merge_contexts
from runner.spec.a2a import DEFAULT_A2A_TIMEOUT, A2AConnection, card_url

if TYPE_CHECKING:
    import httpx
    from a2a.types import AgentCard, StreamResponse

__all__ = [
    "A2A_CONTEXTS",
    "A2AAgent",
    "A2AOutcome",
    "a2a_subagent_graph",
    "fetch_card",
    "fetch_card_sync",
]

PENDING: Final = "_a2a_pending"
"""The graph's own state key: the remote task waiting for an answer (never goes to the parent:
`runner.middleware.subagents` leaves keys starting with `_` out)."""

WAITING_STATES = frozenset({"input-required", "auth-required"})
FAILED_STATES = frozenset({"failed", "rejected", "canceled"})

CANCEL_SECONDS = 10.0
"""How long canceling a remote task after a timeout may take."""

POLL_SECONDS = 0.5
MAX_POLL_SECONDS = 5.0
"""How often a call that follows a task of an agent that cannot subscribe asks for it (the
pause doubles from `POLL_SECONDS` up to `MAX_POLL_SECONDS`)."""

CARD_SECONDS = 30.0
"""How long fetching an agent card may take."""

T = TypeVar("T")
Writer = Callable[[Any], None]


def state_name(value: int) -> str:
    """`TASK_STATE_INPUT_REQUIRED` -> `input-required`: the state as the A2A spec writes it."""
    from a2a.types import TaskState

    return TaskState.Name(value).removeprefix("TASK_STATE_").lower().replace("_", "-")


def _http_client(
    connection: A2AConnection, timeout: float, extra: Mapping[str, str] | None = None
) -> httpx.AsyncClient:
    import httpx

    headers = {**(extra or {}), **connection.headers}
    return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout), verify=_tls_context())


@functools.cache
def _tls_context() -> Any:
    """One TLS context for every client: making one (loading the CA bundle) costs more CPU than
    the rest of a call's set-up, and each call has a client of its own."""
    import httpx

    return httpx.create_ssl_context()


def trace_headers(config: Mapping[str, Any] | None) -> dict[str, str]:
    """The W3C trace context (`traceparent`) of the span the runnable of `config` is in, when
    runs are traced (`runner.run.telemetry`, whose span recorder is found among the run's
    callback handlers by its `span_for`): the remote agent's spans join the same trace."""
    callbacks = (config or {}).get("callbacks")
    run_id = getattr(callbacks, "parent_run_id", None)
    if run_id is None:
        return {}
    for handler in getattr(callbacks, "handlers", None) or ():
        span_for = getattr(handler, "span_for", None)
        span = span_for(run_id) if callable(span_for) else None
        if span is not None:
            from opentelemetry import propagate, trace

            carrier: dict[str, str] = {}
            propagate.inject(carrier, context=trace.set_span_in_context(span))
            return carrier
    return {}


async def fetch_card(connection: A2AConnection, *, timeout: float = CARD_SECONDS) -> AgentCard:
    """The agent card at `connection.card`; `A2AClientError`s and `httpx` errors pass through."""
    from a2a.client import A2ACardResolver

    url = card_url(connection.card)
    async with _http_client(connection, timeout) as http:
        return await A2ACardResolver(http, url, agent_card_path="").get_agent_card()


def fetch_card_sync(connection: A2AConnection, *, timeout: float = CARD_SECONDS) -> AgentCard:
    """`fetch_card` from synchronous code (any thread, a running loop or not)."""
    return run_sync(lambda: fetch_card(connection, timeout=timeout))


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `make()` to its end from synchronous code: on a loop of its own, in a
    thread when this one already runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(make()))
        except BaseException as exc:  # handed to the caller
            failure.append(exc)

    thread = threading.Thread(target=target, name="agentctl-a2a", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def _parts_text(parts: Any) -> str:
    """The text of message or artifact parts: the text parts; without any, a data part's
    `question` (an interrupt of a LangGraph server asks in one) or its JSON, and file URLs."""
    texts = [part.text for part in parts if part.WhichOneof("content") == "text" and part.text]
    if texts:
        return "\n".join(texts)
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "data":
            from google.protobuf.json_format import MessageToDict

            data = MessageToDict(part.data)
            texts.append(_question_in(data) or json.dumps(data, ensure_ascii=False))
        elif kind == "url":
            texts.append(part.url)
    return "\n".join(texts)


def _interrupt_value(parts: Any) -> dict[str, Any] | None:
    """The interrupt value in a data part: `{id, value}` (the in-memory LangGraph server's
    interrupt artifact) or `{"interrupt": {id, value}}` (serve on Aegra)."""
    from google.protobuf.json_format import MessageToDict

    for part in parts:
        if part.WhichOneof("content") != "data":
            continue
        data = MessageToDict(part.data)
        if isinstance(data, dict) and isinstance(data.get("interrupt"), dict):
            data = data["interrupt"]
        value = data.get("value") if isinstance(data, dict) else None
        if isinstance(value, dict):
            return value
    return None


USAGE_KEY: Final = "usage"
"""The metadata key of an event (status or artifact update, message) that reports the tokens
the remote agent used since its previous report: `{"input_tokens": n, "output_tokens": m}`
(LangChain's names). agentctl serve's A2A out sends it; a remote that does not is uncounted."""


def event_usage(event: StreamResponse) -> dict[str, int] | None:
    """The tokens an event of the stream reports (`USAGE_KEY` in its metadata), if any. A whole
    task (`tasks/get`) is not read: its metadata may repeat what updates reported."""
    from google.protobuf.json_format import MessageToDict

    kind = event.WhichOneof("payload")
    if kind not in ("status_update", "artifact_update", "message"):
        return None
    payload = getattr(event, kind)
    if not payload.HasField("metadata"):
        return None
    usage = MessageToDict(payload.metadata).get(USAGE_KEY)
    if not isinstance(usage, dict):
        return None
    counted = {}
    for key in ("input_tokens", "output_tokens"):
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            counted[key] = int(value)
    return counted or None


def is_approval_request(value: Any) -> bool:
    """Whether an interrupt value asks to approve tool calls (LangChain's human-in-the-loop)."""
    return isinstance(value, dict) and isinstance(value.get("action_requests"), list)


def _question_in(data: Any) -> str | None:
    if isinstance(data, dict):
        value = data.get("value")
        for found in (
            data.get("question"),
            value.get("question") if isinstance(value, dict) else None,
        ):
            if isinstance(found, str) and found:
                return found
    return None


@dataclass
class A2AOutcome:
    """Where one exchange with the agent left its task."""

    state: str
    """The task's last state (`completed`, `input-required`, ...), or `message` when the agent
    answered with a message and no task."""
    text: str
    """The answer: the artifacts' text, else the last status message, else the message."""
    task_id: str | None = None
    context_id: str | None = None
    request: dict[str, Any] | None = None
    """When the task waits: the interrupt value behind the question, when the agent (a
    LangGraph server) sent it as data."""


@dataclass
class _Progress:
    """What the stream of one exchange has said so far."""

    task_id: str | None = None
    context_id: str | None = None
    state: str = "submitted"
    status_text: str = ""
    message_text: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)
    last_artifact: str | None = None
    request: dict[str, Any] | None = None
    """The interrupt value a LangGraph server sent with its question (a data part), if any."""

    def read(self, event: StreamResponse) -> str:
        """Take in one event; the new text it brings (for the live stream)."""
        kind = event.WhichOneof("payload")
        if kind == "task":
            task = event.task
            self.task_id, self.context_id = task.id, task.context_id
            self.state = state_name(task.status.state)
            for artifact in task.artifacts:
                self.artifacts[artifact.artifact_id] = _parts_text(artifact.parts)
            if task.status.HasField("message"):
                self.status_text = _parts_text(task.status.message.parts)
                self.request = _interrupt_value(task.status.message.parts) or self.request
            for artifact in task.artifacts:
                self.request = _interrupt_value(artifact.parts) or self.request
            return ""
        if kind == "status_update":
            update = event.status_update
            self.task_id, self.context_id = update.task_id, update.context_id
            self.state = state_name(update.status.state)
            # the text of the latest status only: a question is the waiting status's own
            self.status_text = ""
            if update.status.HasField("message"):
                self.status_text = _parts_text(update.status.message.parts)
                self.request = _interrupt_value(update.status.message.parts) or self.request
            return self.status_text
        if kind == "artifact_update":
            update = event.artifact_update
            self.task_id, self.context_id = update.task_id, update.context_id
            text = _parts_text(update.artifact.parts)
            key = update.artifact.artifact_id
            self.artifacts[key] = self.artifacts.get(key, "") + text if update.append else text
            self.last_artifact = key
            self.request = _interrupt_value(update.artifact.parts) or self.request
            return text
        if kind == "message":
            message = event.message
            self.context_id = message.context_id or self.context_id
            self.message_text = _parts_text(message.parts)
            self.state = "message"
            return self.message_text
        return ""

    def outcome(self) -> A2AOutcome:
        artifacts = "\n".join(t for t in self.artifacts.values() if t)
        if self.state in WAITING_STATES:
            # the question: in the waiting status, else in the artifact that came last (a
            # LangGraph server sends an interrupt's value as one)
            latest = self.artifacts.get(self.last_artifact or "", "")
            text = self.status_text or latest
        else:
            text = artifacts or self.status_text or self.message_text
        request = self.request if self.state in WAITING_STATES else None
        return A2AOutcome(self.state, text, self.task_id, self.context_id, request)


class A2AAgent:
    """One A2A agent named by a spec: its card fetched once, a client per exchange (an httpx
    client belongs to the loop that opened it, and the sync path runs a loop per call)."""

    def __init__(
        self, name: str, connection: A2AConnection, *, card: AgentCard | None = None
    ) -> None:
        self.name = name
        self.connection = connection
        self.timeout = connection.timeout or DEFAULT_A2A_TIMEOUT
        self._card = card

    async def card(self) -> AgentCard:
        if self._card is None:
            self._card = await fetch_card(self.connection, timeout=min(self.timeout, CARD_SECONDS))
        return self._card

    async def exchange(
        self,
        text: str,
        *,
        context_id: str | None,
        task_id: str | None,
        on_text: Callable[[str, str], None] | None = None,
        resume: Any = None,
        headers: Mapping[str, str] | None = None,
        on_task: Callable[[str, str | None], Awaitable[None]] | None = None,
        on_usage: Callable[[dict[str, int]], None] | None = None,
    ) -> A2AOutcome:
        """Send `text` (to the task `task_id` when it continues one) and follow the task until it
        ends or waits for input. `on_text(state, text)` hears each piece of text as it comes.
        `resume`: instead of text, a data part `{"resume": resume}` (decisions on an approval,
        as a LangGraph server takes them). `headers`: more headers for this exchange (the trace
        context). `on_task(task_id, context_id)` is awaited once, as soon as an event names the
        task, before the stream is read further (where the call records it). `on_usage(tokens)`
        hears the tokens each event reports (`event_usage`); what it raises ends the exchange
        (the remote task is canceled)."""
        from a2a.helpers import new_data_part, new_message, new_text_part
        from a2a.types import Role, SendMessageRequest

        progress = _Progress(task_id=task_id, context_id=context_id)
        part = new_text_part(text) if resume is None else new_data_part({"resume": resume})
        message = new_message([part], context_id=context_id, task_id=task_id, role=Role.ROLE_USER)
        announced = False

        async def follow(client: Any) -> None:
            nonlocal announced
            async for event in client.send_message(SendMessageRequest(message=message)):
                piece = progress.read(event)
                if piece and on_text is not None:
                    on_text(progress.state, piece)
                usage = event_usage(event) if on_usage is not None else None
                if usage and on_usage is not None:
                    on_usage(usage)
                if on_task is not None and progress.task_id and not announced:
                    announced = True
                    await on_task(progress.task_id, progress.context_id)

        await self._session(progress, headers, follow)
        return progress.outcome()

    async def follow(
        self,
        task_id: str,
        *,
        context_id: str | None,
        on_text: Callable[[str, str], None] | None = None,
        headers: Mapping[str, str] | None = None,
        on_usage: Callable[[dict[str, int]], None] | None = None,
    ) -> A2AOutcome:
        """Where the task `task_id`, sent before (by a process that stopped), is now: read with
        `tasks/get`; a task still working is followed (`tasks/subscribe`, else `tasks/get`
        again and again) until it ends or waits for input. Nothing is sent to the agent."""
        from a2a.types import GetTaskRequest, StreamResponse, SubscribeToTaskRequest

        progress = _Progress(task_id=task_id, context_id=context_id)

        async def read(client: Any) -> None:
            task = await client.get_task(GetTaskRequest(id=task_id))
            progress.read(StreamResponse(task=task))
            if progress.state not in ("submitted", "working"):
                return
            try:
                async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                    piece = progress.read(event)
                    if piece and on_text is not None:
                        on_text(progress.state, piece)
                    usage = event_usage(event) if on_usage is not None else None
                    if usage and on_usage is not None:
                        on_usage(usage)
            except RunError:
                raise
            except Exception:
                # the task ended between the two requests (a finished task takes no
                # subscriber), or the agent cannot subscribe (the in-memory engine of
                # `agentctl serve`): ask for it until it ends, within the call's timeout
                pause = POLL_SECONDS
                while True:
                    task = await client.get_task(GetTaskRequest(id=task_id))
                    progress.read(StreamResponse(task=task))
                    if progress.state not in ("submitted", "working"):
                        return
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, MAX_POLL_SECONDS)

        await self._session(progress, headers, read)
        return progress.outcome()

    async def _session(
        self,
        progress: _Progress,
        headers: Mapping[str, str] | None,
        use: Callable[[Any], Awaitable[None]],
    ) -> None:
        """`use(client)` within the timeout, on a client of its own; after a timeout, or a
        budget of the parent's reached, the task `progress` names is canceled."""
        from a2a.client import ClientConfig, ClientFactory

        card = await self.card()
        async with _http_client(self.connection, self.timeout, headers) as http:
            client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
            try:
                async with asyncio.timeout(self.timeout):
                    await use(client)
            except (TimeoutError, RunError):
                await self._cancel(client, progress.task_id)
                raise
            finally:
                await client.close()

    async def _cancel(self, client: Any, task_id: str | None) -> None:
        from a2a.types import CancelTaskRequest

        if not task_id:
            return
        with contextlib.suppress(Exception):  # best effort: the call has already failed
            async with asyncio.timeout(CANCEL_SECONDS):
                await client.cancel_task(CancelTaskRequest(id=task_id))


class SentTasks:
    """Which task each message of one `task` call went to, recorded in the parent thread's tool
    journal (`runner.middleware.journal`) the moment the first event of the exchange names the
    task: a process that resumes the call after a crash follows that task instead of sending
    the message again. Keyed by the call's scope (the chain of `task` calls, ending with this
    one), the agent's name and the message's number within the call."""

    def __init__(self, journal: Any, thread_id: str, scope: str, name: str) -> None:
        self.journal = journal
        self.thread_id = thread_id
        self.scope = scope
        self.name = name

    def _key(self, step: int) -> str:
        return f"{self.name}#{step}"

    async def lookup(self, step: int) -> dict[str, Any] | None:
        from runner.threads.guards import AsyncToolJournal

        key = (self.thread_id, self.scope, self._key(step))
        if isinstance(self.journal, AsyncToolJournal):
            found = await self.journal.alookup(*key)
        else:
            found = await asyncio.to_thread(self.journal.lookup, *key)
        return found if isinstance(found, dict) and found.get("task_id") else None

    async def record(self, step: int, task_id: str, context_id: str | None) -> None:
        from runner.threads.guards import AsyncToolJournal

        thread_id, scope, key = self.thread_id, self.scope, self._key(step)
        value = {"task_id": task_id, "context_id": context_id}
        if isinstance(self.journal, AsyncToolJournal):
            await self.journal.arecord(thread_id, scope, key, value)
        else:
            await asyncio.to_thread(self.journal.record, thread_id, scope, key, value)


def sent_tasks(
    config: Mapping[str, Any] | None, name: str, *, running_async: bool
) -> SentTasks | None:
    """Where the running `task` call of the A2A agent `name` records its tasks; None when the
    run has no tool journal (no checkpointer, or one of an unknown type): then a call in flight
    at a crash is sent again when the run resumes."""
    from runner.middleware.journal import CHECKPOINTER_KEY, current_scope, journal_for
    from runner.threads.guards import AsyncToolJournal
    from runner.tools.runtime import TASK_CALL

    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    call = TASK_CALL.get(None)
    journal = journal_for(configurable.get(CHECKPOINTER_KEY))
    if not thread_id or call is None or journal is None:
        return None
    if isinstance(journal, AsyncToolJournal) and not running_async:
        return None  # an async saver's connection belongs to its own loop
    scope = current_scope() or str(call.id)
    return SentTasks(journal, str(thread_id), f"a2a:{scope}", name)


class A2ATaskState(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    a2a_contexts: Annotated[dict[str, str], merge_contexts]
    _a2a_pending: dict[str, Any] | None


def _last_text(messages: list[Any]) -> str:
    return str(messages[-1].text) if messages else ""


def charger(
    budget: Any, config: Mapping[str, Any] | None
) -> Callable[[dict[str, int]], None] | None:
    """What adds the tokens a remote agent reports to the parent run's budgets (`budget`: the
    parent's `BudgetMiddleware`) and raises `BudgetExceeded` at a limit; None without budgets."""
    if budget is None or not budget.budget.active:
        return None
    from langchain_core.messages import AIMessage

    configurable = (config or {}).get("configurable") or {}
    thread_id = str(configurable.get("thread_id") or "")
    turn = configurable.get("agentctl_turn") or configurable.get("run_id")

    def charge(usage: dict[str, int]) -> None:
        run = budget.budget
        tally = run.begin(thread_id, str(turn) if turn is not None else None, new_run=False)
        tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
        reply = AIMessage(
            content="",
            usage_metadata={
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        )
        run.add(tally, reply, {})  # the remote model's price is not known here
        run.check(tally)

    return charge


def a2a_subagent_graph(agent: A2AAgent, *, budget: Any = None) -> Any:
    """The compiled graph that runs `agent` as a subagent (no checkpointer: the parent's).
    `budget`: the parent's `BudgetMiddleware`, which the tokens the agent reports count
    against."""
    from langchain_core.messages import AIMessage
    from langchain_core.runnables import RunnableConfig, RunnableLambda
    from langgraph.config import get_stream_writer
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    from runner.middleware.ask_user import answer_of, ask_user_request
    from runner.tools.runtime import TASK_CALL

    name = agent.name

    def streamer() -> Callable[[str, str], None]:
        writer = get_stream_writer()

        def on_text(state: str, text: str) -> None:
            # one piece per line: a status message, then an artifact, read apart
            text = text if text.endswith("\n") else text + "\n"
            writer({"agentctl": "a2a_update", "agent": name, "state": state, "text": text})

        return on_text

    async def exchange(
        state: A2ATaskState,
        on_text: Callable[[str, str], None],
        headers: dict[str, str],
        sent: SentTasks | None,
        charge: Callable[[dict[str, int]], None] | None,
    ) -> dict[str, Any]:
        pending = state.get(PENDING) or {}
        contexts = state.get(A2A_CONTEXTS) or {}
        resume = None
        if "decisions" in pending:
            text, resume = "", pending["decisions"]
            task_id, context_id = pending.get("task_id"), pending.get("context_id")
        elif pending.get("answer") is not None:
            text, task_id = str(pending["answer"]), pending.get("task_id")
            context_id = pending.get("context_id")
        else:
            text, task_id = _last_text(state.get("messages") or []), None
            context_id = contexts.get(name)
        # the call's n-th message: 1, then one more per answer sent to the task
        step = int(pending.get("step") or 0) + 1 if pending else 1
        try:
            before = await sent.lookup(step) if sent is not None else None
            if before is not None:
                # sent by a process that stopped before the call finished: follow that task
                outcome = await agent.follow(
                    str(before["task_id"]),
                    context_id=before.get("context_id") or context_id,
                    on_text=on_text,
                    headers=headers,
                    on_usage=charge,
                )
            else:
                outcome = await agent.exchange(
                    text,
                    context_id=context_id,
                    task_id=task_id,
                    on_text=on_text,
                    resume=resume,
                    headers=headers,
                    on_task=functools.partial(sent.record, step) if sent is not None else None,
                    on_usage=charge,
                )
        except RunError:
            raise  # a budget of the parent's reached: the parent run stops
        except TimeoutError:
            return _answer(f"Error: the A2A agent {name!r} did not finish in {agent.timeout:g} s")
        except Exception as exc:  # an unreachable or failing agent is the model's to handle
            return _answer(f"Error: the A2A agent {name!r} failed: {_reason(exc)}")
        update: dict[str, Any] = {}
        if outcome.context_id:
            update[A2A_CONTEXTS] = {name: outcome.context_id}
        if outcome.state in WAITING_STATES:
            update[PENDING] = {
                "step": step,
                "task_id": outcome.task_id,
                "context_id": outcome.context_id,
                "state": outcome.state,
                "question": outcome.text,
                "request": outcome.request,
            }
            return update
        if outcome.state in FAILED_STATES:
            detail = f": {outcome.text}" if outcome.text else ""
            return {**update, **_answer(f"Error: the A2A task was {outcome.state}{detail}")}
        return {**update, **_answer(outcome.text)}

    def _answer(text: str) -> dict[str, Any]:
        return {"messages": [AIMessage(content=text, name=name)], PENDING: None}

    async def aexchange(state: A2ATaskState, config: RunnableConfig) -> dict[str, Any]:
        sent = sent_tasks(config, name, running_async=True)
        charge = charger(budget, config)
        return await exchange(state, streamer(), trace_headers(config), sent, charge)

    def sync_exchange(state: A2ATaskState, config: RunnableConfig) -> dict[str, Any]:
        on_text, headers = streamer(), trace_headers(config)
        sent = sent_tasks(config, name, running_async=False)
        charge = charger(budget, config)
        return run_sync(lambda: exchange(state, on_text, headers, sent, charge))

    def ask(state: A2ATaskState) -> dict[str, Any]:
        pending = dict(state.get(PENDING) or {})
        request = pending.get("request")
        if isinstance(request, dict) and is_approval_request(request):
            # calls of the remote agent wait for approval: the parent's approval, whose
            # decisions go back as they are
            decisions = interrupt(_from_remote(request, name))
            return {PENDING: {**pending, "decisions": decisions}}
        call = TASK_CALL.get(None)
        asked = pending.get("question") or "(no question given)"
        need = "authorization" if pending.get("state") == "auth-required" else "input"
        question = f"The A2A agent {name!r} needs {need}: {asked}"
        resume = interrupt(ask_user_request(question, None, call.id if call else None))
        return {PENDING: {**pending, "answer": answer_of(resume)}}

    def after_exchange(state: A2ATaskState) -> str:
        pending = state.get(PENDING)
        answered = pending and (pending.get("answer") is not None or "decisions" in pending)
        return "ask" if pending and not answered else END

    graph = StateGraph(A2ATaskState)
    graph.add_node("exchange", RunnableLambda(sync_exchange, afunc=aexchange))
    graph.add_node("ask", ask)
    graph.add_edge(START, "exchange")
    graph.add_conditional_edges("exchange", after_exchange, ["ask", END])
    graph.add_edge("ask", "exchange")
    return graph.compile(name=name)


def _from_remote(request: dict[str, Any], name: str) -> dict[str, Any]:
    """An approval request of the remote agent, each call's description naming the agent."""
    calls = []
    for call in request.get("action_requests") or []:
        said = call.get("description") if isinstance(call, dict) else None
        where = f"(asked by the A2A agent {name!r})"
        calls.append({**call, "description": f"{said}\n{where}" if said else where})
    return {**request, "action_requests": calls}


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


PROBE_SECONDS = 15.0
"""How long `agentctl inspect --probe` waits for an A2A agent."""


async def probe(connection: A2AConnection, *, timeout: float = PROBE_SECONDS) -> dict[str, Any]:
    """Fetch the agent card, then ask the agent for a task that does not exist: an A2A error
    answer ("task not found") shows the agent answers and takes the credentials, running
    nothing. Returns what the card says; raises `RuntimeError` saying what failed."""
    from a2a.client import A2AClientError, ClientConfig, ClientFactory
    from a2a.types import GetTaskRequest
    from a2a.utils.errors import A2AError

    try:
        card = await fetch_card(connection, timeout=timeout)
    except Exception as exc:
        raise RuntimeError(f"could not fetch the agent card: {exc}") from None
    found = {
        "name": card.name,
        "description": card.description,
        "url": card.supported_interfaces[0].url if card.supported_interfaces else None,
        "streaming": card.capabilities.streaming,
        "skills": [skill.name for skill in card.skills],
    }
    async with _http_client(connection, timeout) as http:
        try:
            client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        except ValueError as exc:  # no transport in common
            raise RuntimeError(f"the agent card offers no usable interface: {exc}") from None
        try:
            async with asyncio.timeout(timeout):
                await client.get_task(GetTaskRequest(id="agentctl-probe-no-such-task"))
        except A2AClientError as exc:
            raise RuntimeError(f"the agent at {found['url']} did not answer: {exc}") from None
        except A2AError:
            pass  # an error answer from the agent: it is there and let us in
        except TimeoutError:
            raise RuntimeError(
                f"the agent at {found['url']} did not answer in {timeout:g} s"
            ) from None
        finally:
            await client.close()
    return found


def probe_sync(connection: A2AConnection, *, timeout: float = PROBE_SECONDS) -> dict[str, Any]:
    """`probe` from synchronous code."""
    return run_sync(lambda: probe(connection, timeout=timeout))
