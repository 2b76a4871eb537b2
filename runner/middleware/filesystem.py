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

import asyncio
import base64
import functools
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

from runner.backends import (
    Backend,
    BackendError,
    BackendProvider,
    CompositeBackend,
    FileInfo,
    FilesState,
    GrepMatch,
    StateBackend,
    validate_path,
)
from runner.backends.local_shell import DEFAULT_MAX_TIMEOUT, DEFAULT_TIMEOUT, cut_between
from runner.backends.text import split_lines
from runner.middleware.prompt import PromptSection
from runner.tools.runtime import calling_message, harness_tool

CHARS_PER_TOKEN = 4
LONG_LINE = 5_000
DEFAULT_TOOL_TOKEN_LIMIT = 20_000
FILE_TOOLS = ("ls", "read_file", "write_file", "edit_file", "glob", "grep")
EXCLUDED_FROM_EVICTION = frozenset({*FILE_TOOLS})
CHANGE_FILES = frozenset({"write_file", "edit_file"})
LARGE_RESULTS_DIR = "/large_tool_results"

TOOL_DESCRIPTIONS = {
    "ls": (
        "List a directory of your filesystem: one entry per line, folders ending with '/', files "
        "with their size and when they were last modified (UTC). `path` must be absolute "
        "(start with /). To find files by name use `glob`; to find text use `grep`."
    ),
    "read_file": (
        "Read a file. `file_path` must be absolute. Returns up to `limit` lines (default 100) "
        "starting at line index `offset` (0-based, default 0), numbered from 1 like `cat -n`; "
        "page through longer files by raising `offset`. A line over 5,000 characters is split "
        "into continuation rows numbered 12.1, 12.2, .... Read a file before you edit it. "
        "Images (.png, .jpg, .jpeg, .gif, .webp) are returned as images when you can see them."
    ),
    "write_file": (
        "Create a NEW file containing `content`. `file_path` must be absolute. Fails when the "
        "file exists: to change an existing file, read it and use `edit_file`."
    ),
    "edit_file": (
        "Replace exact text in a file: `old_string` becomes `new_string`. `old_string` must match "
        "the file exactly, whitespace and indentation included, and occur once, unless "
        "`replace_all` is true (then every occurrence is replaced). Read the file first and "
        "include enough surrounding text to make `old_string` unique."
    ),
    "glob": (
        "Find files whose path matches a glob pattern such as `**/*.md` or `notes/*.txt`, under "
        "`path` (default /). `*` matches within one folder, `**` across folders. Returns absolute "
        "paths, sorted."
    ),
    "grep": (
        "Search file contents, line by line, for LITERAL text by default; with `regex` true, "
        "`pattern` is a Python regular expression searched in each line. `path` limits the "
        "search to a folder or a file; `glob` to file names matching a pattern (e.g. `*.md`). "
        "`output_mode`: `files_with_matches` (default) lists the files, `content` shows each "
        "matching line as `path:line: text` with `context_lines` lines (default 2) before and "
        "after it as `path-line- text` and `--` between groups, `count` gives the matching "
        "lines per file."
    ),
    "execute": (
        "Run a shell command in your workspace (the folder your files are in) and get its "
        "combined output and exit status. Use it for scripts, tests and builds. A command that "
        "runs longer than `timeout` seconds (default {timeout:g}; at most {max_timeout:g}) is "
        "stopped: raise it for long builds. Very long output shows its beginning and its end, "
        "and the whole of it is saved to a file you can read."
    ),
}

TOOL_GUIDE = {
    "ls": "list a directory",
    "read_file": "read a file, in pages (offset/limit)",
    "write_file": "create a new file",
    "edit_file": "change part of an existing file",
    "glob": "find files by name pattern, e.g. `**/*.md`",
    "grep": "find files containing some text",
}

EXECUTE_SECTION = """\
## Shell `execute`

You can run shell commands with `execute`, in the same folder your files are in. Use it to run
scripts, tests and builds, and check the exit status in its result before relying on the output."""

LARGE_RESULTS_NOTE = f"""

A tool result too large for your context is saved under {LARGE_RESULTS_DIR}/ and shown to you as
a preview; read the file for the rest."""
READ_NEXT = "\n\n[Lines {first}-{last} of {total}: read on with offset={last}.]"
READ_CUT = (
    "\n\n[Lines {first}-{last} of {total}: the next line would pass the {budget:,}-character "
    "limit of one read; read on with offset={last}.]"
)
READ_LINE_CUT = (
    "\n\n[Line {number} is {size:,} characters, more than one read can show ({budget:,}); only "
    "its first {shown:,} are shown. The next line is at offset={number}.]"
)
NOTE_ROOM = 200  # characters kept free for the note after a page of read_file
LIST_TRUNCATED = "\n... [{more:,} more not shown: narrow the path or the pattern]"
OUTPUT_SAVED = (
    "\n[The whole output ({size:,} bytes) is saved to {path}: read it in pages with read_file "
    "(offset and limit), or search it with grep.]"
)
TOO_LARGE = """\
This result was too large for your context ({size:,} characters), so it was saved to {path}.
Read it in pages with read_file (offset and limit), or search it with grep.
Its first and last lines:

{preview}"""


def filesystem_section(
    tools: Sequence[str], *, custom: str | None = None, large_results: bool = True
) -> PromptSection | None:
    """The prompt section for the file tools the agent has (execute gets its own paragraph);
    `large_results`: whether large tool results are evicted to files (then the section says so)."""
    if custom is not None:
        return PromptSection("filesystem", text=custom)
    names = [t for t in FILE_TOOLS if t in tools]
    parts = []
    if names:
        listing = "\n".join(f"- {name}: {TOOL_GUIDE[name]}" for name in names)
        text = (
            "## Files " + ", ".join(f"`{n}`" for n in names) + "\n\n"
            "You have a filesystem for notes, drafts and results. Every path is absolute and "
            "starts with `/`.\n" + listing
        )
        if large_results:
            text += LARGE_RESULTS_NOTE
        parts.append(text)
    if "execute" in tools:
        parts.append(EXECUTE_SECTION)
    return PromptSection("filesystem", text="\n\n".join(parts)) if parts else None


# --------------------------------------------------------------------------- formatting


def number_lines(content: str, start_line: int) -> str:
    """`cat -n` style rows; a line over 5,000 characters continues in rows `N.1`, `N.2`, ..."""
    rows = []
    for offset, line in enumerate(content.split("\n")):
        number = start_line + offset
        if len(line) <= LONG_LINE:
            rows.append(f"{number:>6}\t{line}")
            continue
        chunks = [line[i : i + LONG_LINE] for i in range(0, len(line), LONG_LINE)]
        rows.append(f"{number:>6}\t{chunks[0]}")
        rows.extend(f"{f'{number}.{k}':>6}\t{chunk}" for k, chunk in enumerate(chunks[1:], 1))
    return "\n".join(rows)


def _when(modified_at: str) -> str:
    """An ISO 8601 time as `2026-11-24 15:50:07 UTC` (as given when it does not parse)."""
    try:
        moment = datetime.fromisoformat(modified_at)
    except ValueError:
        return modified_at
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if moment.tzinfo else "")


def ls_line(info: FileInfo) -> str:
    """One `ls` entry: `/a.md (21 bytes, modified 2026-11-24 15:50:07 UTC)`; a folder is its
    path ending in `/` on every backend (the state and store backends keep no folder times)."""
    if info.is_dir:
        return f"{info.path.rstrip('/')}/"
    details = [] if info.size is None else [f"{info.size:,} bytes"]
    if info.modified_at:
        details.append(f"modified {_when(info.modified_at)}")
    return f"{info.path} ({', '.join(details)})" if details else info.path


def truncate_lines(lines: list[str], max_chars: int) -> str:
    """Lines joined, cut at a line boundary when longer than `max_chars`."""
    total = 0
    for index, line in enumerate(lines):
        total += len(line) + 1
        if total > max_chars:
            return "\n".join(lines[:index]) + LIST_TRUNCATED.format(more=len(lines) - index)
    return "\n".join(lines)


def _line_start(line: str, number: int, budget: int) -> tuple[int, str]:
    """(characters shown, rows) for the start of `line` that fits in `budget` characters."""
    keep = budget
    while True:
        text = number_lines(line[:keep], number)
        if len(text) <= budget or keep <= 1:
            return keep, text
        keep = max(1, keep - (len(text) - budget))


def preview(content: str, *, head: int = 5, tail: int = 5, width: int = 1000) -> str:
    """The first and last lines of `content`, each cut to `width` characters, numbered as
    read_file numbers them."""
    lines = [line[:width] for line in split_lines(content)]
    if len(lines) <= head + tail:
        return number_lines("\n".join(lines), 1)
    skipped = len(lines) - head - tail
    return (
        number_lines("\n".join(lines[:head]), 1)
        + f"\n... [{skipped:,} lines not shown] ...\n"
        + number_lines("\n".join(lines[-tail:]), len(lines) - tail + 1)
    )


def format_grep(matches: list[GrepMatch], mode: str) -> list[str]:
    if mode == "content":
        return [f"{m.path}:{m.line}: {m.text}" for m in matches]
    counts: dict[str, int] = {}
    for match in matches:
        counts[match.path] = counts.get(match.path, 0) + 1
    if mode == "count":
        return [f"{path}: {count}" for path, count in counts.items()]
    return list(counts)


DEFAULT_CONTEXT_LINES = 2
"""Lines shown before and after each match in grep's `content` mode, unless the call asks."""


@dataclass(frozen=True)
class ContextWindow:
    """Matches of one file close enough to share their context: lines `first`..`last`."""

    path: str
    first: int
    last: int
    matches: list[GrepMatch]


def context_windows(matches: list[GrepMatch], context: int) -> list[ContextWindow]:
    """The matches (sorted by path, then line) grouped into the line ranges shown around them:
    ranges that overlap or touch are merged, as grep -C merges them."""
    windows: list[ContextWindow] = []
    for match in matches:
        first, last = max(1, match.line - context), match.line + context
        previous = windows[-1] if windows else None
        if previous is not None and previous.path == match.path and first <= previous.last + 1:
            windows[-1] = ContextWindow(
                match.path, previous.first, last, [*previous.matches, match]
            )
        else:
            windows.append(ContextWindow(match.path, first, last, [match]))
    return windows


def _window_text(read: Callable[..., Any], window: ContextWindow) -> list[str] | None:
    """The lines of `window` as `read` gives them, or None when the file cannot be read now."""
    try:
        return _lines_of(read(window.path, window.first - 1, window.last - window.first + 1))
    except (BackendError, OSError):
        return None


async def _awindow_text(
    read: Callable[..., Awaitable[Any]], window: ContextWindow
) -> list[str] | None:
    try:
        return _lines_of(await read(window.path, window.first - 1, window.last - window.first + 1))
    except (BackendError, OSError):
        return None


def _lines_of(result: Any) -> list[str]:
    return [line.removesuffix("\r") for line in result.content.split("\n")]


def format_context(windows: list[ContextWindow], texts: list[list[str] | None]) -> list[str]:
    """grep -C style rows: `path:12: text` for a matching line, `path-13- text` for a line of
    context, `--` between windows. A window whose file was not read (beyond the budget, or gone)
    shows its matching lines only."""
    rows: list[str] = []
    for index, window in enumerate(windows):
        if index:
            rows.append("--")
        lines = texts[index] if index < len(texts) else None
        if lines is None:
            rows.extend(f"{m.path}:{m.line}: {m.text}" for m in window.matches)
            continue
        matched = {m.line for m in window.matches}
        for number, text in enumerate(lines, start=window.first):
            mark = ":" if number in matched else "-"
            rows.append(f"{window.path}{mark}{number}{mark} {text}")
    return rows


REGEX_SYNTAX = re.compile(r"[\\^$|*+?()\[\]{}]")
LITERAL_NOTE = (
    " (grep searched for the pattern as literal text; to search for a regular expression, "
    "call grep again with regex true)"
)


def no_matches(pattern: str, regex: bool = False) -> str:
    """grep's answer when nothing matched; when the pattern looks like a regular expression
    but was searched literally, it says so, so the model does not conclude the text is absent."""
    note = LITERAL_NOTE if not regex and REGEX_SYNTAX.search(pattern) else ""
    return f"No matches for {pattern!r}{note}"


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image read_file returns (Anthropic's limit for one image)."""


def is_image_path(path: str) -> bool:
    return path.lower().endswith(IMAGE_SUFFIXES)


def image_type(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes, told from their first bytes (the name may
    be wrong: a JPEG saved as .png is sent as a JPEG)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def sanitize_id(tool_call_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tool_call_id)[:120] or "result"


# --------------------------------------------------------------------------- the middleware

Result = str | ToolMessage | Command
_R = TypeVar("_R")

# Argument types: the text is the argument's description in the tool schema the model sees.
DirPath = Annotated[str, "Absolute path of the directory, e.g. /notes"]
FilePath = Annotated[str, "Absolute path of the file, e.g. /notes/plan.md"]
NewFilePath = Annotated[str, "Absolute path of the new file"]
Content = Annotated[str, "The whole text of the file"]
Offset = Annotated[int, "Index of the first line to read (0-based)"]
Limit = Annotated[int, "How many lines to read"]
OldString = Annotated[str, "The exact text to replace"]
NewString = Annotated[str, "The text to put in its place"]
ReplaceAll = Annotated[bool, "Replace every occurrence instead of exactly one"]
Pattern = Annotated[str, "Glob pattern, e.g. **/*.md"]
BaseDir = Annotated[str, "Folder to search under (absolute)"]
GrepText = Annotated[
    str, "The text to find: literal text, or a regular expression when `regex` is true"
]
GrepPath = Annotated[str | None, "Folder or file to search (absolute); everything when absent"]
GrepGlob = Annotated[str | None, "Only files whose name matches this pattern, e.g. *.py"]
GrepMode = Annotated[
    Literal["files_with_matches", "content", "count"], "files_with_matches, content, or count"
]
GrepContext = Annotated[
    int, "In content mode: how many lines to show before and after each match (0 for none)"
]
GrepRegex = Annotated[
    bool, "Search for `pattern` as a Python regular expression instead of literal text"
]
ShellCommand = Annotated[str, "The shell command to run"]
ShellTimeout = Annotated[
    float | None, "Seconds before the command is stopped; the workspace's default when absent"
]


class FilesystemMiddleware(AgentMiddleware):
    """The file tools on one backend, and large-result eviction."""

    state_schema = FilesState  # type: ignore[assignment]

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
        `runner.resolve.ResolvedModel.images`); `read_file` returns them as image content then,
        and a plain answer saying it cannot otherwise."""
        super().__init__()
        self.provider = provider
        self.images = images
        self.evict_over = evict_results_over_tokens
        self.max_chars = CHARS_PER_TOKEN * (evict_results_over_tokens or DEFAULT_TOOL_TOKEN_LIMIT)
        wanted = list(tools) if tools is not None else [*FILE_TOOLS, "execute"]
        if not provider.can_execute:
            wanted = [t for t in wanted if t != "execute"]
        self.tool_names = wanted
        limits = provider.execute_timeouts or (DEFAULT_TIMEOUT, DEFAULT_MAX_TIMEOUT)
        execute = TOOL_DESCRIPTIONS["execute"].format(timeout=limits[0], max_timeout=limits[1])
        descriptions = {**TOOL_DESCRIPTIONS, "execute": execute, **(tool_descriptions or {})}
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
        def ls(path: DirPath, runtime: ToolRuntime) -> Result:
            def run() -> Result:
                checked = validate_path(path)
                return self._ls_lines(self.backend(runtime).ls(checked), checked)

            return self._guard(run, runtime, "ls")

        async def als(path: DirPath, runtime: ToolRuntime) -> Result:
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
            file_path: FilePath, runtime: ToolRuntime, offset: Offset = 0, limit: Limit = 100
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
            file_path: FilePath, runtime: ToolRuntime, offset: Offset = 0, limit: Limit = 100
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
        def write_file(file_path: NewFilePath, content: Content, runtime: ToolRuntime) -> Result:
            def run() -> Result:
                checked = validate_path(file_path)
                result = self._change(runtime, checked, lambda b: b.write(checked, content))
                return self._updated(
                    f"Updated file {result.path}", result.files_update, runtime, "write_file"
                )

            return self._guard(run, runtime, "write_file")

        async def awrite_file(
            file_path: NewFilePath, content: Content, runtime: ToolRuntime
        ) -> Result:
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
            file_path: FilePath,
            old_string: OldString,
            new_string: NewString,
            runtime: ToolRuntime,
            replace_all: ReplaceAll = False,
        ) -> Result:
            def run() -> Result:
                checked = validate_path(file_path)
                result = self._change(
                    runtime, checked, lambda b: b.edit(checked, old_string, new_string, replace_all)
                )
                return self._updated(message(result), result.files_update, runtime, "edit_file")

            return self._guard(run, runtime, "edit_file")

        async def aedit_file(
            file_path: FilePath,
            old_string: OldString,
            new_string: NewString,
            runtime: ToolRuntime,
            replace_all: ReplaceAll = False,
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

        def glob(pattern: Pattern, runtime: ToolRuntime, path: BaseDir = "/") -> Result:
            return self._guard(
                lambda: found(self.backend(runtime).glob(pattern, validate_path(path)), pattern),
                runtime,
                "glob",
            )

        async def aglob(pattern: Pattern, runtime: ToolRuntime, path: BaseDir = "/") -> Result:
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
            pattern: GrepText,
            runtime: ToolRuntime,
            path: GrepPath = None,
            glob: GrepGlob = None,
            output_mode: GrepMode = "files_with_matches",
            context_lines: GrepContext = DEFAULT_CONTEXT_LINES,
            regex: GrepRegex = False,
        ) -> Result:
            def run() -> Result:
                base = validate_path(path) if path is not None else None
                backend = self.backend(runtime)
                matches = backend.grep(pattern, base, glob, regex)
                if output_mode != "content" or context_lines <= 0 or not matches:
                    return found(matches, pattern, output_mode, regex)
                windows = context_windows(matches, context_lines)
                texts = [_window_text(backend.read, w) for w in self._within_budget(windows)]
                return truncate_lines(format_context(windows, texts), self.max_chars)

            return self._guard(run, runtime, "grep")

        async def agrep(
            pattern: GrepText,
            runtime: ToolRuntime,
            path: GrepPath = None,
            glob: GrepGlob = None,
            output_mode: GrepMode = "files_with_matches",
            context_lines: GrepContext = DEFAULT_CONTEXT_LINES,
            regex: GrepRegex = False,
        ) -> Result:
            async def run() -> Result:
                base = validate_path(path) if path is not None else None
                backend = await self.abackend(runtime)
                matches = await backend.agrep(pattern, base, glob, regex)
                if output_mode != "content" or context_lines <= 0 or not matches:
                    return found(matches, pattern, output_mode, regex)
                windows = context_windows(matches, context_lines)
                texts = [
                    await _awindow_text(backend.aread, w) for w in self._within_budget(windows)
                ]
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
        def execute(
            command: ShellCommand, runtime: ToolRuntime, timeout: ShellTimeout = None
        ) -> Result:
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
            command: ShellCommand, runtime: ToolRuntime, timeout: ShellTimeout = None
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


def execution_report(result: Any) -> str:
    """What the model reads of a finished command: its output, exit code and truncation."""
    parts = [result.output.rstrip("\n")]
    if result.exit_code is not None:
        status = "succeeded" if result.exit_code == 0 else "failed"
        parts.append(f"[Command {status} with exit code {result.exit_code}]")
    if result.truncated:
        parts.append("[Output was truncated due to size limits: its middle is not shown]")
    return "\n".join(p for p in parts if p)


def _same_path(candidate: Any, path: str) -> bool:
    return isinstance(candidate, str) and _normal_path(candidate) == path


@functools.lru_cache(maxsize=4096)
def _normal_path(path: str) -> str | None:
    """`validate_path(path)`, None for a refused path; cached, as every write or edit of a reply
    with many calls compares its path with all of theirs."""
    try:
        return validate_path(path)
    except BackendError:
        return None


# --------------------------------------------------------------------------- same-file changes


@dataclass(frozen=True)
class _SameFileCalls:
    """The write/edit calls of one AI message that name one path: those before this call."""

    key: tuple[str, str]
    """(the message, the path): what parallel changes to one file share."""
    earlier: list[dict[str, Any]]
    message: Any


def _same_file_calls(runtime: ToolRuntime, path: str) -> _SameFileCalls | None:
    """The calls of this call's AI message that also change `path`, or None when it is the only
    one (the common case: no lock, no check)."""
    message = calling_message(runtime)
    if message is None:
        return None
    same = [
        call
        for call in message.tool_calls
        if call["name"] in CHANGE_FILES and _same_path(call["args"].get("file_path"), path)
    ]
    if len(same) < 2:
        return None
    index = next((i for i, c in enumerate(same) if c.get("id") == runtime.tool_call_id), len(same))
    ids = ",".join(str(c.get("id")) for c in same)
    return _SameFileCalls((message.id or ids, path), same[:index], message)


def _snapshot_backed(backend: Backend, path: str) -> bool:
    """Whether a change to `path` is computed from the call's snapshot of the graph state (the
    state backend, also behind a composite route), not made to a file others see at once."""
    while isinstance(backend, CompositeBackend):
        backend, path = backend.backend_for(path)
    return isinstance(backend, StateBackend)


def _succeeds(backend: Backend, call: dict[str, Any]) -> bool:
    """Whether a write/edit call succeeds on the state snapshot `backend` holds (pure)."""
    args = call["args"]
    try:
        path = validate_path(args["file_path"])
        if call["name"] == "write_file":
            content = args.get("content")
            return isinstance(content, str) and bool(backend.write(path, content))
        old, new = args.get("old_string"), args.get("new_string")
        replace_all = args.get("replace_all", False)
        if not (isinstance(old, str) and isinstance(new, str) and isinstance(replace_all, bool)):
            return False
        return bool(backend.edit(path, old, new, replace_all))
    except (BackendError, OSError):
        return False


def _refuse_after_success(
    runtime: ToolRuntime, backend: Backend, group: _SameFileCalls, path: str
) -> None:
    """Refuse this change when an earlier call of the message changes `path` successfully.

    An earlier call with a ToolMessage already in the state (rejected by a reviewer, stopped by
    a limit) did not change anything unless that message says it succeeded; any other is run
    again on the snapshot. Once one succeeds every later one is refused, so this call may run
    exactly when all earlier ones fail.
    """
    answered = {
        m.tool_call_id: m.status
        for m in (runtime.state or {}).get("messages") or ()
        if m.type == "tool"
    }
    for call in group.earlier:
        status = answered.get(call.get("id"))
        if status == "error" or (status is None and not _succeeds(backend, call)):
            continue
        raise BackendError(
            "{0} is also changed by an earlier call in this same message, and parallel "
            "changes to one file overwrite each other; make this change in your next message",
            path,
        )


class _Held:
    """A threading or asyncio lock as a context manager a WeakValueDictionary can refer to."""

    def __init__(self, lock: Any) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()


def _tool_message(result: ToolMessage | Command) -> ToolMessage | None:
    if isinstance(result, ToolMessage):
        return result
    update = result.update if isinstance(result, Command) else None
    if isinstance(update, dict):
        for message in update.get("messages") or ():
            if isinstance(message, ToolMessage):
                return message
    return None


def _with_message(
    result: ToolMessage | Command, replaced: ToolMessage, files_update: Any
) -> ToolMessage | Command:
    """`result` with its ToolMessage replaced, plus the files written for it (state backends)."""
    if isinstance(result, ToolMessage):
        if files_update is None:
            return replaced
        return Command(update={"files": files_update, "messages": [replaced]})
    update = dict(result.update) if isinstance(result.update, dict) else {}
    update["messages"] = [
        replaced if isinstance(m, ToolMessage) else m for m in update.get("messages") or ()
    ]
    if files_update:
        update["files"] = {**(update.get("files") or {}), **files_update}
    return Command(graph=result.graph, update=update, resume=result.resume, goto=result.goto)


def _tool(
    name: str, description: str, func: Callable[..., Any], coroutine: Callable[..., Awaitable[Any]]
) -> BaseTool:
    return harness_tool(name, description, func, coroutine)


class _Locks:
    """One lock per key, kept only while some call holds or waits for it."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._guard = threading.Lock()
        self._held: weakref.WeakValueDictionary[Any, _Held] = weakref.WeakValueDictionary()

    def lock(self, key: Any) -> _Held:
        with self._guard:
            held = self._held.get(key)
            if held is None:
                held = self._held[key] = _Held(self._make())
            return held


_SYNC_LOCKS = _Locks(threading.Lock)
_ASYNC_LOCKS = _Locks(asyncio.Lock)
