"""Summarize older messages when the conversation nears the context limit.

When the conversation passes the trigger (default: 85% of the model's context window when it is
known, else 170,000 tokens), the older messages are summarized by the model into a structured
summary (intent, what was done and produced, next steps) and replaced by it; the most recent
messages are kept (default: 10% of the window, else 6 messages), never splitting an AI tool call
from its ToolMessages. Before anything is replaced, the full text of the replaced messages is
appended to `<history_dir><thread id>.md` on the agent's backend, and the summary says where.

The summary is not the user speaking (seed 004 shows it as a system message): it is kept in the
conversation as a `SystemMessage` marked `agentctl_summary`, where the replaced messages were, and
an exported thread shows it as the summary. On every model call it is sent as context: appended
to the system prompt, with the kept messages after it (when those start with the agent's own
turn, a one-line user turn asking it to continue comes first, since providers expect a
conversation to open with the user).

It runs inside the model call (`wrap_model_call`), not as a graph node of its own, and counts
tokens (4 characters each) once per message, caching the count by message id, and the total of
the conversation as it was at the last call, so a long conversation pays neither a recount nor a
re-sum on every step: only its new messages are counted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, TypeGuard

from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    get_buffer_string,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from runner.backends import Backend, BackendError, BackendProvider
from runner.events import SUMMARY_KEY, SUMMARY_TAG, is_summary
from runner.middleware.prompt import append_to_system_message

log = logging.getLogger("agentctl")

CHARS_PER_TOKEN = 4
DEFAULT_TRIGGER_FRACTION = 0.85
DEFAULT_TRIGGER_TOKENS = 170_000
DEFAULT_KEEP_FRACTION = 0.10
DEFAULT_KEEP_MESSAGES = 6
MAX_SUMMARIZER_INPUT_TOKENS = 100_000
"""The conversation the summarizer reads, in tokens, when its model's context window is unknown."""
SUMMARIZER_INPUT_SHARE = 0.6
"""With a known window, the share of it the conversation may take in the summarizer's request:
the rest holds the instructions, the summary it writes, and the error of counting 4 characters
per token (real tokenizers often need more tokens for code or other languages)."""
_CACHE_LIMIT = 100_000

Threshold = tuple[str, float]

SUMMARY_PROMPT = """\
You are compressing the earlier part of a conversation between a user and an AI agent, so the
agent can go on working with less context. It will not see these messages again: keep every
fact it needs. Write Markdown with exactly these sections:

## Intent
What the user wants overall, with the constraints and preferences they stated.

## Done and produced
Decisions made and why; files written or changed, with their paths; findings, numbers and
sources that matter; approaches that failed, so they are not tried again.

## Next steps
What remains to be done, in order.

<conversation>
{conversation}
</conversation>"""

SUMMARY_MESSAGE = """\
## Summary of the conversation so far

{summary}

(The {count} messages this replaces are saved in full in {path}; read it with read_file if you
need a detail the summary lacks.)"""


CONTINUE_AFTER_SUMMARY = "(Continue from the summary of the conversation so far.)"
"""The user turn sent, in what the model is sent only, when the messages kept after a summary
start with the agent's own turn."""


def summary_as_context(request: ModelRequest) -> ModelRequest:
    """`request` with a summary at the head of its messages moved into its system message: the
    model reads it as context, not as something the user said."""
    messages = request.messages
    if not messages or not is_summary(messages[0]):
        return request
    system = request.system_message or SystemMessage(content="")
    rest = list(messages[1:])
    if not rest or rest[0].type != "human":
        rest.insert(0, HumanMessage(content=CONTINUE_AFTER_SUMMARY))
    return request.override(
        system_message=append_to_system_message(system, messages[0].text), messages=rest
    )


IMAGE_TOKENS = 1_600
"""What one image counts for: about what a provider charges for a large one (Anthropic: width
x height / 750, at most about 1,600), not the length of its base64 text."""


def approx_tokens(message: BaseMessage) -> int:
    content = message.content
    if type(content) is str:  # the usual content, first
        size = len(content)
    else:
        images = 0
        if isinstance(content, list) and any(_is_image(block) for block in content):
            images = sum(1 for block in content if _is_image(block))
            content = [block for block in content if not _is_image(block)]
        text = content if isinstance(content, str) else json_text(content)
        size = len(text) + images * IMAGE_TOKENS * CHARS_PER_TOKEN
    if _is_ai(message) and message.tool_calls:
        size += len(json_text([c["args"] for c in message.tool_calls]))
    return size // CHARS_PER_TOKEN + 4


_JSON = json.JSONEncoder(default=str)
_ENCODE: Callable[[Any, int], Sequence[str]] | None = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None,  # no circular check: a circular value fails, and the slow path then says why
        _JSON.default,
        encode_basestring_ascii,
        _JSON.indent,
        _JSON.key_separator,
        _JSON.item_separator,
        _JSON.sort_keys,
        _JSON.skipkeys,
        _JSON.allow_nan,
    )
)


def json_text(value: Any) -> str:
    """`json.dumps(value, default=str)`. It runs for every new message, and `json` makes its C
    encoder anew for each value (about 15,000 instructions); this one is made once. Without
    the encoder's check for circular values (its memo would be shared by every call), so any
    failure, a circular value among them, is left to `json`'s own encoder to report."""
    if _ENCODE is not None:
        try:
            return "".join(_ENCODE(value, 0))
        except Exception:
            pass  # json's own encoder below raises it as it does
    return _JSON.encode(value)


def _is_ai(message: object) -> TypeGuard[AIMessage]:
    """`isinstance(message, AIMessage)`, the two usual classes told by identity first: on a
    pydantic class `isinstance` costs about a microsecond when the answer is no (every tool
    result)."""
    kind = type(message)
    return kind is AIMessage or (kind is not ToolMessage and isinstance(message, AIMessage))


def _is_image(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") in ("image", "image_url")


def _size(message: BaseMessage) -> tuple[int, tuple[int, ...]]:
    """A cheap signature of a message's size: its content's length and its tool-call argument
    lengths (enough to tell a large argument from its short reference)."""
    content = message.content
    # Only an AI message's calls are counted (`approx_tokens`); asking another message for
    # `tool_calls` raises inside pydantic, which costs more than the rest of the count.
    if not _is_ai(message) or not message.tool_calls:
        return len(content), ()
    return len(content), tuple(
        sum(len(v) for v in call["args"].values() if isinstance(v, str))
        for call in message.tool_calls
    )


def cut_point(
    messages: Sequence[BaseMessage],
    keep: Threshold,
    window: int | None,
    count: Callable[[BaseMessage], int],
) -> int:
    """The index where the kept tail starts, moved back so it never starts with a ToolMessage
    (which would separate the results from the AI message that asked for them)."""
    kind, amount = keep
    if kind == "messages":
        cut = max(len(messages) - int(amount), 0)
    else:
        budget = int(amount * window) if kind == "fraction" and window else int(amount)
        total, cut = 0, len(messages)
        while cut > 0 and total + count(messages[cut - 1]) <= budget:
            cut -= 1
            total += count(messages[cut])
    while 0 < cut < len(messages) and messages[cut].type == "tool":
        cut -= 1
    return cut


def summarizer_input_tokens(window: int | None) -> int:
    """How many tokens of conversation the summarizer is given: a share of its model's context
    window when that is known, so the summarization request itself fits it."""
    if not window:
        return MAX_SUMMARIZER_INPUT_TOKENS
    instructions = len(SUMMARY_PROMPT) // CHARS_PER_TOKEN
    return max(int(window * SUMMARIZER_INPUT_SHARE) - instructions, 256)


def _trim_for_summarizer(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    head = max_chars // 4
    return (
        text[:head]
        + "\n\n[... middle of the conversation omitted ...]\n\n"
        + text[-(max_chars - head) :]
    )


class SummarizationMiddleware(AgentMiddleware):
    def __init__(
        self,
        *,
        model: Any,
        provider: BackendProvider,
        trigger: Threshold,
        keep: Threshold,
        context_window: int | None,
        history_dir: str = "/conversation_history/",
        summarizer_window: int | None = None,
    ) -> None:
        """`summarizer_window`: the context window of the summarizer's model when it is not the
        agent's (the agent's `context_window` otherwise); the summarizer's input is cut to fit."""
        super().__init__()
        self.model = model
        self.provider = provider
        self.trigger = trigger
        self.keep = keep
        self.window = context_window
        self.summarizer_input_tokens = summarizer_input_tokens(summarizer_window or context_window)
        self.history_dir = history_dir if history_dir.endswith("/") else history_dir + "/"
        self._counts: dict[str, tuple[tuple[int, tuple[int, ...]], int]] = {}
        self._static: dict[int, int] = {}
        # The last conversation counted: (its first message id, its last one, length, tokens).
        self._counted: tuple[str, str, int, int] | None = None

    # ----------------------------------------------------------------------- counting

    def count(self, message: BaseMessage) -> int:
        """The message's tokens, cached by id and size: a message rewritten under its id (a
        large input replaced by a reference) has a new size and is counted again."""
        key = message.id
        if key is None:
            return approx_tokens(message)
        size = _size(message)
        cached = self._counts.get(key)
        if cached is None or cached[0] != size:
            if len(self._counts) > _CACHE_LIMIT:
                self._counts.clear()
            cached = self._counts[key] = (size, approx_tokens(message))
        return cached[1]

    def _static_tokens(self, request: ModelRequest) -> int:
        """The system prompt and tool schemas: counted once per distinct prompt/tool set."""
        key = hash(
            (request.system_message.text if request.system_message else "", len(request.tools))
        )
        cached = self._static.get(key)
        if cached is None:
            size = len(request.system_message.text) if request.system_message else 0
            for tool in request.tools:
                schema = getattr(tool, "tool_call_schema", None)
                description = getattr(tool, "description", "") or ""
                size += len(description) + (
                    len(json.dumps(schema.model_json_schema()))
                    if schema is not None and hasattr(schema, "model_json_schema")
                    else 0
                )
            cached = self._static[key] = size // CHARS_PER_TOKEN
        return cached

    def conversation_tokens(
        self, messages: Sequence[BaseMessage], *, rewritten: bool = False
    ) -> int:
        """The tokens of `messages`. A conversation that only grew since the last call (same
        first message, and the last one counted still in its place) is counted on from there:
        a removal shifts the rest, so the place of the last counted id shows that nothing
        before it was removed. Messages rewritten in place under their ids (`rewritten`: large
        inputs replaced this call) make the whole conversation count again."""
        start = total = 0
        counted = None if rewritten else self._counted
        if counted is not None:
            first, last, length, tokens = counted
            if (
                length <= len(messages)
                and messages[0].id == first
                and messages[length - 1].id == last
            ):
                start, total = length, tokens
        identified = True  # every new message has an id: the count can be carried on
        for message in messages[start:]:  # a loop, not generators: this runs every model call
            total += self.count(message)
            if message.id is None:
                identified = False
        if messages and identified:
            first_id, last_id = messages[0].id, messages[-1].id
            if first_id is not None and last_id is not None:
                self._counted = (first_id, last_id, len(messages), total)
        return total

    def should_summarize(self, request: ModelRequest) -> bool:
        """`messages` and `tokens` measure the conversation; a `fraction` of the context window
        measures the whole request, system prompt and tool schemas included, since all of it
        must fit the window."""
        kind, amount = self.trigger
        if kind == "messages":
            return len(request.messages) >= amount
        rewritten = bool((request.state or {}).get("evicted_inputs"))
        total = self.conversation_tokens(request.messages, rewritten=rewritten)
        if kind == "fraction" and self.window:
            return total + self._static_tokens(request) >= amount * self.window
        return total >= amount

    # ----------------------------------------------------------------------- summarizing

    def _plan(self, request: ModelRequest) -> tuple[list[AnyMessage], list[AnyMessage]] | None:
        messages = list(request.messages)
        cut = cut_point(messages, self.keep, self.window, self.count)
        if cut <= 0:
            return None
        return messages[:cut], messages[cut:]

    def _history_path(self) -> str:
        from langgraph.config import get_config

        try:
            thread = str((get_config().get("configurable") or {}).get("thread_id") or "no-thread")
        except RuntimeError:
            thread = "no-thread"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in thread)
        return f"{self.history_dir}{safe}.md"

    @staticmethod
    def _entry(old: list[AnyMessage]) -> str:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        heading = f"## Replaced by a summary at {stamp} ({len(old)} messages)"
        return f"\n\n{heading}\n\n{get_buffer_string(old)}\n"

    def _append(self, backend: Backend, path: str, text: str) -> Any:
        """Append `text` to the history file; the files update for state backends, if any."""
        try:
            existing = backend.read(path, 0, 10**9).content
        except BackendError:
            return backend.write(path, f"# Conversation history{text}").files_update
        try:
            return backend.edit(path, existing, existing + text).files_update
        except BackendError:  # too large to rewrite: start a new part
            return backend.write(
                path.removesuffix(".md") + f"-{datetime.now(UTC):%Y%m%d%H%M%S}.md", text
            ).files_update

    async def _aappend(self, backend: Backend, path: str, text: str) -> Any:
        try:
            existing = (await backend.aread(path, 0, 10**9)).content
        except BackendError:
            return (await backend.awrite(path, f"# Conversation history{text}")).files_update
        try:
            return (await backend.aedit(path, existing, existing + text)).files_update
        except BackendError:
            name = path.removesuffix(".md") + f"-{datetime.now(UTC):%Y%m%d%H%M%S}.md"
            return (await backend.awrite(name, text)).files_update

    def _prompt(self, old: list[AnyMessage]) -> list[BaseMessage]:
        conversation = _trim_for_summarizer(
            get_buffer_string(old), self.summarizer_input_tokens * CHARS_PER_TOKEN
        )
        return [HumanMessage(content=SUMMARY_PROMPT.format(conversation=conversation))]

    @staticmethod
    def _summary_message(summary: str, count: int, path: str) -> SystemMessage:
        text = SUMMARY_MESSAGE.format(summary=summary.strip(), count=count, path=path)
        return SystemMessage(content=text, additional_kwargs={SUMMARY_KEY: True})

    @staticmethod
    def _finish(response: Any, new_history: list[AnyMessage], files_update: Any) -> Any:
        model_response = (
            response.model_response if isinstance(response, ExtendedModelResponse) else response
        )
        if isinstance(model_response, AIMessage):
            model_response = ModelResponse(result=[model_response])
        replies = list(model_response.result) if isinstance(model_response, ModelResponse) else []
        update: dict[str, Any] = {
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *new_history, *replies]
        }
        if files_update:
            update["files"] = files_update
        if isinstance(response, ExtendedModelResponse) and response.command is not None:
            inner = response.command.update
            if isinstance(inner, dict):
                update = {
                    **inner,
                    **update,
                    "messages": [*update["messages"], *(inner.get("messages") or [])],
                }
        return ExtendedModelResponse(model_response=model_response, command=Command(update=update))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        plan = self._plan(request) if self.should_summarize(request) else None
        if plan is None:
            return handler(summary_as_context(request))
        old, kept = plan
        path = self._history_path()
        files_update = None
        try:
            files_update = self._append(
                self.provider.get(request.state, request.runtime.store), path, self._entry(old)
            )
        except (BackendError, OSError) as exc:
            log.warning("could not save the conversation history to %s: %s", path, exc)
        summary = self.model.invoke(self._prompt(old), config={"tags": [SUMMARY_TAG]})
        new_history: list[AnyMessage] = [self._summary_message(summary.text, len(old), path), *kept]
        response = handler(summary_as_context(request.override(messages=new_history)))
        return self._finish(response, new_history, files_update)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        plan = self._plan(request) if self.should_summarize(request) else None
        if plan is None:
            return await handler(summary_as_context(request))
        old, kept = plan
        path = self._history_path()
        files_update = None
        try:
            backend = await self.provider.aget(request.state, request.runtime.store)
            files_update = await self._aappend(backend, path, self._entry(old))
        except (BackendError, OSError) as exc:
            log.warning("could not save the conversation history to %s: %s", path, exc)
        summary = await self.model.ainvoke(self._prompt(old), config={"tags": [SUMMARY_TAG]})
        new_history: list[AnyMessage] = [self._summary_message(summary.text, len(old), path), *kept]
        response = await handler(summary_as_context(request.override(messages=new_history)))
        return self._finish(response, new_history, files_update)
