"""The arguments of the harness tools, as pydantic models that need no langchain, declared once:
the file tools and `task` take them as their argument schemas (`runner.tools.runtime`, so nothing
is inferred from the tools' functions at start), and a cassette's tool calls are checked against
them (`runner.check.cassettes`, where unknown arguments are refused). The descriptions here are
what the model sees (`tests/snapshots/*.tools.json`); `tests/check/test_static_tools.py` compares
these models with the schemas the built tools give the model. `agentctl validate` imports this
module only when a cassette has tool calls."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BUILTIN_TOOL_ARGS", "TOOL_ARGS"]


class _Args(BaseModel):
    # built on first use: a run validates with the harness tools' own subclasses of these
    # (`runner.tools.runtime`), a cassette check with these
    model_config = ConfigDict(extra="forbid", defer_build=True)


class _Todo(_Args):
    content: str
    status: Literal["pending", "in_progress", "completed"]
    id: str = ""


class WriteTodosArgs(_Args):
    todos: list[_Todo]


class LsArgs(_Args):
    path: str = Field(description="Absolute path of the directory, e.g. /notes")


class ReadFileArgs(_Args):
    file_path: str = Field(description="Absolute path of the file, e.g. /notes/plan.md")
    offset: int = Field(0, description="Index of the first line to read (0-based)")
    limit: int = Field(100, description="How many lines to read")


class WriteFileArgs(_Args):
    file_path: str = Field(description="Absolute path of the new file")
    content: str = Field(description="The whole text of the file")


class EditFileArgs(_Args):
    file_path: str = Field(description="Absolute path of the file, e.g. /notes/plan.md")
    old_string: str = Field(description="The exact text to replace")
    new_string: str = Field(description="The text to put in its place")
    replace_all: bool = Field(False, description="Replace every occurrence instead of exactly one")


class GlobArgs(_Args):
    pattern: str = Field(description="Glob pattern, e.g. **/*.md")
    path: str = Field("/", description="Folder to search under (absolute)")


class GrepArgs(_Args):
    pattern: str = Field(
        description="The text to find: literal text, or a regular expression when `regex` is true"
    )
    path: str | None = Field(
        None, description="Folder or file to search (absolute); everything when absent"
    )
    glob: str | None = Field(
        None, description="Only files whose name matches this pattern, e.g. *.py"
    )
    output_mode: Literal["files_with_matches", "content", "count"] = Field(
        "files_with_matches", description="files_with_matches, content, or count"
    )
    context_lines: int = Field(
        2,
        description="In content mode: how many lines to show before and after each match "
        "(0 for none)",
    )
    regex: bool = Field(
        False,
        description="Search for `pattern` as a Python regular expression instead of literal text",
    )


class ExecuteArgs(_Args):
    command: str = Field(description="The shell command to run")
    timeout: float | None = Field(
        None,
        description="Seconds before the command is stopped; the workspace's default when absent",
    )


class TaskArgs(_Args):
    description: str = Field(
        description="The complete brief for the subagent: goal, inputs, what to report back."
    )
    subagent_type: str = Field(description="Which subagent to use (one of the names listed above).")


class TaskCallArgs(TaskArgs):
    """A cassette's `task` call also names a subagent (the tool answers an empty name with the
    list of subagents; a cassette that sends one is a mistake)."""

    subagent_type: str = Field(
        min_length=1, description=TaskArgs.model_fields["subagent_type"].description
    )


class AskUserArgs(_Args):
    question: str
    choices: list[str] | None = None


TOOL_ARGS: dict[str, type[BaseModel]] = {
    "ls": LsArgs,
    "read_file": ReadFileArgs,
    "write_file": WriteFileArgs,
    "edit_file": EditFileArgs,
    "glob": GlobArgs,
    "grep": GrepArgs,
    "execute": ExecuteArgs,
    "task": TaskArgs,
}
"""The argument schemas of the file tools and `task` (`runner.tools.runtime.harness_tool`)."""

BUILTIN_TOOL_ARGS: dict[str, type[BaseModel]] = {
    "write_todos": WriteTodosArgs,
    **TOOL_ARGS,
    "task": TaskCallArgs,
    "ask_user": AskUserArgs,
}
"""The arguments of the harness tools, as the model must send them (unknown ones are refused)."""
