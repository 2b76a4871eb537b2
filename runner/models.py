"""Chat models from `provider:model` strings, and the `replay:` provider that plays cassettes.

Providers go through LangChain's `init_chat_model`; a provider whose package is missing is a
`ResolutionError` that says which extra to install. `replay:path/to/cassette.yaml` plays back
recorded replies (see `runner.cassette`) with no network, streaming them in chunks when the
caller streams.

Two things are changed on the models LangChain makes (`harden`), because real servers need them:
token usage is asked for in streamed replies too (`stream_usage`, which langchain-openai turns
on only for OpenAI's own URL, and agentctl always streams), unless the spec's params set it; and
an OpenAI-compatible reply whose tool call arguments are JSON but not an object (an array, a
string) becomes an invalid tool call, as it does when streamed, instead of an exception that
ends the run. What happens to invalid calls then is `runner.middleware.replies`' business.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict

from runner.cassette import Cassette, CassetteReply, load_cassette
from runner.errors import ResolutionError, RunError

__all__ = [
    "EXTRAS",
    "ReplayChatModel",
    "approx_tokens",
    "init_model",
    "provider_of",
]

# Providers with an agentctl extra; others name their LangChain package.
EXTRAS = {"openai": "openai", "anthropic": "anthropic", "ollama": "ollama"}

_CHUNK = re.compile(r"\S+\s*|\s+")


def provider_of(model_id: str) -> str:
    return model_id.partition(":")[0]


def approx_tokens(text: str) -> int:
    """Tokens estimated at 4 characters each, the harness-wide rule."""
    return (len(text) + 3) // 4


def init_model(
    model_id: str,
    params: dict[str, Any] | None = None,
    *,
    agent: str,
    is_main: bool,
    cassettes: dict[Path, Cassette] | None = None,
) -> BaseChatModel:
    """The chat model for `provider:model`. `agent` names whose replies a replay model plays;
    `cassettes` shares loaded cassettes (and their cursors) between the agents of one build."""
    provider, _, name = model_id.partition(":")
    if provider == "replay":
        path = Path(name)
        shared = cassettes if cassettes is not None else {}
        cassette = shared.get(path)
        if cassette is None:
            cassette = shared[path] = load_cassette(path)
        return ReplayChatModel(cassette=cassette, agent=agent, is_main=is_main)

    from langchain.chat_models import init_chat_model

    try:
        model = init_chat_model(name, model_provider=provider, **(params or {}))
    except ImportError as exc:
        extra = EXTRAS.get(provider)
        if extra:
            fix = f"pip install 'agentctl[{extra}]'"
        else:
            found = re.search(r"pip install (\S+)", str(exc))
            fix = f"pip install {found.group(1).strip('`')}" if found else str(exc)
        raise ResolutionError(
            f"model {model_id!r} needs the {provider} integration, which is not installed: {fix}"
        ) from None
    except Exception as exc:  # a provider refusing its parameters or a missing API key
        raise ResolutionError(f"cannot create model {model_id!r}: {_first_line(exc)}") from None
    return harden(model, params or {})


def harden(model: BaseChatModel, params: dict[str, Any]) -> BaseChatModel:
    """`model` asking for usage when streaming (unless `params` say otherwise) and, for the
    OpenAI-compatible classes, reading non-object tool arguments as invalid calls."""
    fields = type(model).model_fields
    if (
        "stream_usage" in fields
        and "stream_usage" not in params
        and not getattr(model, "stream_usage", None)
    ):
        model.stream_usage = True  # type: ignore[attr-defined]
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:
        return model
    if isinstance(model, BaseChatOpenAI):
        model.__class__ = _tolerant(type(model))
    return model


_TOLERANT: dict[type, type] = {}
_MARK = "\x00"  # put before arguments that parse to something other than an object


def _tolerant(cls: type[Any]) -> type[Any]:
    """A subclass of an OpenAI-compatible chat model class (same name) whose non-streamed
    replies survive tool call arguments that are JSON but not an object.

    langchain-openai parses such arguments and then fails to build the AIMessage (a pydantic
    error ends the run), while a streamed reply puts the same call in `invalid_tool_calls`.
    The subclass retries the parse with those arguments marked unreadable, then restores them.
    """
    if cls in _TOLERANT.values():
        return cls
    if cls in _TOLERANT:
        return _TOLERANT[cls]
    from pydantic import ValidationError

    class Tolerant(cls):
        def _create_chat_result(
            self, response: Any, generation_info: dict[str, Any] | None = None
        ) -> ChatResult:
            try:
                return cast(ChatResult, super()._create_chat_result(response, generation_info))
            except ValidationError:
                marked = _mark_non_objects(response)
                if marked is None:
                    raise
            result = cast(ChatResult, super()._create_chat_result(marked, generation_info))
            for generation in result.generations:
                for call in getattr(generation.message, "invalid_tool_calls", None) or ():
                    raw = call.get("args")
                    if isinstance(raw, str) and raw.startswith(_MARK):
                        call["args"] = raw[len(_MARK) :]
                        call["error"] = "the arguments are JSON but not an object"
            return result

    Tolerant.__name__, Tolerant.__qualname__ = cls.__name__, cls.__qualname__
    Tolerant.__module__ = cls.__module__
    _TOLERANT[cls] = Tolerant
    return Tolerant


def _mark_non_objects(response: Any) -> dict[str, Any] | None:
    """The response as a dict with each tool call's arguments that parse to a non-object
    marked unreadable; None when there are none (the failure was something else)."""
    import copy
    import json

    data = copy.deepcopy(response if isinstance(response, dict) else response.model_dump())
    found = False
    for choice in data.get("choices") or ():
        for call in (choice.get("message") or {}).get("tool_calls") or ():
            function = call.get("function") or {}
            raw = function.get("arguments")
            try:
                value = json.loads(raw) if isinstance(raw, str) and raw else {}
            except ValueError:
                continue
            if not isinstance(value, dict) and isinstance(raw, str):
                function["arguments"] = _MARK + raw
                found = True
    return data if found else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class ReplayChatModel(BaseChatModel):
    """Plays one agent's replies from a cassette (see `runner.cassette` for the rules)."""

    cassette: Any
    agent: str
    is_main: bool = True
    shown_path: str = ""
    """The cassette's path as messages show it, worked out when the model is made: reading the
    working directory on a server's event loop is a blocking call (`serve --dev` fails the run)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def model_post_init(self, context: Any) -> None:
        if not self.shown_path:
            from runner.loader import display_path

            self.shown_path = display_path(self.cassette.path)

    @property
    def _llm_type(self) -> str:
        return "replay"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"cassette": str(self.cassette.path), "agent": self.agent}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ReplayChatModel:
        return self

    # ----------------------------------------------------------------------- selection

    def _next(self, messages: list[BaseMessage]) -> tuple[int, CassetteReply]:
        cassette: Cassette = self.cassette
        _warn_failed_tools(messages, self.shown_path)
        replies = cassette.replies_for(self.agent, is_main=self.is_main)
        decided: int | None = None
        ai_count = 0
        for message in reversed(messages):
            if message.type != "ai":
                continue
            meta = message.response_metadata or {}
            if decided is None and meta.get("replay_agent") == self.agent:
                decided = int(meta["replay_index"]) + 1
            ai_count += 1
        if decided is None and (self.is_main or ai_count):
            decided = ai_count  # a history without tags: continue after its AI messages
        if decided is None:  # a subagent's new run: which one follows from its `task` call
            decided = self._start_of_run(messages)
        index = cassette.claim(self.agent, decided, _thread_id())
        if index >= len(replies):
            from runner.loader import display_path

            have = f"{len(replies)} repl{'y' if len(replies) == 1 else 'ies'}"
            fix = "record more replies (agentctl run --record) or shorten the run"
            named = cassette.unmatched_answers(self.agent, _thread_id())
            if named and not self.is_main:
                fix = (
                    f"no reply left answers this task call ({_brief(messages)!r}); the runs not "
                    f"played answer: {', '.join(_named_call(a) for a in named)}"
                )
            if not replies:  # most likely a misspelt agent name in the cassette
                from runner.spec_errors import did_you_mean

                names = sorted(cassette.agents)
                hint = did_you_mean(self.agent, names)
                found = ", ".join(names) or "none (a plain list is the main agent's)"
                fix = (
                    f"{'did you mean ' + repr(hint) + '? ' if hint else ''}its agents: {found}; "
                    f"agentctl validate {display_path(cassette.path)} checks the names"
                )
            raise RunError(
                f"replay cassette {display_path(cassette.path)} has {have} for agent "
                f"{self.agent!r}, and the run asked for reply {index + 1}; {fix}"
            )
        return index, replies[index]

    def _start_of_run(self, messages: list[BaseMessage]) -> int:
        """The first reply of the run answering the `task` call that started this subagent
        (the calls of one parent reply are given runs in the order the parent made them)."""
        from runner.tools.runtime import TASK_CALL

        call = TASK_CALL.get()
        description = _brief(messages)
        if call is None or call.subagent != self.agent:
            return self.cassette.start_of_run(self.agent, _thread_id(), None, description)
        return self.cassette.start_of_run(
            self.agent, _thread_id(), call.id, call.description, call.siblings
        )

    def _message(self, index: int, reply: CassetteReply, messages: list[BaseMessage]) -> AIMessage:
        tool_calls = [
            {"name": call.name, "args": call.args, "id": call.id or f"call_{uuid.uuid4().hex[:24]}"}
            for call in reply.tool_calls
        ]
        if reply.usage is not None:
            usage_in, usage_out = reply.usage.input_tokens, reply.usage.output_tokens
        else:
            usage_in = sum(approx_tokens(str(m.content)) for m in messages)
            usage_out = approx_tokens(str(reply.content)) + sum(
                approx_tokens(str(c["args"])) for c in tool_calls
            )
        content: Any = reply.content
        return AIMessage(
            content=content,
            tool_calls=tool_calls,
            response_metadata={
                "model_provider": "replay",
                "model_name": Path(self.cassette.path).name,
                "replay_agent": self.agent,
                "replay_index": index,
            },
            usage_metadata={
                "input_tokens": usage_in,
                "output_tokens": usage_out,
                "total_tokens": usage_in + usage_out,
            },
        )

    # ----------------------------------------------------------------------- generation

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        index, reply = self._next(messages)
        if reply.delay:
            time.sleep(reply.delay)
        return ChatResult(
            generations=[ChatGeneration(message=self._message(index, reply, messages))]
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        index, reply = self._next(messages)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        return ChatResult(
            generations=[ChatGeneration(message=self._message(index, reply, messages))]
        )

    def _chunks(self, message: AIMessage) -> Iterator[AIMessageChunk]:
        text = message.content if isinstance(message.content, str) else ""
        pieces = _CHUNK.findall(text) if text else []
        for piece in pieces:
            yield AIMessageChunk(content=piece, id=message.id)
        yield AIMessageChunk(
            content="" if pieces else message.content,
            id=message.id,
            tool_call_chunks=[
                {
                    "name": c["name"],
                    "args": _json(c["args"]),
                    "id": c["id"],
                    "index": i,
                    "type": "tool_call_chunk",
                }
                for i, c in enumerate(message.tool_calls)
            ],
            response_metadata=message.response_metadata,
            usage_metadata=message.usage_metadata,
            chunk_position="last",
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        index, reply = self._next(messages)
        if reply.delay:
            time.sleep(reply.delay)
        for chunk in self._chunks(self._message(index, reply, messages)):
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                run_manager.on_llm_new_token(
                    chunk.content, chunk=ChatGenerationChunk(message=chunk)
                )
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        index, reply = self._next(messages)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        for chunk in self._chunks(self._message(index, reply, messages)):
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                await run_manager.on_llm_new_token(
                    chunk.content, chunk=ChatGenerationChunk(message=chunk)
                )
            yield ChatGenerationChunk(message=chunk)


def _warn_failed_tools(messages: list[BaseMessage], cassette: str) -> None:
    """A replayed model cannot react to a failed tool call: its next reply plays as recorded.
    So each tool that failed since the last reply (a misspelt tool name in the cassette, a file
    an earlier run left behind) is a warning; a rejected approval is an answer, not a failure."""
    failed = []
    for message in reversed(messages):
        if message.type == "ai":
            break
        meta = message.additional_kwargs or {}
        if (
            message.type == "tool"
            and getattr(message, "status", None) == "error"
            and meta.get("lc_source") != "hitl_interrupt_decision"  # a person said no
            and "agentctl_denied" not in (message.response_metadata or {})  # so did a rule
        ):
            text = message.content if isinstance(message.content, str) else str(message.content)
            failed.append((getattr(message, "name", None) or "a tool", text.strip()))
    if not failed:
        return
    from langgraph.config import get_stream_writer

    from runner.events import emit_warning

    try:
        writer = get_stream_writer()
    except RuntimeError:  # not inside a graph run: nobody to tell
        return
    for name, text in reversed(failed):
        first = text.splitlines()[0] if text else ""
        emit_warning(
            writer,
            "replay_tool_failed",
            f"{name} failed in a replayed run ({first[:200]}); the cassette plays its next "
            "reply as recorded, whatever the result: check its tool calls (agentctl validate "
            f"{cassette}) or start from the files it was recorded with",
        )


def _brief(messages: list[BaseMessage]) -> str:
    """A subagent's brief: the text of the first human message of its conversation."""
    first = next((m for m in messages if m.type == "human"), None)
    return "" if first is None else str(first.text)


def _named_call(answers: Any) -> str:
    return " and ".join(
        f"{key} {value!r}"
        for key, value in (("id", answers.id), ("description", answers.description))
        if value is not None
    )


def _thread_id() -> str | None:
    """The thread of the run this model call belongs to (its config's `thread_id`), if any."""
    from langchain_core.runnables.config import var_child_runnable_config

    config = var_child_runnable_config.get() or {}
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------- failures

# Endpoint paths a provider client adds to its base URL (the longest first).
_ENDPOINTS = (
    "/v1/messages",
    "/chat/completions",
    "/completions",
    "/responses",
    "/embeddings",
    "/api/chat",
    "/api/generate",
)

_STATUS_HINTS = {
    400: "the server refused the request",
    401: "check the API key",
    403: "check the API key and its permissions",
    404: "check the model name and `base_url`",
    429: "rate limited, and the retries did not get through; see `retries.model` in the spec",
}


def describe_provider_error(exc: BaseException) -> str | None:
    """One line for a model provider's connection or HTTP error: the provider, the base URL it
    used (and the model asked for, when the request says), what happened and what to check.
    None for any other exception."""
    for error in _chain(exc):
        request = _request_of(error)
        if request is None:
            continue
        provider = type(error).__module__.split(".")[0].removeprefix("langchain_")
        named = not provider.startswith(("httpx", "httpcore"))
        where = f"the {provider if named else 'model'} server at {_base_url(str(request.url))}"
        model = _requested_model(request)
        if model:
            where += f" (model {model!r})"
        status = getattr(error, "status_code", None)
        if isinstance(status, int):
            hint = _STATUS_HINTS.get(status)
            return f"{where} answered HTTP {status}: {_server_message(error)}" + (
                f" ({hint})" if hint else ""
            )
        said = str(error).strip()
        cause = next(
            (str(e).strip() for e in _chain(error) if str(e).strip() not in ("", said)),
            said or type(error).__name__,
        )
        return (
            f"cannot reach {where}: {cause.splitlines()[0]}; check that it is running and the "
            "model's `base_url`"
        )
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found and len(found) < 10:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _request_of(error: BaseException) -> Any:
    """The HTTP request an error of an HTTP client (httpx, openai, anthropic) carries."""
    try:
        request = getattr(error, "request", None)
    except RuntimeError:  # httpx raises when no request is attached
        return None
    return request if hasattr(request, "url") and hasattr(request, "method") else None


def _base_url(url: str) -> str:
    url = url.split("?", 1)[0].rstrip("/")
    for endpoint in _ENDPOINTS:
        if url.endswith(endpoint):
            return url[: -len(endpoint)]
    return url


def _requested_model(request: Any) -> str | None:
    import json

    try:
        body = json.loads(request.content or b"{}")
    except Exception:  # a streamed or non-JSON body: no model name to show
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return str(model) if model else None


def _server_message(error: BaseException) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message).strip().splitlines()[0]
    text = str(getattr(error, "message", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__
