"""What the model reads of the file tools: their descriptions, the prompt section, the notes
and limits of their results."""

from __future__ import annotations

from collections.abc import Sequence

from runner.middleware.prompt import PromptSection

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
