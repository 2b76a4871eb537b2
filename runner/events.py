"""What a run reports, as typed events: the one stream the CLI renders and scripts consume.

Every event names the `agent` it came from: the main agent's name, or a subagent's. Events from a
subagent also carry `parent_id`, the id of the `task` tool call that started it, so a renderer can
nest a subagent's work under that call. In a workflow run, `StepStart` and `StepEnd` frame each
step, and every event from inside a step carries `step`, the step's id (the agent of an agent
step is named by its key in the workflow). `to_dict()` is the `--output jsonl` line; its keys are a
promise to scripts: `type` and `agent` always, and per type the fields documented below.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

SUMMARY_TAG = "agentctl:summary"
"""The run tag of the summarizer's own model calls: their words are not the agent's, so the
event stream and the cassette recorder leave them out."""

SUMMARY_KEY = "agentctl_summary"
"""The `additional_kwargs` key marking the message that summarizes the messages it replaced (see
`runner.middleware.summarization`)."""


def is_summary(message: Any) -> bool:
    """Whether `message` is a conversation summary (a system message; older versions of agentctl
    made it a user message)."""
    return bool((getattr(message, "additional_kwargs", None) or {}).get(SUMMARY_KEY))


DENIED_KEY = "agentctl_denied"
"""The `response_metadata` key of the ToolMessage that answers a denied call (`{rule, tool,
args}`, see `runner.middleware.permissions`): the run reports a `Denied` event from it."""


@dataclass(frozen=True, kw_only=True)
class RunEvent:
    type: ClassVar[str] = "event"
    agent: str
    parent_id: str | None = None
    step: str | None = None
    """In a workflow run: the id of the step the event came from."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for optional in ("parent_id", "step"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return {"type": self.type, **data}


@dataclass(frozen=True, kw_only=True)
class Start(RunEvent):
    """A turn began on `thread_id` (first event of every turn, so a script can resume a thread
    even when the run never finishes)."""

    type: ClassVar[str] = "start"
    thread_id: str


@dataclass(frozen=True, kw_only=True)
class TextDelta(RunEvent):
    """A piece of the model's text as it streams."""

    type: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True, kw_only=True)
class ToolCall(RunEvent):
    """The model asked for a tool call."""

    type: ClassVar[str] = "tool_call"
    name: str
    args: dict[str, Any]
    id: str


@dataclass(frozen=True, kw_only=True)
class ToolResult(RunEvent):
    """A tool call finished; `status` is "success" or "error"."""

    type: ClassVar[str] = "tool_result"
    name: str
    id: str
    content: str
    status: str = "success"


@dataclass(frozen=True, kw_only=True)
class Denied(RunEvent):
    """A `permissions.deny` rule refused a tool call: it did not run, and the model got the
    error that the `tool_result` event after this one carries. `rule` is where the rule is
    written (`permissions.deny[0]`; a subagent's own rules add `of 'name'`)."""

    type: ClassVar[str] = "denied"
    name: str
    id: str
    args: dict[str, Any]
    rule: str


@dataclass(frozen=True, kw_only=True)
class TodosUpdate(RunEvent):
    """The agent's todo list changed: items with `content`, `status` and, when given, `id`."""

    type: ClassVar[str] = "todos"
    todos: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class Action:
    """A tool call waiting for a human decision."""

    name: str
    args: dict[str, Any]
    id: str | None = None
    description: str | None = None
    allowed_decisions: list[str] = field(default_factory=lambda: ["approve", "edit", "reject"])
    agent: str | None = None
    """The agent that wants to make the call (a subagent's name, or the main agent's)."""


@dataclass(frozen=True, kw_only=True)
class Interrupt(RunEvent):
    """The run paused for approval; answer with `agentctl run --thread ID --approve` (or
    `--reject`, `--edit`, `--decisions`), or `Session.stream(thread_id=..., decisions=[...])`."""

    type: ClassVar[str] = "interrupt"
    thread_id: str
    actions: list[Action]


@dataclass(frozen=True, kw_only=True)
class ModelCall(RunEvent):
    """The model replied: one event per model call, whether or not the provider reports token
    usage. `model` is the model that answered (a fallback's name when one took over),
    `finish_reason` why the reply stopped, as the provider says it (`stop`, `tool_calls`,
    `length`, `end_turn`, `max_tokens`, ...); either is None when the provider does not say."""

    type: ClassVar[str] = "model_call"
    model: str | None = None
    finish_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Usage(RunEvent):
    """Tokens used by one model call; `cost` is its cost in US dollars, present only when the
    spec gives the model's price (`model.price`)."""

    type: ClassVar[str] = "usage"
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cost: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if self.cost is None:
            data.pop("cost")
        return data


@dataclass(frozen=True, kw_only=True)
class Final(RunEvent):
    """The run finished: the last answer, and the structured response when the spec asks for one."""

    type: ClassVar[str] = "final"
    thread_id: str
    content: str
    structured_response: Any = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if self.structured_response is None:
            data.pop("structured_response")
        return data


@dataclass(frozen=True, kw_only=True)
class StepStart(RunEvent):
    """A workflow step began (`kind`: agent, tool, approval, ask, route, choose, loop, parallel,
    map). A step that waited for a person, or was cut off by a crash, starts again when the run
    goes on."""

    type: ClassVar[str] = "step_start"
    step: str
    kind: str


@dataclass(frozen=True, kw_only=True)
class StepEnd(RunEvent):
    """A workflow step ended: `status` is `done`, `waiting` (for a person: the run stops with
    an `interrupt` event) or `failed`; `seconds` its time; `output` what it wrote (the answer,
    the tool's result, the branch taken), when it wrote something."""

    type: ClassVar[str] = "step_end"
    step: str
    status: str
    seconds: float
    output: Any = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if self.output is None:
            data.pop("output")
        return data


@dataclass(frozen=True, kw_only=True)
class RunWarning(RunEvent):
    """Something the user should know that did not stop the run (a reply cut off by the length
    limit, an empty reply, execute running without a sandbox...). `code` is a stable, short
    machine-readable name (`truncated_reply`, `empty_reply`, `no_sandbox`, ...); `message` is
    the sentence for people."""

    type: ClassVar[str] = "warning"
    code: str
    message: str


@dataclass(frozen=True, kw_only=True)
class Error(RunEvent):
    """The run failed; `kind` is the error class name, `message` says what to fix."""

    type: ClassVar[str] = "error"
    message: str
    kind: str = "RunError"
    thread_id: str | None = None


def emit_warning(stream_writer: Any, code: str, message: str) -> None:
    """Report a `RunWarning` from inside the graph (a middleware or a tool).

    It travels on LangGraph's "custom" stream as `{"agentctl": "warning", ...}`, which `Session`
    turns into a `RunWarning` naming the agent it came from; `stream_writer` is
    `runtime.stream_writer` (None or a no-op outside a streamed run, when nobody listens).
    """
    if stream_writer is not None:
        stream_writer({"agentctl": "warning", "code": code, "message": message})


EVENT_TYPES: tuple[type[RunEvent], ...] = (
    Start,
    TextDelta,
    ToolCall,
    ToolResult,
    Denied,
    TodosUpdate,
    Interrupt,
    ModelCall,
    Usage,
    Final,
    RunWarning,
    Error,
    StepStart,
    StepEnd,
)

__all__ = [
    "DENIED_KEY",
    "EVENT_TYPES",
    "SUMMARY_KEY",
    "SUMMARY_TAG",
    "Action",
    "Denied",
    "Error",
    "Final",
    "Interrupt",
    "ModelCall",
    "RunEvent",
    "RunWarning",
    "Start",
    "StepEnd",
    "StepStart",
    "TextDelta",
    "TodosUpdate",
    "ToolCall",
    "ToolResult",
    "Usage",
    "emit_warning",
    "is_summary",
]
