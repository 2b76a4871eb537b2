"""OpenTelemetry traces of agent runs, after the OpenTelemetry GenAI semantic conventions.

One trace per run (one turn on a thread): an `invoke_agent` root span, under it a `chat` span per
model call and an `execute_tool` span per tool call; a `task` call's span holds an `invoke_agent`
span of the subagent, which holds that subagent's own model and tool spans. Parallel subagents
nest correctly because the spans follow LangChain's run tree (each callback names its parent
run), not a context variable that threads and asyncio tasks would have to carry.

Across hosts: a remote subagent's `task` call sends its span's `traceparent` with the remote run
(`SpanRecorder.trace_headers`), and a run whose metadata carries one (as `agentctl serve` gives
it the run's config) starts its trace under it, so the remote agent's spans join the caller's
trace.

The spans are made by a LangChain callback handler that `enable` adds to every run started in the
process (a configure hook, as LangChain's own tracers are added). When tracing is off nothing is
registered: runs pay nothing for it.

What goes into spans: model names, token counts, tool names and call ids, agent names, thread
ids, error types. Prompts, replies, tool arguments and results (and error messages, which often
quote them) only with `content=True` (`--otel-content`), and even then never a secret: the values
of environment variables that agent files interpolated (`${VAR}`) and of variables whose names
say they hold a key, token, secret or password are replaced by `***`.

The SDK and the OTLP/HTTP exporter come with the `otel` extra (`pip install 'agentctl[otel]'`);
the exporter reads the standard `OTEL_EXPORTER_OTLP_*` variables (endpoint, headers, timeout).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from runner.errors import ResolutionError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "SpanRecorder",
    "Telemetry",
    "enable",
]


INSTALL_HINT = "pip install 'agentctl[otel]'"
MASK = "***"

# GenAI semantic-convention attribute names (opentelemetry semconv, gen_ai.*).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
INTERRUPTED = "agentctl.interrupted"
"""Set on the spans a run left to wait for an approval: paused, not failed."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
_MIN_SECRET = 6  # shorter values ("1", "true") would mask ordinary words


# --------------------------------------------------------------------------- secrets


class Masker:
    """Replaces secret values in text given to spans. The secrets are looked up when text is
    masked, so agent files loaded after tracing started (a server builds on first use) count."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = os.environ if env is None else env
        self._key: tuple[int, int] | None = None
        self._secrets: list[str] = []

    def secrets(self) -> list[str]:
        from runner.load.source import INTERPOLATED

        key = (len(INTERPOLATED), len(self._env))
        if key != self._key:
            values = set(INTERPOLATED)
            values.update(v for n, v in self._env.items() if _SECRET_NAME.search(n))
            # longest first, so a secret that contains another is masked whole
            self._secrets = sorted((v for v in values if len(v) >= _MIN_SECRET), key=len)[::-1]
            self._key = key
        return self._secrets

    def __call__(self, text: str) -> str:
        for secret in self.secrets():
            if secret in text:
                text = text.replace(secret, MASK)
        return text


# --------------------------------------------------------------------------- spans


@dataclass
class _Run:
    """A LangChain run we track: its span when it has one, else the nearest ancestor's."""

    span: Span | None
    owner: bool  # this run opened `span` (and ends it)
    subagent: str | None = None  # for a `task` tool run: the subagent it starts


class SpanRecorder(BaseCallbackHandler):
    """A LangChain callback handler that turns runs into spans (see the module docstring).

    LangChain calls it inline (`run_inline`), in the thread or task of the run, so a parent's
    start always comes before its children's."""

    run_inline = True

    def __init__(self, tracer: Tracer, *, content: bool = False, mask: Masker | None = None):
        self.tracer = tracer
        self.content = content
        self.mask = mask or Masker()
        self.closed = False
        self._runs: dict[UUID, _Run] = {}
        self._lock = threading.Lock()

    def span_for(self, run_id: UUID) -> Span | None:
        """The span a LangChain run is in (its own, or its agent's for an inner runnable): what
        a call to another host passes on as the trace context (`runner.tools.a2a`)."""
        run = self._parent(run_id)
        return run.span if run is not None else None

    # ----------------------------------------------------------------------- bookkeeping

    def _parent(self, parent_run_id: UUID | None) -> _Run | None:
        if parent_run_id is None:
            return None
        with self._lock:
            return self._runs.get(parent_run_id)

    def _start(
        self,
        name: str,
        parent: _Run | None,
        attributes: dict[str, Any],
        *,
        client: bool = False,
        remote_parent: Any = None,
    ) -> Span:
        from opentelemetry import trace

        context = trace.set_span_in_context(parent.span) if parent and parent.span else None
        if context is None and remote_parent is not None:
            context = remote_parent
        kind = trace.SpanKind.CLIENT if client else trace.SpanKind.INTERNAL
        return self.tracer.start_span(name, context=context, kind=kind, attributes=attributes)

    def _track(self, run_id: UUID, run: _Run) -> None:
        with self._lock:
            self._runs[run_id] = run

    def _finish(self, run_id: UUID, error: BaseException | None = None) -> _Run | None:
        with self._lock:
            run = self._runs.pop(run_id, None)
        if run is None or run.span is None:
            return run
        if not run.owner:
            # a graph node paused for approval: the agent span it belongs to waits too
            if error is not None and _is_interrupt(error) and run.span.is_recording():
                run.span.set_attribute(INTERRUPTED, True)
            return run
        if error is not None:
            self._fail(run.span, error)
        run.span.end()
        return run

    def _fail(self, span: Span, error: BaseException) -> None:
        from opentelemetry.trace import Status, StatusCode

        if _is_interrupt(error):  # waits for an approval: the run goes on when answered
            span.set_attribute(INTERRUPTED, True)
            return
        kind = type(error).__qualname__
        span.set_attribute(ERROR_TYPE, kind)
        described = self.mask(f"{kind}: {error}"[:2000]) if self.content else kind
        span.set_status(Status(StatusCode.ERROR, described))

    def _text(self, value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return self.mask(text)

    def end_open(self) -> None:
        """End the spans of runs that never finished (the process stops): they are exported,
        marked as cut off."""
        with self._lock:
            runs, self._runs = list(self._runs.values()), {}
        for run in runs:
            if run.owner and run.span is not None:
                run.span.set_attribute(ERROR_TYPE, "Cancelled")
                run.span.end()

    # ----------------------------------------------------------------------- chains (agents)

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if self.closed:
            return
        parent = self._parent(parent_run_id)
        thread_id = (metadata or {}).get("thread_id")
        if parent_run_id is None:
            agent = str(kwargs.get("name") or (metadata or {}).get("agentctl_agent") or "agent")
        elif parent is not None and parent.subagent is not None and parent.owner:
            agent = parent.subagent  # the graph a `task` call runs
        else:
            # a graph node or any other inner runnable: its children belong to the same span
            self._track(run_id, _Run(parent.span if parent else None, False))
            return
        attributes: dict[str, Any] = {OPERATION: "invoke_agent", AGENT_NAME: agent}
        if thread_id:
            attributes[CONVERSATION_ID] = str(thread_id)
        if self.content:
            sent = _messages_of(inputs)  # the turn's new message (none when resuming)
            if sent:
                attributes[INPUT_MESSAGES] = self._text(_split_system(sent)[1])
        remote_parent = _propagated(metadata) if parent_run_id is None else None
        span = self._start(f"invoke_agent {agent}", parent, attributes, remote_parent=remote_parent)
        self._track(run_id, _Run(span, True))

    def trace_headers(self, run_id: UUID) -> dict[str, str]:
        """The W3C trace context (`traceparent`) of a run's span, for a call that continues the
        trace elsewhere: a remote subagent's run (`runner.middleware.remote_subagents`)."""
        from opentelemetry import propagate, trace

        with self._lock:
            run = self._runs.get(run_id)
        if run is None or run.span is None:
            return {}
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(run.span))
        return carrier

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if self.content:
            with self._lock:
                run = self._runs.get(run_id)
            answer = [m for m in _messages_of(outputs) if m.type == "ai"][-1:]
            if run is not None and run.owner and run.span is not None and answer:
                reply = [{"role": "assistant", "parts": _parts(answer[0])}]
                run.span.set_attribute(OUTPUT_MESSAGES, self._text(reply))
        self._finish(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._finish(run_id, error)

    # ----------------------------------------------------------------------- model calls

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Sequence[Sequence[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        invocation_params: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if self.closed:
            return
        metadata = metadata or {}
        params = invocation_params or {}
        model = str(
            metadata.get("ls_model_name")
            or params.get("model")
            or params.get("model_name")
            or params.get("_type")
            or "unknown"
        )
        attributes: dict[str, Any] = {OPERATION: "chat", REQUEST_MODEL: model}
        provider = metadata.get("ls_provider")
        if provider:
            attributes[PROVIDER] = str(provider)
        for key, name in (
            ("ls_temperature", "gen_ai.request.temperature"),
            ("ls_max_tokens", "gen_ai.request.max_tokens"),
        ):
            if isinstance(metadata.get(key), int | float):
                attributes[name] = metadata[key]
        if self.content and messages:
            system, rest = _split_system(messages[0])
            if system:
                attributes[SYSTEM_INSTRUCTIONS] = self._text(system)
            attributes[INPUT_MESSAGES] = self._text(rest)
        span = self._start(f"chat {model}", self._parent(parent_run_id), attributes, client=True)
        self._track(run_id, _Run(span, True))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            run = self._runs.get(run_id)
        if run is not None and run.span is not None:
            _describe_reply(run.span, response, self._text if self.content else None)
        self._finish(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._finish(run_id, error)

    # ----------------------------------------------------------------------- tool calls

    def on_tool_start(
        self,
        serialized: Mapping[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        inputs: Mapping[str, Any] | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if self.closed:
            return
        serialized = serialized or {}
        name = str(serialized.get("name") or kwargs.get("name") or "tool")
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_TYPE: "function",
        }
        if tool_call_id:
            attributes[TOOL_CALL_ID] = tool_call_id
        if serialized.get("description"):
            attributes[TOOL_DESCRIPTION] = self.mask(str(serialized["description"])[:1000])
        subagent = None
        if name == "task" and isinstance(inputs, Mapping) and inputs.get("subagent_type"):
            subagent = str(inputs["subagent_type"])
        if self.content:
            shown = {k: v for k, v in (inputs or {}).items() if k != "runtime"}
            attributes[TOOL_ARGUMENTS] = self._text(shown if inputs is not None else input_str)
        span = self._start(f"execute_tool {name}", self._parent(parent_run_id), attributes)
        self._track(run_id, _Run(span, True, subagent=subagent))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            run = self._runs.get(run_id)
        if run is not None and run.span is not None:
            message = _tool_message(output)
            if getattr(message, "status", None) == "error":
                from opentelemetry.trace import Status, StatusCode

                run.span.set_attribute(ERROR_TYPE, "tool_error")
                text = _content_text(message) if self.content else "tool_error"
                run.span.set_status(Status(StatusCode.ERROR, self.mask(text[:2000])))
            if self.content:
                result = _content_text(message) if message is not None else output
                run.span.set_attribute(TOOL_RESULT, self._text(result))
        self._finish(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._finish(run_id, error)


PROPAGATED = ("traceparent", "tracestate")
"""The W3C trace context keys a run's metadata may carry from the caller (a remote subagent's
parent on another host): its root span then continues the caller's trace."""


def _propagated(metadata: Mapping[str, Any] | None) -> Any:
    """The OpenTelemetry context a run's metadata carries from its caller, or None."""
    carrier = {k: str(v) for k in PROPAGATED if (v := (metadata or {}).get(k))}
    if "traceparent" not in carrier:
        return None
    from opentelemetry import propagate

    return propagate.extract(carrier)


def _is_interrupt(error: BaseException) -> bool:
    try:
        from langgraph.errors import GraphBubbleUp
    except ImportError:  # pragma: no cover - langgraph is a dependency
        return False
    return isinstance(error, GraphBubbleUp)


_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _parts(message: Any) -> list[dict[str, Any]]:
    """A LangChain message as GenAI semantic-convention parts."""
    parts: list[dict[str, Any]] = []
    if message.type == "tool":
        return [
            {
                "type": "tool_call_response",
                "id": getattr(message, "tool_call_id", None),
                "response": _content_text(message),
            }
        ]
    text = _content_text(message)
    if text:
        parts.append({"type": "text", "content": text})
    for call in getattr(message, "tool_calls", None) or []:
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": call.get("name"),
                "arguments": call.get("args"),
            }
        )
    return parts


def _messages_of(value: Any) -> list[Any]:
    """The LangChain messages in a graph's input or output state."""
    messages = value.get("messages") if isinstance(value, Mapping) else None
    if not isinstance(messages, list):
        return []
    return [m for m in messages if getattr(m, "type", None) in _ROLES]


def _split_system(messages: Sequence[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    system: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for message in messages:
        if message.type == "system":
            system.extend(_parts(message))
        else:
            rest.append({"role": _ROLES.get(message.type, message.type), "parts": _parts(message)})
    return system, rest


def _content_text(message: Any) -> str:
    from runner.threads.transcripts import text_of  # the text blocks of a message's content

    return text_of(getattr(message, "content", message))


def _tool_message(output: Any) -> Any:
    """The ToolMessage in a tool's output (a `task` call returns a Command holding one)."""
    if getattr(output, "type", None) == "tool":
        return output
    update = getattr(output, "update", None)
    if isinstance(update, Mapping):
        for message in update.get("messages") or []:
            if getattr(message, "type", None) == "tool":
                return message
    return None


def _describe_reply(span: Span, response: Any, text: Any) -> None:
    """Usage, response model, finish reason (and the reply itself when `text` masks content)."""
    generations = [g for batch in getattr(response, "generations", []) for g in batch]
    message = getattr(generations[0], "message", None) if generations else None
    if message is None:
        return
    usage = getattr(message, "usage_metadata", None) or {}
    if "input_tokens" in usage:
        span.set_attribute(INPUT_TOKENS, int(usage["input_tokens"]))
    if "output_tokens" in usage:
        span.set_attribute(OUTPUT_TOKENS, int(usage["output_tokens"]))
    meta = getattr(message, "response_metadata", None) or {}
    model = meta.get("model_name") or meta.get("model")
    if model:
        span.set_attribute(RESPONSE_MODEL, str(model))
    if meta.get("id"):
        span.set_attribute(RESPONSE_ID, str(meta["id"]))
    reason = meta.get("finish_reason") or meta.get("stop_reason") or meta.get("done_reason")
    if not reason:
        reason = "tool_call" if getattr(message, "tool_calls", None) else "stop"
    span.set_attribute(FINISH_REASONS, [str(reason)])
    if text is not None:
        output = [{"role": "assistant", "parts": _parts(message), "finish_reason": str(reason)}]
        span.set_attribute(OUTPUT_MESSAGES, text(output))


# --------------------------------------------------------------------------- switching on


@dataclass
class Telemetry:
    """Tracing switched on for this process; `shutdown()` exports what is left and stops."""

    provider: TracerProvider
    recorder: SpanRecorder
    _hook: Any = None

    def flush(self) -> None:
        self.provider.force_flush()

    def shutdown(self, *, wait: float | None = None) -> bool:
        """Stop tracing and export the spans left. With `wait`, give the export that many
        seconds and return False if it has not finished (an unreachable collector: the SDK
        retries for up to its timeout, and a command should not hang on that)."""
        self.recorder.closed = True
        self.recorder.end_open()
        _uninstall(self._hook)
        if wait is None:
            self.provider.shutdown()
            return True
        exporting = threading.Thread(target=self.provider.shutdown, daemon=True)
        exporting.start()
        exporting.join(wait)
        return not exporting.is_alive()


def enable(
    *,
    content: bool = False,
    exporter: SpanExporter | None = None,
    batch: bool = True,
) -> Telemetry:
    """Trace every agent run of this process from now on (until `shutdown()`).

    `exporter` defaults to OTLP over HTTP/protobuf configured by the `OTEL_EXPORTER_OTLP_*`
    variables (default endpoint http://localhost:4318/v1/traces); `batch=False` exports each
    span as it ends (tests). `content=True` adds prompts, replies, tool arguments and results,
    secrets masked. Raises ResolutionError when the `otel` extra is not installed."""
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
    except ImportError as exc:
        raise ResolutionError(
            f"OpenTelemetry tracing needs the `otel` extra ({exc.name} is not installed): "
            f"{INSTALL_HINT}"
        ) from None
    from runner import __version__

    attributes: dict[str, Any] = {SERVICE_VERSION: __version__}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attributes[SERVICE_NAME] = "agentctl"
    provider = TracerProvider(resource=Resource.create(attributes))
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    recorder = SpanRecorder(provider.get_tracer("agentctl", __version__), content=content)
    return Telemetry(provider, recorder, _install(recorder))


def _install(recorder: Any) -> Any:
    """Add `recorder` to every LangChain run from now on, in any thread or task: a configure
    hook whose variable holds it by default."""
    from langchain_core.tracers.context import register_configure_hook

    variable: ContextVar[Any] = ContextVar("agentctl_otel", default=recorder)
    register_configure_hook(variable, inheritable=True)
    return variable


def _uninstall(variable: Any) -> None:
    from langchain_core.tracers import context

    hooks = getattr(context, "_configure_hooks", None)
    if hooks is None:  # the recorder is closed, so it stays registered but does nothing
        return
    hooks[:] = [hook for hook in hooks if hook[0] is not variable]
