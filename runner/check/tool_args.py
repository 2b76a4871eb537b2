"""The arguments of the harness tools, as pydantic models that need no langchain: what a cassette's
tool calls are checked against (`runner.check.cassettes`). `tests/check/test_static_tools.py`
compares them with the schemas the built tools give the model. Imported only when a cassette has
tool calls, so `agentctl validate` pays for these classes only then."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BUILTIN_TOOL_ARGS"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Todo(_Args):
    content: str
    status: Literal["pending", "in_progress", "completed"]
    id: str = ""


class WriteTodosArgs(_Args):
    todos: list[_Todo]


class LsArgs(_Args):
    path: str


class ReadFileArgs(_Args):
    file_path: str
    offset: int = 0
    limit: int = 100


class WriteFileArgs(_Args):
    file_path: str
    content: str


class EditFileArgs(_Args):
    file_path: str
    old_string: str
    new_string: str
    replace_all: bool = False


class GlobArgs(_Args):
    pattern: str
    path: str = "/"


class GrepArgs(_Args):
    pattern: str
    path: str | None = None
    glob: str | None = None
    output_mode: Literal["files_with_matches", "content", "count"] = "files_with_matches"
    context_lines: int = 2
    regex: bool = False


class ExecuteArgs(_Args):
    command: str
    timeout: float | None = None


class TaskArgs(_Args):
    description: str
    subagent_type: str = Field(min_length=1)


class AskUserArgs(_Args):
    question: str
    choices: list[str] | None = None


BUILTIN_TOOL_ARGS: dict[str, type[BaseModel]] = {
    "write_todos": WriteTodosArgs,
    "ls": LsArgs,
    "read_file": ReadFileArgs,
    "write_file": WriteFileArgs,
    "edit_file": EditFileArgs,
    "glob": GlobArgs,
    "grep": GrepArgs,
    "execute": ExecuteArgs,
    "task": TaskArgs,
    "ask_user": AskUserArgs,
}
"""The arguments of the harness tools, as the model must send them (unknown ones are refused)."""
