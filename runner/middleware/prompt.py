"""The system prompt, assembled from ordered sections: static ones once, dynamic ones per call.

A section is static text (the spec's prompt, the base prompt, the file tools' guide) or a function
of the agent's state (memory loaded for the thread, skills found in the backend). When every
section is static the whole prompt is passed to `create_agent` once and no middleware runs per
model call; otherwise `SystemPromptMiddleware` renders the dynamic sections in place, with the
static runs between them joined ahead of time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage

BASE_PROMPT = """\
## How you work

You are an agent that completes tasks by calling tools, step by step, until the task is done.
- Before acting on a multi-step task, make a short plan; revise it when you learn something new.
- Prefer doing over describing: call the tool instead of saying you would.
- Check your work: read back files you wrote, look at command output before relying on it.
- When a tool returns an error, read it, fix the cause, and try again a different way; do not
  repeat the same failing call.
- When you are done, answer with the result itself (the data, the summary, the file written),
  not a statement that you finished."""

Renderer = Callable[[Mapping[str, Any]], str | None]


@dataclass(frozen=True)
class PromptSection:
    """One part of the system prompt: `text` when static, `render(state)` when dynamic.

    `preview` renders a dynamic section without a run (for `agentctl inspect --prompt`).
    """

    name: str
    text: str | None = None
    render: Renderer | None = None
    preview: Callable[[], str | None] | None = None

    @property
    def is_static(self) -> bool:
        return self.render is None

    def preview_text(self) -> str | None:
        if self.render is None:
            return self.text
        return self.preview() if self.preview else f"<{self.name}: filled in at run time>"


def append_to_system_message(message: SystemMessage, text: str) -> SystemMessage:
    """`message` with `text` after it, keeping its content blocks as they are (seed 000 §5):
    cache-control markers and images that earlier middleware put there must survive. Plain
    text stays plain text."""
    if not text:
        return message
    content = message.content
    if isinstance(content, str):
        return SystemMessage(content=join([content, text]))
    blocks = list(content)
    return SystemMessage(
        content=[*blocks, {"type": "text", "text": f"\n\n{text}" if blocks else text}]
    )


def join(parts: list[str | None]) -> str:
    return "\n\n".join(p.strip("\n") for p in parts if p and p.strip())


def static_prompt(sections: list[PromptSection]) -> str | None:
    """The whole prompt when every section is static, else None."""
    if any(not s.is_static for s in sections):
        return None
    return join([s.text for s in sections]) or None


def preview_prompt(sections: list[PromptSection]) -> str:
    return join([s.preview_text() for s in sections])


# Sections that follow the user's middleware in the prompt (seed 004's order).
TAIL_SECTIONS = ("approvals", "local_context")


def split_for_user_middleware(
    sections: list[PromptSection],
) -> tuple[list[PromptSection], list[PromptSection]]:
    """(sections before the user's middleware text, sections after it)."""
    head = [s for s in sections if s.name not in TAIL_SECTIONS]
    tail = [s for s in sections if s.name in TAIL_SECTIONS]
    return head, tail


class SystemPromptMiddleware(AgentMiddleware):
    """Renders the sections that depend on the thread's state into the system message; with
    `append`, adds its sections after what earlier middleware put there (the prompt's tail,
    after the user's middleware)."""

    def __init__(self, sections: list[PromptSection], *, append: bool = False) -> None:
        super().__init__()
        self.append = append
        # Join each run of static sections once; keep dynamic renderers in place.
        self._parts: list[str | Renderer] = []
        pending: list[str | None] = []
        for section in sections:
            if section.render is None:
                pending.append(section.text)
                continue
            if text := join(pending):
                self._parts.append(text)
            pending = []
            self._parts.append(section.render)
        if text := join(pending):
            self._parts.append(text)

    @property
    def name(self) -> str:
        return "SystemPromptTail" if self.append else "SystemPrompt"

    def _system_message(self, request: ModelRequest) -> SystemMessage:
        rendered = [part if isinstance(part, str) else part(request.state) for part in self._parts]
        if self.append and request.system_message is not None:
            return append_to_system_message(request.system_message, join(rendered))
        return SystemMessage(content=join(rendered))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(request.override(system_message=self._system_message(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return await handler(request.override(system_message=self._system_message(request)))
