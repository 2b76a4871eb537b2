"""Memory: AGENTS.md-style files loaded into the system prompt once per thread.

The files hold what the agent should know across conversations (preferences, conventions, facts
about a project), and the agent keeps them up to date with `edit_file`. They are read through the
agent's backend, so an edit lands where the file lives: on disk for a host file (mounted at
`/memory/` when no directory backend already reaches it), in the store for `/memories/...` on a
store route. Loading happens in `before_agent` once per thread, into a private state key, so the
prompt stays stable for the whole conversation (and Anthropic's prompt cache stays valid). A file
that does not exist yet is listed as such, so the agent knows where to start one (seeds: the
memory section and its guide whenever memory is configured); a file that cannot be read is
skipped with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, TypedDict

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import OmitFromInput, OmitFromOutput

from runner.backends import BackendError, BackendProvider
from runner.backends.protocol import FILE_NOT_FOUND
from runner.middleware.prompt import PromptSection

log = logging.getLogger("agentctl")

MAX_MEMORY_LINES = 10_000

MEMORY_SECTION = """\
## Memory

These files hold what you have learned in earlier conversations: the user's preferences,
conventions, and facts worth keeping. Follow them. When you learn something durable (the user
corrects you, states a preference, or you find a fact that will matter again), update the
relevant file with `edit_file` right away, so you know it next time. Keep entries short and
specific; never store secrets or details of one task.

{files}"""

NOT_CREATED = "(not created yet: create it with `write_file` when there is something to keep)"


@dataclass(frozen=True)
class MemoryFile:
    agent_path: str
    """Where the agent reads and edits it."""
    shown: str
    """How messages name it (the host path, or the backend path)."""
    host: str | None = None
    """The host file, when it is one."""


class MemoryState(TypedDict):
    memory_contents: NotRequired[Annotated[dict[str, str | None], OmitFromInput, OmitFromOutput]]
    """Each memory file's text, None for a file that does not exist yet."""


def render_memory(contents: Mapping[str, str | None] | None) -> str | None:
    if not contents:
        return None
    files = "\n\n".join(
        f"### {path}\n\n{NOT_CREATED if text is None else text.strip() or '(empty)'}"
        for path, text in contents.items()
    )
    return MEMORY_SECTION.format(files=files)


def _missing(exc: BaseException) -> bool:
    return isinstance(exc, BackendError) and exc.template == FILE_NOT_FOUND


class MemoryMiddleware(AgentMiddleware):
    state_schema = MemoryState  # type: ignore[assignment]

    def __init__(self, provider: BackendProvider, files: list[MemoryFile]) -> None:
        super().__init__()
        self.provider = provider
        self.files = files

    def _loaded(self, path: str, result: Any) -> str:
        if result.total_lines > MAX_MEMORY_LINES:
            log.warning(
                "memory file %s has %d lines; only the first %d are loaded",
                path,
                result.total_lines,
                MAX_MEMORY_LINES,
            )
        return str(result.content)

    def _unread(self, contents: dict[str, str | None], file: MemoryFile, exc: Exception) -> None:
        if _missing(exc):
            contents[file.agent_path] = None
        else:
            log.warning("memory file %s skipped: %s", file.shown, exc)

    def load(self, state: Mapping[str, Any] | None, store: Any) -> dict[str, str | None]:
        contents: dict[str, str | None] = {}
        backend = self.provider.get(state, store)
        for file in self.files:
            try:
                contents[file.agent_path] = self._loaded(
                    file.shown, backend.read(file.agent_path, 0, MAX_MEMORY_LINES)
                )
            except (BackendError, OSError) as exc:
                self._unread(contents, file, exc)
        return contents

    async def aload(self, state: Mapping[str, Any] | None, store: Any) -> dict[str, str | None]:
        contents: dict[str, str | None] = {}
        backend = await self.provider.aget(state, store)
        for file in self.files:
            try:
                result = await backend.aread(file.agent_path, 0, MAX_MEMORY_LINES)
                contents[file.agent_path] = self._loaded(file.shown, result)
            except (BackendError, OSError) as exc:
                self._unread(contents, file, exc)
        return contents

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if state.get("memory_contents") is not None:
            return None  # loaded once per thread
        return {"memory_contents": self.load(state, runtime.store)}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if state.get("memory_contents") is not None:
            return None
        return {"memory_contents": await self.aload(state, runtime.store)}

    def prompt_section(self) -> PromptSection:
        return PromptSection(
            "memory",
            render=lambda state: render_memory(state.get("memory_contents")),
            preview=lambda: render_memory(self._preview()),
        )

    def _preview(self) -> dict[str, str | None]:
        """The memory as a new thread would load it, without touching any backend (`inspect`
        must not create folders): host files are read directly, backend files are named."""
        from pathlib import Path

        contents: dict[str, str | None] = {}
        for file in self.files:
            if file.host is None:
                contents[file.agent_path] = "(read from the backend when a thread starts)"
                continue
            try:
                contents[file.agent_path] = Path(file.host).read_text(encoding="utf-8")
            except FileNotFoundError:
                contents[file.agent_path] = None
            except (OSError, UnicodeDecodeError) as exc:
                log.warning("memory file %s skipped: %s", file.shown, exc)
        return contents
