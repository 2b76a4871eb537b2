"""The `replay:` provider: a chat model that plays a cassette's recorded replies (see
`runner.replay.cassette` for which reply comes next) with no network, streaming them in chunks
when the caller streams, with the token usage they record or an estimate."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict

from runner.errors import RunError
from runner.replay.cassette import Cassette, CassetteReply

__all__ = ["ReplayChatModel", "approx_tokens"]


_CHUNK = re.compile(r"\S+\s*|\s+")


def approx_tokens(text: str) -> int:
    """Tokens estimated at 4 characters each, the harness-wide rule."""
    return (len(text) + 3) // 4


class ReplayChatModel(BaseChatModel):
    """Plays one agent's replies from a cassette (see `runner.replay.cassette` for the rules)."""

    cassette: Any
    agent: str
    is_main: bool = True
    shown_path: str = ""
    """The cassette's path as messages show it, worked out when the model is made: reading the
    working directory on a server's event loop is a blocking call (`serve --dev` fails the run)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def model_post_init(self, context: Any) -> None:
        if not self.shown_path:
            from runner.errors import display_path

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
            shown = self.shown_path  # worked out when made: no os.getcwd on a server's loop
            have = f"{len(replies)} repl{'y' if len(replies) == 1 else 'ies'}"
            fix = "record more replies (agentctl run --record) or shorten the run"
            named = cassette.unmatched_answers(self.agent, _thread_id())
            if named and not self.is_main:
                fix = (
                    f"no reply left answers this task call ({_brief(messages)!r}); the runs not "
                    f"played answer: {', '.join(_named_call(a) for a in named)}"
                )
            if not replies:  # most likely a misspelt agent name in the cassette
                from runner.load.problems import did_you_mean

                names = sorted(cassette.agents)
                hint = did_you_mean(self.agent, names)
                found = ", ".join(names) or "none (a plain list is the main agent's)"
                fix = (
                    f"{'did you mean ' + repr(hint) + '? ' if hint else ''}its agents: {found}; "
                    f"agentctl validate {shown} checks the names"
                )
            raise RunError(
                f"replay cassette {shown} has {have} for agent "
                f"{self.agent!r}, and the run asked for reply {index + 1}; {fix}"
            )
        return index, replies[index]

    def _start_of_run(self, messages: list[BaseMessage]) -> int:
        """The first reply of the run answering the `task` call that started this subagent
        (the calls of one parent reply are given runs in the order the parent made them)."""
        from runner.replay.calls import TASK_CALL

        call = TASK_CALL.get()
        description = _brief(messages)
        if call is None or call.subagent != self.agent:
            return self.cassette.start_of_run(self.agent, _thread_id(), None, description)
        return self.cassette.start_of_run(
            self.agent, _thread_id(), call.id, call.description, call.siblings, call.run
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
