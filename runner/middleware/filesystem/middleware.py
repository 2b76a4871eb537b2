"""File tools on the agent's backend, and eviction of tool results too large for the context.

Tools: `ls`, `read_file`, `write_file`, `edit_file`, `glob`, `grep`, and `execute` when the backend
can run commands. Each call gets its backend from the agent's `BackendProvider` (the state backend
is made from the state that call sees). Every path passes `validate_path`; a refusal
(`BackendError`, an OS error) comes back to the model as an `Error: ...` string it can act on,
never as an exception that ends the run. Writes to the state backend return a `Command` that
updates `files`, so parallel writes merge through the reducer.

Whether `execute` exists is decided when the agent is built, from the backend's type: the model
never sees a tool it cannot use, and no hook filters tools on every model call.

Large results: a tool result longer than `evict_results_over_tokens` x 4 characters is written to
`/large_tool_results/<tool call id>` and replaced by a note with its path and a head/tail preview.
The file tools themselves are excluded (they page or truncate their own output).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

from runner.backends import (
    Backend,
    BackendError,
    BackendProvider,
    FilesState,
    GrepMatch,
    files_channel,
    validate_path,
)
from runner.backends.files_channel import files_state
from runner.middleware.filesystem.format import (
    DEFAULT_CONTEXT_LINES,
    MAX_IMAGE_BYTES,
    ContextWindow,
    _line_start,
    awindow_text,
    context_windows,
    execution_report,
    format_context,
    format_grep,
    image_type,
    is_image_path,
    ls_line,
    no_matches,
    number_lines,
    preview,
    sanitize_id,
    truncate_lines,
    window_text,
)
from runner.middleware.filesystem.same_file import (
    _ASYNC_LOCKS,
    _SYNC_LOCKS,
    _refuse_after_success,
    _same_file_calls,
    _snapshot_backed,
    _tool_message,
    _with_message,
)
from runner.middleware.filesystem.texts import (
    CHARS_PER_TOKEN,
    DEFAULT_TOOL_TOKEN_LIMIT,
    EXCLUDED_FROM_EVICTION,
    FILE_TOOLS,
    LARGE_RESULTS_DIR,
    NOTE_ROOM,
    OUTPUT_SAVED,
    READ_CUT,
    READ_LINE_CUT,
    READ_NEXT,
    TOO_LARGE,
    TOOL_DESCRIPTIONS,
)
from runner.tools.runtime import harness_tool

# --------------------------------------------------------------------------- the middleware

Result = str | ToolMessage | Command
_R = TypeVar("_R")


class FilesystemMiddleware(AgentMiddleware):
    """The file tools on one backend, and large-result eviction."""

    state_schema = FilesState

    def __init__(
        self,
        provider: BackendProvider,
        *,
        tools: Sequence[str] | None = None,
        tool_descriptions: dict[str, str] | None = None,
        evict_results_over_tokens: int | None = DEFAULT_TOOL_TOKEN_LIMIT,
        images: bool = False,
    ) -> None:
        """`images`: whether the agent's model can look at images in tool results (see
        `runner.agent.resolve.ResolvedModel.images`); `read_file` returns them as image content
        then, and a plain answer saying it cannot otherwise."""
        super().__init__()
        self.state_schema = files_state(files_channel.FILES_SNAPSHOT_EVERY)
        self.provider = provider
        self.images = images
        self.evict_over = evict_results_over_tokens
        self.max_chars = CHARS_PER_TOKEN * (evict_results_over_tokens or DEFAULT_TOOL_TOKEN_LIMIT)
        wanted = list(tools) if tools is not None else [*FILE_TOOLS, "execute"]
        if not provider.can_execute:
            wanted = [t for t in wanted if t != "execute"]
        self.tool_names = wanted
        descriptions = dict(TOOL_DESCRIPTIONS)
        if "execute" in wanted:  # (else the shell backend's module stays unimported: start-up)
            from runner.backends.local_shell import DEFAULT_MAX_TIMEOUT, DEFAULT_TIMEOUT

            limits = provider.execute_timeouts or (DEFAULT_TIMEOUT, DEFAULT_MAX_TIMEOUT)
            descriptions["execute"] = TOOL_DESCRIPTIONS["execute"].format(
                timeout=limits[0], max_timeout=limits[1]
            )
        descriptions.update(tool_descriptions or {})
        makers: dict[str, Callable[[str], BaseTool]] = {
            "ls": self._ls_tool,
            "read_file": self._read_tool,
            "write_file": self._write_tool,
            "edit_file": self._edit_tool,
            "glob": self._glob_tool,
            "grep": self._grep_tool,
            "execute": self._execute_tool,
        }
        self.tools = [makers[name](descriptions[name]) for name in wanted]

    # ----------------------------------------------------------------------- helpers

    def backend(self, runtime: ToolRuntime) -> Backend:
        return self.provider.get(runtime.state, runtime.store)

    async def abackend(self, runtime: ToolRuntime) -> Backend:
        return await self.provider.aget(runtime.state, runtime.store)

    @staticmethod
    def _refusal(exc: BackendError | OSError, runtime: ToolRuntime, name: str) -> ToolMessage:
        """`Error: ...` for the model, with the ToolMessage marked as an error: a failed write
        must not look like a stored file (large-input eviction relies on it)."""
        reason = str(exc) if isinstance(exc, BackendError) else exc.strerror or str(exc)
        return ToolMessage(
            f"Error: {reason}", tool_call_id=runtime.tool_call_id or "", name=name, status="error"
        )

    def _change(self, runtime: ToolRuntime, path: str, change: Callable[[Backend], _R]) -> _R:
        """Run `change` (a write or an edit of `path`) unless it would undo a parallel one.

        Several calls of one AI message run at once. On backends that hold real files
        (filesystem, store) calls changing the same file run one at a time, each on the file as
        the one before left it. On the state backend every call computes its change from the
        same snapshot of `files`, so a second change would silently replace the first (the
        last update wins): it is refused, but only when an earlier call of the message on that
        path succeeds. Whether it does is decided by running that call again on the snapshot
        (state backend changes are pure), so the answer does not depend on which call the
        scheduler ran first, and holds after a resume too.
        """
        backend = self.backend(runtime)
        group = _same_file_calls(runtime, path)
        if group is None:
            return change(backend)
        if _snapshot_backed(backend, path):
            _refuse_after_success(runtime, backend, group, path)
            return change(backend)
        with _SYNC_LOCKS.lock(group.key):
            return change(backend)

    async def _achange(
        self, runtime: ToolRuntime, path: str, change: Callable[[Backend], Awaitable[_R]]
    ) -> _R:
        """`_change` for the async tools."""
        backend = await self.abackend(runtime)
        group = _same_file_calls(runtime, path)
        if group is None:
            return await change(backend)
        if _snapshot_backed(backend, path):
            _refuse_after_success(runtime, backend, group, path)
            return await change(backend)
        async with _ASYNC_LOCKS.lock(group.key):
            return await change(backend)

    def _guard(self, call: Callable[[], Result], runtime: ToolRuntime, name: str) -> Result:
        try:
            return call()
        except (BackendError, OSError) as exc:
            return self._refusal(exc, runtime, name)

    async def _aguard(
        self, call: Callable[[], Awaitable[Result]], runtime: ToolRuntime, name: str
    ) -> Result:
        try:
            return await call()
        except (BackendError, OSError) as exc:
            return self._refusal(exc, runtime, name)

    @staticmethod
    def _updated(message: str, files_update: Any, runtime: ToolRuntime, name: str) -> Result:
        if files_update is None:
            return message
        return Command(
            update={
                "files": files_update,
                "messages": [
                    ToolMessage(message, tool_call_id=runtime.tool_call_id or "", name=name)
                ],
            }
        )

    def _ls_lines(self, infos: Any, path: str) -> str:
        if not infos:
            return f"{path} is empty"
        return truncate_lines([ls_line(info) for info in infos], self.max_chars)

    def _read_text(self, result: Any, path: str) -> str:
        """Numbered lines, then where to read on. With eviction on, one read stays within the
        eviction budget: it ends at a whole line, and a single line over the budget shows its
        start and moves past it, so paging always advances."""
        if result.total_lines == 0 or (result.total_lines == 1 and result.content == ""):
            return f"{path} exists but is empty"
        first, total = result.start_line, result.total_lines
        lines = result.content.split("\n")
        if self.evict_over is None:
            rows = [number_lines(result.content, first)]
        else:
            budget = max(self.max_chars - NOTE_ROOM, 1)
            rows, used = [], 0
            for index, line in enumerate(lines):
                numbered = number_lines(line, first + index)
                used += len(numbered) + 1
                if used > budget + 1:
                    break
                rows.append(numbered)
            if not rows:
                shown, text = _line_start(lines[0], first, budget)
                return text + READ_LINE_CUT.format(
                    number=first, size=len(lines[0]), budget=self.max_chars, shown=shown
                )
            if len(rows) < len(lines):
                last = first + len(rows) - 1
                return "\n".join(rows) + READ_CUT.format(
                    first=first, last=last, total=total, budget=self.max_chars
                )
        text = "\n".join(rows)
        last = first + len(lines) - 1
        if last < total:
            text += READ_NEXT.format(first=first, last=last, total=total)
        return text

    # ----------------------------------------------------------------------- tools

    def _ls_tool(self, description: str) -> BaseTool:
        def ls(path: str, runtime: ToolRuntime) -> Result:
            def run() -> Result:
                checked = validate_path(path)
                return self._ls_lines(self.backend(runtime).ls(checked), checked)

            return self._guard(run, runtime, "ls")

        async def als(path: str, runtime: ToolRuntime) -> Result:
            async def run() -> Result:
                checked = validate_path(path)
                return self._ls_lines(await (await self.abackend(runtime)).als(checked), checked)

            return await self._aguard(run, runtime, "ls")

        return _tool("ls", description, ls, als)

    def _image(self, data: bytes, path: str, runtime: ToolRuntime) -> ToolMessage:
        """An image file as the model gets it: image content when it can look at images."""
        mime = image_type(data)
        if mime is None:
            raise BackendError(
                "{0} is named like an image but is not a PNG, JPEG, GIF or WebP image", path
            )
        kind = mime.partition("/")[2].upper()
        if not self.images:
            raise BackendError(
                f"{{0}} is a {kind} image ({len(data):,} bytes), and this agent's model cannot "
                "look at images, so read_file cannot show it; work from its name and size, or "
                "ask the user what it shows",
                path,
            )
        return ToolMessage(
            [
                {"type": "text", "text": f"{path}: {kind} image, {len(data):,} bytes"},
                {"type": "image", "base64": base64.b64encode(data).decode(), "mime_type": mime},
            ],
            tool_call_id=runtime.tool_call_id or "",
            name="read_file",
        )

    def _read_tool(self, description: str) -> BaseTool:
        def read_file(
            file_path: str, runtime: ToolRuntime, offset: int = 0, limit: int = 100
        ) -> Result:
            def run() -> Result:
                checked = validate_path(file_path)
                if is_image_path(checked):
                    data = self.backend(runtime).read_bytes(checked, MAX_IMAGE_BYTES)
                    return self._image(data, checked, runtime)
                result = self.backend(runtime).read(checked, offset=offset, limit=limit)
                return self._read_text(result, checked)

            return self._guard(run, runtime, "read_file")

        async def aread_file(
            file_path: str, runtime: ToolRuntime, offset: int = 0, limit: int = 100
        ) -> Result:
            async def run() -> Result:
                checked = validate_path(file_path)
                backend = await self.abackend(runtime)
                if is_image_path(checked):
                    data = await backend.aread_bytes(checked, MAX_IMAGE_BYTES)
                    return self._image(data, checked, runtime)
                result = await backend.aread(checked, offset=offset, limit=limit)
                return self._read_text(result, checked)

            return await self._aguard(run, runtime, "read_file")

        return _tool("read_file", description, read_file, aread_file)

    def _write_tool(self, description: str) -> BaseTool:
        def write_file(file_path: str, content: str, runtime: ToolRuntime) -> Result:
            def run() -> Result:
                checked = validate_path(file_path)
                result = self._change(runtime, checked, lambda b: b.write(checked, content))
                return self._updated(
                    f"Updated file {result.path}", result.files_update, runtime, "write_file"
                )

            return self._guard(run, runtime, "write_file")

        async def awrite_file(file_path: str, content: str, runtime: ToolRuntime) -> Result:
            async def run() -> Result:
                checked = validate_path(file_path)
                result = await self._achange(runtime, checked, lambda b: b.awrite(checked, content))
                return self._updated(
                    f"Updated file {result.path}", result.files_update, runtime, "write_file"
                )

            return await self._aguard(run, runtime, "write_file")

        return _tool("write_file", description, write_file, awrite_file)

    def _edit_tool(self, description: str) -> BaseTool:
        def message(result: Any) -> str:
            return (
                f"Successfully replaced {result.occurrences} instance(s) of the string in "
                f"{result.path}"
            )

        def edit_file(
            file_path: str,
            old_string: str,
            new_string: str,
            runtime: ToolRuntime,
            replace_all: bool = False,
        ) -> Result:
            def run() -> Result:
                checked = validate_path(file_path)
                result = self._change(
                    runtime, checked, lambda b: b.edit(checked, old_string, new_string, replace_all)
                )
                return self._updated(message(result), result.files_update, runtime, "edit_file")

            return self._guard(run, runtime, "edit_file")

        async def aedit_file(
            file_path: str,
            old_string: str,
            new_string: str,
            runtime: ToolRuntime,
            replace_all: bool = False,
        ) -> Result:
            async def run() -> Result:
                checked = validate_path(file_path)
                result = await self._achange(
                    runtime,
                    checked,
                    lambda b: b.aedit(checked, old_string, new_string, replace_all),
                )
                return self._updated(message(result), result.files_update, runtime, "edit_file")

            return await self._aguard(run, runtime, "edit_file")

        return _tool("edit_file", description, edit_file, aedit_file)

    def _glob_tool(self, description: str) -> BaseTool:
        def found(infos: Any, pattern: str) -> str:
            if not infos:
                return f"No files match {pattern!r}"
            return truncate_lines([i.path for i in infos], self.max_chars)

        def glob(pattern: str, runtime: ToolRuntime, path: str = "/") -> Result:
            return self._guard(
                lambda: found(self.backend(runtime).glob(pattern, validate_path(path)), pattern),
                runtime,
                "glob",
            )

        async def aglob(pattern: str, runtime: ToolRuntime, path: str = "/") -> Result:
            async def run() -> Result:
                backend = await self.abackend(runtime)
                return found(await backend.aglob(pattern, validate_path(path)), pattern)

            return await self._aguard(run, runtime, "glob")

        return _tool("glob", description, glob, aglob)

    def _grep_tool(self, description: str) -> BaseTool:
        def found(matches: list[GrepMatch], pattern: str, mode: str, regex: bool) -> str:
            if not matches:
                return no_matches(pattern, regex)
            return truncate_lines(format_grep(matches, mode), self.max_chars)

        def grep(
            pattern: str,
            runtime: ToolRuntime,
            path: str | None = None,
            glob: str | None = None,
            output_mode: Literal["files_with_matches", "content", "count"] = "files_with_matches",
            context_lines: int = DEFAULT_CONTEXT_LINES,
            regex: bool = False,
        ) -> Result:
            def run() -> Result:
                base = validate_path(path) if path is not None else None
                backend = self.backend(runtime)
                matches = backend.grep(pattern, base, glob, regex)
                if output_mode != "content" or context_lines <= 0 or not matches:
                    return found(matches, pattern, output_mode, regex)
                windows = context_windows(matches, context_lines)
                texts = [window_text(backend.read, w) for w in self._within_budget(windows)]
                return truncate_lines(format_context(windows, texts), self.max_chars)

            return self._guard(run, runtime, "grep")

        async def agrep(
            pattern: str,
            runtime: ToolRuntime,
            path: str | None = None,
            glob: str | None = None,
            output_mode: Literal["files_with_matches", "content", "count"] = "files_with_matches",
            context_lines: int = DEFAULT_CONTEXT_LINES,
            regex: bool = False,
        ) -> Result:
            async def run() -> Result:
                base = validate_path(path) if path is not None else None
                backend = await self.abackend(runtime)
                matches = await backend.agrep(pattern, base, glob, regex)
                if output_mode != "content" or context_lines <= 0 or not matches:
                    return found(matches, pattern, output_mode, regex)
                windows = context_windows(matches, context_lines)
                texts = [await awindow_text(backend.aread, w) for w in self._within_budget(windows)]
                return truncate_lines(format_context(windows, texts), self.max_chars)

            return await self._aguard(run, runtime, "grep")

        return _tool("grep", description, grep, agrep)

    def _within_budget(self, windows: list[ContextWindow]) -> list[ContextWindow]:
        """The first windows whose lines can fit in one answer: only those are read for their
        context (the answer is cut at the budget anyway, so reading more would be wasted)."""
        kept, used = [], 0
        for window in windows:
            if used > self.max_chars:
                break
            kept.append(window)
            used += sum(len(m.path) + len(m.text) + 12 for m in window.matches)
        return kept

    def _execute_tool(self, description: str) -> BaseTool:
        def execute(command: str, runtime: ToolRuntime, timeout: float | None = None) -> Result:
            def run() -> Result:
                backend: Any = self.backend(runtime)
                result = backend.execute(command, timeout)
                path = self._output_file(result, runtime)
                if path is None:
                    return execution_report(result)
                try:
                    written = backend.write(path, result.full_output)
                except (BackendError, OSError):
                    return execution_report(result)
                return self._saved_output(result, path, written, runtime)

            return self._guard(run, runtime, "execute")

        async def aexecute(
            command: str, runtime: ToolRuntime, timeout: float | None = None
        ) -> Result:
            async def run() -> Result:
                backend: Any = await self.abackend(runtime)
                result = await backend.aexecute(command, timeout)
                path = self._output_file(result, runtime)
                if path is None:
                    return execution_report(result)
                try:
                    written = await backend.awrite(path, result.full_output)
                except (BackendError, OSError):
                    return execution_report(result)
                return self._saved_output(result, path, written, runtime)

            return await self._aguard(run, runtime, "execute")

        return _tool("execute", description, execute, aexecute)

    def _output_file(self, result: Any, runtime: ToolRuntime) -> str | None:
        """Where the whole output of a command that was cut is saved (as large results are),
        or None: nothing was cut, the backend kept no more, or eviction is off."""
        if not result.truncated or result.full_output is None or self.evict_over is None:
            return None
        return f"{LARGE_RESULTS_DIR}/{sanitize_id(runtime.tool_call_id or 'execute')}"

    def _saved_output(self, result: Any, path: str, written: Any, runtime: ToolRuntime) -> Result:
        """The report of a cut command, pointing at the file with its whole output; its head and
        tail are cut further to stay within the eviction budget (so it is not evicted again)."""
        from runner.backends.local_shell import cut_between

        note = OUTPUT_SAVED.format(size=len(result.full_output.encode()), path=path)
        text = execution_report(result)
        budget = self.max_chars - len(note) - 100
        if len(text) > budget:
            half = max(budget // 2, 1)
            text = cut_between(text[:half], text[-half:], len(text.encode()))
        return self._updated(text + note, written.files_update, runtime, "execute")

    # ----------------------------------------------------------------------- eviction

    def _oversized(self, result: ToolMessage | Command) -> tuple[ToolMessage, str, str] | None:
        """(the ToolMessage, its text, where to save it) when `result` is too large to keep."""
        message = _tool_message(result)
        if message is None or self.evict_over is None:
            return None
        content = message.content if isinstance(message.content, str) else str(message.content)
        if len(content) <= self.max_chars:
            return None
        return message, content, f"{LARGE_RESULTS_DIR}/{sanitize_id(message.tool_call_id)}"

    def _replacement(self, message: ToolMessage, content: str, path: str) -> ToolMessage:
        """The note that replaces an evicted result; its preview is sized to keep the note
        within the budget (10 lines of at most 1,000 characters each)."""
        note = TOO_LARGE.format(size=len(content), path=path, preview="")
        width = (self.max_chars - len(note) - 40) // 10 - 8
        text = note + preview(content, width=max(20, min(1000, width)))
        return message.model_copy(update={"content": text})

    def _evict(self, result: ToolMessage | Command, request: Any) -> ToolMessage | Command:
        found = self._oversized(result)
        if found is None:
            return result
        message, content, path = found
        try:
            written = self.provider.get(request.state, request.runtime.store).write(path, content)
        except (BackendError, OSError):
            return result  # keep the result whole rather than lose it
        return _with_message(
            result, self._replacement(message, content, path), written.files_update
        )

    async def _aevict(self, result: ToolMessage | Command, request: Any) -> ToolMessage | Command:
        found = self._oversized(result)
        if found is None:
            return result
        message, content, path = found
        try:
            backend = await self.provider.aget(request.state, request.runtime.store)
            written = await backend.awrite(path, content)
        except (BackendError, OSError):
            return result  # keep the result whole rather than lose it
        return _with_message(
            result, self._replacement(message, content, path), written.files_update
        )

    def wrap_tool_call(
        self, request: Any, handler: Callable[[Any], ToolMessage | Command]
    ) -> ToolMessage | Command:
        result = handler(request)
        if request.tool_call["name"] in EXCLUDED_FROM_EVICTION:
            return result
        return self._evict(result, request)

    async def awrap_tool_call(
        self, request: Any, handler: Callable[[Any], Awaitable[ToolMessage | Command]]
    ) -> ToolMessage | Command:
        result = await handler(request)
        if request.tool_call["name"] in EXCLUDED_FROM_EVICTION:
            return result
        return await self._aevict(result, request)


def _tool(
    name: str, description: str, func: Callable[..., Any], coroutine: Callable[..., Awaitable[Any]]
) -> BaseTool:
    return harness_tool(name, description, func, coroutine)
