"""The test file spec (`*.test.yaml`) as pydantic models: pure data, no langchain import.

A test file names one agent file and holds cases. Each case runs the agent on a thread of its own
(messages and approval decisions), then checks what the run left: the final answer, the files on
the agent's backend, the tool-call trajectory, the subagents it started, the approvals it asked
for, its todos, its use of the model, and optionally the grade of an LLM judge.

Like agent files, these models forbid unknown keys, and `schemas/test.schema.json` is generated
from them (`agentctl schema --test`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag, field_validator, model_validator

from runner.spec.base import ENTRY_ERROR, SpecModel, empty_list, json_schema_error
from runner.spec.json_schema import json_schema_problem

__all__ = [
    "CaseSpec",
    "DecisionSpec",
    "DecisionsTurn",
    "ExpectSpec",
    "FileExpect",
    "FinalExpect",
    "InterruptExpect",
    "JudgeExpect",
    "LimitsExpect",
    "TestFileSpec",
    "TodosExpect",
    "ToolCallExpect",
    "UserTurn",
]


def _as_text(value: Any) -> Any:
    """`contains: [42]` means the text "42" (YAML reads it as a number)."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _one_or_many(value: Any) -> Any:
    """`contains: SQLite` means `contains: [SQLite]`."""
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    return [_as_text(value)] if isinstance(value, str | int | float) else value


Texts = Annotated[list[str], BeforeValidator(_one_or_many, json_schema_input_type=str | list[str])]
"""One text, or a list of texts."""


def _regex(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{value!r} is not a valid regular expression: {exc}") from None
    return value


class FinalExpect(SpecModel):
    """Checks on the agent's last answer (the structured response as JSON when the agent has a
    `response_format`, else the text of its last message)."""

    contains: Texts = Field(default_factory=empty_list)
    """Texts the answer must contain (case-sensitive)."""
    not_contains: Texts = Field(default_factory=empty_list)
    """Texts the answer must not contain."""
    regex: str | None = None
    """A regular expression the answer must match somewhere (Python `re.search`)."""
    equals: str | None = None
    """The whole answer, exactly (surrounding whitespace ignored)."""
    json_schema: dict[str, Any] | None = None
    """A JSON Schema the answer must satisfy: the structured response, else the answer parsed as
    JSON, else the answer as a JSON string."""

    @field_validator("regex")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        return _regex(value)

    @field_validator("json_schema")
    @classmethod
    def _schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None and (problem := json_schema_problem(schema)) is not None:
            raise json_schema_error(problem[1], problem[0])
        return schema


class FileExpect(SpecModel):
    """Checks on one file of the agent's backend after the run."""

    exists: bool = True
    """Whether the file must exist (`false`: must not)."""
    contains: Texts = Field(default_factory=empty_list)
    """Texts the file must contain."""
    not_contains: Texts = Field(default_factory=empty_list)
    """Texts the file must not contain."""
    regex: str | None = None
    """A regular expression the file's text must match somewhere."""

    @field_validator("regex")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        return _regex(value)

    @model_validator(mode="after")
    def _nothing_to_read(self) -> FileExpect:
        if not self.exists and (self.contains or self.not_contains or self.regex):
            raise ValueError("a file expected not to exist has no text to check")
        return self


class ToolCallExpect(SpecModel):
    """A tool call the agent (or one of its subagents) must make."""

    name: str = Field(min_length=1)
    """The tool's name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Arguments the call must have; others may be there too (a nested mapping matches the same
    way, a list must be equal)."""
    agent: str | None = None
    """Only calls made by this agent (the main agent's name, or a subagent's); default any."""


class InterruptExpect(SpecModel):
    """A tool call that must have waited for approval."""

    name: str = Field(min_length=1)
    """The tool's name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Arguments the call must have (subset match, like `tool_calls`)."""


class TodosExpect(SpecModel):
    """Checks on the main agent's todo list at the end of the run."""

    all_completed: bool | None = None
    """Every todo is `completed` (`false`: at least one is not)."""
    min_count: int | None = Field(default=None, ge=0)
    """The list has at least this many todos."""


class LimitsExpect(SpecModel):
    """Most the run may use; counted over every turn of the case, subagents included."""

    model_calls: int | None = Field(default=None, gt=0)
    """Most model calls."""
    tokens: int | None = Field(default=None, gt=0)
    """Most tokens (input plus output), as the model reports them."""
    tool_calls: int | None = Field(default=None, gt=0)
    """Most tool calls."""


class JudgeExpect(SpecModel):
    """An LLM grades the answer against a rubric (score 0 to 1, with a reason). Without a judge
    model (`--judge-model`, `judge_model:` in the file, or `model:` here) it is skipped, never
    passed."""

    rubric: str = Field(min_length=1)
    """What a good answer does, in plain words."""
    threshold: float = Field(default=0.7, ge=0, le=1)
    """The lowest score that passes."""
    model: str | None = None
    """The judge model for this check (`provider:model`); default `--judge-model`, then the
    file's `judge_model`."""


class StepsExpect(SpecModel):
    """Checks on a workflow's steps (the steps that finished, and its state at the end)."""

    ran: list[str] = Field(default_factory=empty_list)
    """Steps that must finish, in this order (see `order`); a step that runs twice (a loop)
    is listed twice."""
    order: Literal["in_order", "exact"] = "in_order"
    """`in_order`: other steps may come between; `exact`: the steps that finished are exactly
    these."""
    not_ran: list[str] = Field(default_factory=empty_list)
    """Steps that must not finish."""
    state: dict[str, Any] = Field(default_factory=dict)
    """State fields and the value each must have when the run ends."""


class ExpectSpec(SpecModel):
    """What must hold after the case ran. Every check runs; all failures are reported."""

    final: FinalExpect | None = None
    """Checks on the final answer."""
    files: dict[str, FileExpect] = Field(default_factory=dict)
    """Checks on files of the agent's backend, by path (`/report.md`)."""
    tool_calls: list[ToolCallExpect] = Field(default_factory=empty_list)
    """Tool calls that must be made (see `tool_order`)."""
    tool_order: Literal["in_order", "any_order", "exact"] = "in_order"
    """`in_order`: the calls happen in this order, other calls may come between; `any_order`:
    each happens, in any order; `exact`: the calls are exactly these, in this order."""
    not_called: list[str] = Field(default_factory=empty_list)
    """Tools no agent may call."""
    subagents: list[str] = Field(default_factory=empty_list)
    """Subagents that must be started (through `task`)."""
    interrupts: list[InterruptExpect] = Field(default_factory=empty_list)
    """Tool calls that must have waited for approval."""
    todos: TodosExpect | None = None
    """Checks on the main agent's todo list."""
    limits: LimitsExpect | None = None
    """Most model calls, tokens and tool calls the case may use."""
    judge: JudgeExpect | None = None
    """An LLM-as-judge grade of the final answer."""
    steps: StepsExpect | None = None
    """For a workflow: the steps that ran, in which order, and the state they left."""
    error: bool = False
    """The run must fail (an `error` event); the final-answer checks then look at its message."""

    @model_validator(mode="after")
    def _exact_needs_calls(self) -> ExpectSpec:
        if self.tool_order != "in_order" and not self.tool_calls:
            raise ValueError("`tool_order` orders `tool_calls`; list the calls too")
        return self


class DecisionSpec(SpecModel):
    """An answer to one pending approval, or to the agent's question (`ask_user`)."""

    type: Literal["approve", "edit", "reject", "answer"]
    """approve, edit (with `args`) or reject (with an optional `message`); `answer` (with
    `message`, the answer's text) for a question."""
    args: dict[str, Any] | None = None
    """For `edit`: the arguments the call runs with instead."""
    message: str | None = None
    """For `reject`: what the agent is told; for `answer`: the answer."""

    @model_validator(mode="after")
    def _fits_type(self) -> DecisionSpec:
        if self.type == "edit" and self.args is None:
            raise ValueError("an `edit` decision needs `args`, the arguments to run with")
        if self.type != "edit" and self.args is not None:
            raise ValueError(f"`args` belongs to an `edit` decision, not to {self.type!r}")
        if self.type == "answer" and self.message is None:
            raise ValueError("an `answer` needs `message`, the answer's text")
        if self.type not in ("reject", "answer") and self.message is not None:
            raise ValueError(
                f"`message` belongs to a `reject` or an `answer`, not to {self.type!r}"
            )
        return self


def _decision_shorthand(value: Any) -> Any:
    """`decisions: [approve]` means `decisions: [{type: approve}]`."""
    return {"type": value} if isinstance(value, str) else value


DecisionInput = Annotated[
    DecisionSpec,
    BeforeValidator(_decision_shorthand, json_schema_input_type=str | DecisionSpec),
]


class UserTurn(SpecModel):
    """A message from the user."""

    user: str
    """The message."""


class DecisionsTurn(SpecModel):
    """Answers to the approvals the run waits for: one decision per pending call (one decision
    answers all of them alike, unless it edits)."""

    decisions: list[DecisionInput] = Field(min_length=1)
    """approve, edit or reject, in the order the calls wait."""


def _turn_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        if "user" in value:
            return "user"
        if "decisions" in value:
            return "decisions"
    if isinstance(value, UserTurn | DecisionsTurn):
        return "user" if isinstance(value, UserTurn) else "decisions"
    return None


Turn = Annotated[
    Annotated[UserTurn, Tag("user")] | Annotated[DecisionsTurn, Tag("decisions")],
    Discriminator(
        _turn_kind,
        custom_error_type=ENTRY_ERROR,
        custom_error_message="a turn is `{user: TEXT}` or `{decisions: [...]}`",
    ),
]


class CaseSpec(SpecModel):
    """One test case: what to send, with what model and files, and what must hold afterwards."""

    name: str = Field(min_length=1)
    """Its name in reports (and for `-k`)."""
    vars: dict[str, Any] = Field(default_factory=dict)
    """Template variables for the agent's prompts (like `agentctl run --var`)."""
    model: str | None = None
    """The model for this case, e.g. `replay:./cassettes/x.yaml` (relative to this file);
    default: the agent's own model. `agentctl test --model` overrides it."""
    files: dict[str, str] = Field(default_factory=dict)
    """Files put into the agent's backend before the run: path -> text."""
    input: str | None = None
    """The one message to send (or `turns`; a workflow's run needs neither: its `vars` are its
    input)."""
    turns: list[Turn] | None = None
    """Messages and approval decisions, in order, all on the case's thread (or `input`). A
    workflow's run starts before its first turn when that is a `decisions:` turn."""
    expect: ExpectSpec = Field(default_factory=ExpectSpec)
    """What must hold after the run."""
    pass_rate: float | None = Field(default=None, ge=0, le=1)
    """For live runs (`agentctl test --live`): the share of runs that must pass (e.g. 0.8);
    default the file's `pass_rate`, else 1.0. A replayed case is deterministic and ignores it."""

    @field_validator("files")
    @classmethod
    def _backend_paths(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            if not path.startswith("/"):
                raise ValueError(f"file paths are the agent's, starting with '/'; found {path!r}")
        return files

    @model_validator(mode="after")
    def _one_input(self) -> CaseSpec:
        if self.input is not None and self.turns is not None:
            raise ValueError("give `input` (one message) or `turns` (a list), not both or neither")
        if self.turns is not None and not self.turns:
            raise ValueError("`turns` must have at least one turn")
        return self

    def needs_message(self) -> str | None:
        """Why an agent (not a workflow) cannot run this case: it sends no first message."""
        if self.input is None and self.turns is None:
            return "give `input` (one message) or `turns` (a list), not both or neither"
        if self.turns is not None and not isinstance(self.turns[0], UserTurn):
            return "the first turn must be a `user:` message"
        return None


class TestFileSpec(SpecModel):
    """A `*.test.yaml` file: test cases for one agent."""

    __test__ = False  # not a pytest test class, whatever its name

    version: Literal[1] = 1
    """Test file format version."""
    agent: str = Field(min_length=1)
    """The agent file under test, relative to this file."""
    judge_model: str | None = None
    """The judge model for the `judge` checks of every case (`--judge-model` overrides it)."""
    workspace: Literal["empty", "copy"] = "empty"
    """What the folders the agent works in (`filesystem` / `local_shell` roots) hold when a case
    starts: `empty` (only `fixtures` and the case's `files`), or `copy` (a copy of the real
    folders, with whatever an earlier manual run left in them)."""
    fixtures: dict[str, str] = Field(default_factory=dict)
    """Files every case starts with: a folder in the agent's files (starting with '/') -> a
    folder on disk (relative to this file) whose files (text, recursively) are put there before
    the case's own `files`."""
    pass_rate: float | None = Field(default=None, ge=0, le=1)
    """For live runs (`agentctl test --live`): the share of each case's runs that must pass,
    unless the case sets its own; default 1.0 (every run)."""
    cases: list[CaseSpec] = Field(min_length=1)
    """The cases, run each on its own thread, in its own copy of the agent's files."""

    @field_validator("fixtures")
    @classmethod
    def _fixture_paths(cls, fixtures: dict[str, str]) -> dict[str, str]:
        for path in fixtures:
            if not path.startswith("/"):
                raise ValueError(
                    f"fixture paths are the agent's, starting with '/'; found {path!r}"
                )
        return fixtures
