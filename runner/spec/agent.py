"""The agent spec: `AgentSpec` is one YAML file; subagents, approvals and the harness settings.

`AgentCore` holds what an agent and an inline subagent share. Inheritance from the main agent is
decided by which keys a subagent SETS (`model_fields_set`), not by their values: a subagent
without `tools:` inherits the main agent's tools, one with `tools: []` has none.
"""

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    AliasChoices,
    BeforeValidator,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from runner.errors import Problem
from runner.spec.a2a import A2ASubagent
from runner.spec.ask_user import AskUserSpec
from runner.spec.backend import BackendInput
from runner.spec.base import (
    ENTRY_ERROR,
    ImportRef,
    Name,
    SourcePathInput,
    SpecModel,
    describe,
    empty_list,
    json_schema_error,
    seed_names,
    shorthand,
)
from runner.spec.budgets import Seconds
from runner.spec.inputs import InputSpec
from runner.spec.json_schema import json_schema_problem
from runner.spec.model import ModelInput
from runner.spec.permissions import PermissionsSpec
from runner.spec.remote import RemoteSubagent
from runner.spec.tools import MiddlewareRef, ToolEntry

FILESYSTEM_TOOLS = ("ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute")
FilesystemToolName = Literal[
    "ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute"
]
Decision = Literal["approve", "edit", "reject"]
DECISIONS: tuple[Decision, ...] = ("approve", "edit", "reject")


_PROMPT_FILE_NAME = re.compile(r"[^\s{}]+\.(md|txt|j2|jinja|jinja2|prompt)")


class PromptFile(SpecModel):
    """A prompt kept in its own file (Jinja2, like an inline prompt)."""

    file: str
    """Path of the prompt file, relative to this spec file."""


_enabled_shorthand = shorthand("enabled", bool, "true, false or a mapping")


PromptInput = str | PromptFile


class InterruptOn(SpecModel):
    """Pause before the tool runs and ask a human to decide."""

    allowed_decisions: list[Decision] = Field(default_factory=lambda: list(DECISIONS), min_length=1)
    """What the reviewer may do: `approve` it, `edit` its arguments, or `reject` it."""
    description: str | None = None
    """Shown to the reviewer with the call."""
    when: dict[str, str | list[str]] = Field(default_factory=dict)
    """Ask only for calls whose arguments match: argument name to a glob pattern (or a list of
    patterns, any of which may match). Every named argument must match."""

    @field_validator("allowed_decisions")
    @classmethod
    def _unique(cls, decisions: list[str]) -> list[str]:
        if len(set(decisions)) != len(decisions):
            raise ValueError("each decision may be listed once")
        return decisions


def _interrupt_on_mapping(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(item, str) for item in value) and value:
        raise ValueError(
            f"expected a mapping of tool name to `true` or {{allowed_decisions: ...}}, found a "
            f"list; write `{value[0]}: true`, one line per tool"
        )
    return value


InterruptOnMap = Annotated[dict[str, bool | InterruptOn], BeforeValidator(_interrupt_on_mapping)]


class Threshold(SpecModel):
    """An amount of conversation: a `fraction` of the context window, `tokens`, or `messages`."""

    fraction: float | None = Field(default=None, gt=0, le=1)
    """Share of the model's context window, counting the whole request (system prompt and tool
    schemas too); needs `model.context_window` or a model whose window is known."""
    tokens: int | None = Field(default=None, gt=0)
    """Tokens in the conversation's messages (estimated at 4 characters per token)."""
    messages: int | None = Field(default=None, gt=0)
    """Number of messages."""

    @model_validator(mode="before")
    @classmethod
    def _mapping(cls, value: Any) -> Any:
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            raise ValueError(
                "expected a mapping: {fraction: 0.85}, {tokens: 100000} or {messages: 20}, "
                f"found {describe(value)}"
            )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [k for k in ("fraction", "tokens", "messages") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of `fraction`, `tokens` or `messages`")
        return self

    def as_tuple(self) -> tuple[str, float | int]:
        for key in ("fraction", "tokens", "messages"):
            value = getattr(self, key)
            if value is not None:
                return key, value
        raise AssertionError("unreachable: validated to have one key")


SUMMARIZATION_SEED_NAMES = {
    "max_tokens_before_summary": ("trigger", "tokens"),
    "messages_to_keep": ("keep", "messages"),
}


class SummarizationSpec(SpecModel):
    """Summarize older messages when the conversation nears the context limit. Defaults: trigger at
    85% of the context window when it is known, else 170,000 tokens; keep the latest 10% of the
    window, else 6 messages. The replaced messages are saved to the backend first."""

    enabled: bool = True
    """`false` turns it off (the same as writing `false` for the whole key)."""
    trigger: Threshold | None = None
    """When to summarize."""
    keep: Threshold | None = None
    """How much of the latest conversation to keep verbatim."""
    model: ModelInput | None = None
    """The model that writes summaries (default: the agent's)."""
    history_dir: str = "/conversation_history/"
    """Backend folder where each thread's replaced messages are appended."""

    @model_validator(mode="before")
    @classmethod
    def _seed_names(cls, value: Any) -> Any:
        """The seeds' `max_tokens_before_summary: N` is `trigger: {tokens: N}`, their
        `messages_to_keep: N` is `keep: {messages: N}`."""
        if not isinstance(value, dict):
            return value
        value = dict(value)
        for seed, (ours, unit) in SUMMARIZATION_SEED_NAMES.items():
            if seed not in value:
                continue
            if ours in value:
                raise ValueError(
                    f"`{seed}: N` is the seeds' way to write `{ours}: {{{unit}: N}}`; give "
                    "only one of them"
                )
            amount = value.pop(seed)
            value[ours] = {unit: amount} if isinstance(amount, int) else amount
        return value

    @field_validator("history_dir")
    @classmethod
    def _absolute_dir(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"must be a backend path starting with '/', found {value!r}")
        return value if value.endswith("/") else value + "/"


FILESYSTEM_SEED_NAMES = {
    "tool_token_limit_before_evict": "evict_results_over_tokens",
    "custom_tool_descriptions": "tool_descriptions",
}


class FilesystemSpec(SpecModel):
    """The file tools: which exist, their descriptions, and when big content is moved to files."""

    tools: list[FilesystemToolName] | None = None
    """Only these file tools exist (all when absent; `execute` needs a `local_shell` backend)."""
    evict_results_over_tokens: int | None = Field(
        default=20_000,
        gt=0,
        validation_alias=AliasChoices("evict_results_over_tokens", "tool_token_limit_before_evict"),
    )
    """A tool result larger than this is saved under `/large_tool_results/` and replaced by a
    preview; `null` keeps results whole (`tool_token_limit_before_evict`, the seeds' name, is
    accepted too)."""
    evict_inputs_over_tokens: int | None = Field(default=20_000, gt=0)
    """Tool-call arguments larger than this in past turns (like a big `write_file` content) are
    replaced by a reference to the file holding them; `null` keeps them."""
    system_prompt: str | None = None
    """Replace the filesystem section of the system prompt."""
    tool_descriptions: dict[FilesystemToolName, str] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("tool_descriptions", "custom_tool_descriptions"),
    )
    """Replace the description of a file tool (`custom_tool_descriptions`, the seeds' name, is
    accepted too)."""

    _seed_names = model_validator(mode="before")(
        lambda value: seed_names(value, FILESYSTEM_SEED_NAMES)
    )


class PromptCachingSpec(SpecModel):
    """Anthropic prompt caching (ignored for other providers)."""

    enabled: bool = True
    """`false` turns it off (the same as writing `false` for the whole key)."""
    ttl: Literal["5m", "1h"] = "5m"
    """How long Anthropic keeps the cached prefix."""


class LimitsSpec(SpecModel):
    """Stop runaway agents."""

    model_calls: int | None = Field(default=None, gt=0)
    """Most model calls in one run (one `agentctl run` message)."""
    tool_calls: int | dict[str, Annotated[int, Field(gt=0)]] | None = None
    """Most tool calls in one run: a number for all tools, or tool name to number."""
    recursion: int | None = Field(default=None, gt=0)
    """LangGraph's step limit for one run (default 1000)."""
    tokens: int | None = Field(default=None, gt=0)
    """Token budget of one run: input plus output tokens of every model call, subagents'
    included. The run stops with an error when it is reached (the thread can be continued)."""
    time: Seconds | None = None
    """Wall-clock budget of one run: `90s`, `10m`, `1h30m`, or seconds (time spent waiting for
    a person, between the turns of a run, is not counted)."""
    cost: float | None = Field(default=None, gt=0)
    """Cost budget of one run in US dollars; needs `model.price` on every model the run uses."""

    @field_validator("tool_calls")
    @classmethod
    def _positive(cls, value: int | dict[str, int] | None) -> int | dict[str, int] | None:
        if isinstance(value, int) and value <= 0:
            raise ValueError(f"must be greater than 0, found the number {value}")
        return value

    def has_budget(self, *, counts_calls: bool = False) -> bool:
        """Whether a run has a budget to count: `tokens`, `time` or `cost`; with `counts_calls`
        (a workflow's), `model_calls` and `tool_calls` as totals of the run too."""
        calls = (self.model_calls, self.tool_calls) if counts_calls else ()
        return any(v is not None for v in (self.tokens, self.time, self.cost, *calls))


class RetryPolicy(SpecModel):
    """Retry on transient errors with exponential backoff."""

    max_retries: int = Field(default=2, ge=0)
    """Retries after the first attempt."""
    initial_delay: float = Field(default=1.0, ge=0)
    """Seconds before the first retry."""
    backoff_factor: float = Field(default=2.0, ge=1)
    """Each delay is this many times the one before."""
    max_delay: float = Field(default=60.0, gt=0)
    """Longest delay in seconds."""
    tools: list[str] | None = None
    """For tool retries: only these tools (all when absent)."""


_retry_shorthand = shorthand("max_retries", int, "a number of retries or a mapping")


RetryInput = Annotated[
    RetryPolicy, BeforeValidator(_retry_shorthand, json_schema_input_type=int | RetryPolicy)
]


class RetriesSpec(SpecModel):
    """Retries for model calls and tool calls (`model: 3` is short for `{max_retries: 3}`)."""

    model: RetryInput | None = None
    """Retry failed model calls."""
    tools: RetryInput | None = None
    """Retry failed tool calls."""


AGENT_SEED_NAMES = {"system_prompt": "prompt"}


class AgentCore(SpecModel):
    """What an agent and an inline subagent have in common."""

    prompt: PromptInput | None = Field(
        default=None, validation_alias=AliasChoices("prompt", "system_prompt")
    )
    """The agent's instructions: Jinja2 text with `{{ vars.NAME }}`, or `{file: prompt.md}`
    (`system_prompt`, the seeds' name, is accepted too)."""
    model: ModelInput | None = None
    """`provider:model`, or `{id, params, fallbacks, context_window}`."""
    tools: list[ToolEntry] = Field(default_factory=empty_list)
    """Tools from Python (`import:`), MCP servers (`mcp:`), OpenAPI operations (`openapi:`), HTTP
    endpoints (`http:`) and commands (`script:`)."""
    todos: bool = True
    """Give the agent `write_todos` for planning."""
    backend: BackendInput | None = None
    """Where the agent's files live (default: `state`, files in the thread)."""
    memory: list[SourcePathInput] = Field(default_factory=empty_list)
    """Memory files (AGENTS.md and the like) loaded into the system prompt; the agent may edit
    them. `./x` and `~/x` are host paths, `/x` a path in the backend."""
    skills: list[SourcePathInput] = Field(default_factory=empty_list)
    """Folders of `<skill>/SKILL.md` skills; later folders override earlier ones by name."""
    interrupt_on: InterruptOnMap = Field(default_factory=dict)
    """Tool name to `true` or `{allowed_decisions, description, when}`: pause for approval."""
    permissions: PermissionsSpec = Field(default_factory=PermissionsSpec.model_construct)
    """`deny` and `allow` rules on tool calls (tool name and argument globs), checked before
    approvals: a denied call never runs; an allowed one skips its approval."""
    summarization: Annotated[
        SummarizationSpec,
        BeforeValidator(_enabled_shorthand, json_schema_input_type=bool | SummarizationSpec),
    ] = Field(default_factory=SummarizationSpec.model_construct)
    """Summarize older messages near the context limit (`false` turns it off)."""
    filesystem: FilesystemSpec = Field(default_factory=FilesystemSpec.model_construct)
    """File tool settings: allowlist, descriptions, large-content eviction."""
    prompt_caching: Annotated[
        PromptCachingSpec,
        BeforeValidator(_enabled_shorthand, json_schema_input_type=bool | PromptCachingSpec),
    ] = Field(default_factory=PromptCachingSpec.model_construct)
    """Anthropic prompt caching (`false` turns it off; ignored for other providers)."""
    limits: LimitsSpec = Field(default_factory=LimitsSpec.model_construct)
    """Model-call, tool-call and step limits; token, time and cost budgets."""
    retries: RetriesSpec = Field(default_factory=RetriesSpec.model_construct)
    """Retries on transient model and tool errors."""
    response_format: dict[str, Any] | None = None
    """A JSON Schema (an object schema): the final answer is structured output of that shape."""
    middleware: list[MiddlewareRef] = Field(default_factory=empty_list)
    """Extra LangChain middleware by import reference."""
    ask_user: Annotated[
        AskUserSpec | None,
        BeforeValidator(_enabled_shorthand, json_schema_input_type=bool | AskUserSpec),
    ] = None
    """`true` gives the agent an `ask_user` tool: it asks the person running it a question
    (with optional `choices`) and the run waits for the answer; `{choices: [...]}` offers those
    answers when the model gives none."""

    @model_validator(mode="before")
    @classmethod
    def _seed_names(cls, value: Any) -> Any:
        """The seeds' names of our keys (see `AGENT_SEED_NAMES`); the seeds' agent-level
        `tool_token_limit_before_evict` (seed 004) is `filesystem.evict_results_over_tokens`."""
        value = seed_names(value, AGENT_SEED_NAMES)
        limit = "tool_token_limit_before_evict"
        if isinstance(value, dict) and limit in value:
            value = dict(value)
            files = value.get("filesystem")
            files = dict(files) if isinstance(files, dict) else {}
            if limit in files or "evict_results_over_tokens" in files:
                raise ValueError(
                    f"`{limit}` is the seeds' name for `filesystem.evict_results_over_tokens`; "
                    "give only one of them"
                )
            files["evict_results_over_tokens"] = value.pop(limit)
            value["filesystem"] = files
        return value

    @field_validator("prompt")
    @classmethod
    def _not_a_file_name(cls, prompt: str | PromptFile | None) -> str | PromptFile | None:
        if isinstance(prompt, str) and _PROMPT_FILE_NAME.fullmatch(prompt.strip()):
            raise ValueError(
                f"this is the prompt's text, and it looks like a file name; to read the file "
                f"write `prompt: {{file: {prompt.strip()}}}`"
            )
        return prompt

    @field_validator("response_format")
    @classmethod
    def _json_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is None:
            return None
        problem = json_schema_problem(schema)
        if problem is not None:
            raise json_schema_error(problem[1], problem[0])
        if schema.get("type") != "object":
            raise json_schema_error(
                f"the answer's schema must be `type: object` (with `properties`), found "
                f"{describe(schema.get('type'))}",
                ("type",) if "type" in schema else (),
            )
        return schema


class InlineSubagent(AgentCore):
    """A subagent defined in place. Unset `model`, `tools` and `interrupt_on` inherit from the main
    agent; memory is never inherited."""

    name: Name
    """What the main agent passes as `subagent_type`."""
    description: str = Field(min_length=1)
    """When the main agent should use this subagent (shown in the `task` tool)."""


class RefSubagent(SpecModel):
    """Another agent file used as a subagent, with its own full spec."""

    ref: str
    """Path of the agent file, relative to this spec file."""
    name: Name | None = None
    """Call it by this name instead of the file's `name`."""
    description: str | None = Field(default=None, min_length=1)
    """Use this description instead of the file's `description`."""

    _spec: "AgentSpec | None" = PrivateAttr(default=None)

    @property
    def spec(self) -> "AgentSpec":
        """The referenced agent spec, loaded by the loader."""
        if self._spec is None:
            raise RuntimeError(f"subagent ref {self.ref!r} was not loaded (use runner.load_spec)")
        return self._spec


class ImportSubagent(SpecModel):
    """A prebuilt LangGraph runnable (e.g. a compiled graph) used as a subagent. Its state must
    have `messages`; its last message is the result."""

    import_: ImportRef = Field(alias="import")
    """`package.module:graph` or `path/to/file.py:graph`; a callable is called with `args`."""
    name: Name
    """What the main agent passes as `subagent_type`."""
    description: str = Field(min_length=1)
    """When the main agent should use this subagent."""
    args: dict[str, Any] | None = None
    """Keyword arguments: the target is a factory returning the runnable."""


def _subagent_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        if "ref" in value:
            return "ref subagent"
        if "import" in value or "import_" in value:
            return "import subagent"
        if "remote" in value:
            return "remote subagent"
        if "a2a" in value:
            return "a2a subagent"
        return "inline subagent"
    if isinstance(value, RefSubagent):
        return "ref subagent"
    if isinstance(value, ImportSubagent):
        return "import subagent"
    if isinstance(value, A2ASubagent):
        return "a2a subagent"
    if isinstance(value, InlineSubagent):
        return "inline subagent"
    if isinstance(value, RemoteSubagent):
        return "remote subagent"
    return None


SubagentEntry = Annotated[
    Annotated[InlineSubagent, Tag("inline subagent")]
    | Annotated[RefSubagent, Tag("ref subagent")]
    | Annotated[ImportSubagent, Tag("import subagent")]
    | Annotated[RemoteSubagent, Tag("remote subagent")]
    | Annotated[A2ASubagent, Tag("a2a subagent")],
    Discriminator(
        _subagent_kind,
        custom_error_type=ENTRY_ERROR,
        custom_error_message=(
            "expected a subagent: a mapping with `name:` and `description:`, or with `ref:` "
            "(another agent file), `import:` (a prebuilt graph), `remote:` (an Agent Server) or "
            "`a2a:` (an A2A agent)"
        ),
    ),
]


class GeneralPurposeAgentSpec(SpecModel):
    """The built-in `general-purpose` subagent: the main agent's tools, a fresh context."""

    enabled: bool = True
    """`false` turns it off (the same as writing `false` for the whole key)."""
    description: str | None = None
    """Replace its description in the `task` tool."""
    prompt: str | None = Field(
        default=None, validation_alias=AliasChoices("prompt", "system_prompt")
    )
    """Replace its system prompt (`system_prompt`, the seeds' name, is accepted too)."""

    _seed_names = model_validator(mode="before")(lambda value: seed_names(value, AGENT_SEED_NAMES))
    model: ModelInput | None = None
    """Its model (default: the main agent's)."""


def _identifier(name: str) -> str:
    if not name.isidentifier():
        raise ValueError(
            f"a variable name is letters, digits and '_' (not starting with a digit), found "
            f"{name!r}; templates use it as {{{{ vars.NAME }}}}"
        )
    return name


VarName = Annotated[str, AfterValidator(_identifier)]


class AgentSpec(AgentCore):
    """An agent: one YAML file."""

    version: Literal[1] = 1
    """Spec format version."""
    name: Name
    """The agent's name (lowercase letters, digits, '-', '_')."""
    description: str | None = None
    """What the agent does; required when another agent uses this file as a subagent."""
    vars: dict[VarName, Any] = Field(default_factory=dict)
    """Template variables for prompts (`{{ vars.topic }}`); `agentctl run --var topic=x`
    overrides them."""
    inputs: dict[VarName, InputSpec] = Field(default_factory=dict)
    """Typed inputs: name to `{type, description, required, default, enum, minimum, maximum}`.
    `agentctl run --var NAME=VALUE` sets one, checked and converted to its type; prompts read it
    as `{{ vars.NAME }}`. A name is in `vars:` or in `inputs:`, not both."""
    include: list[str] = Field(default_factory=empty_list)
    """Files merged under this one before validation (relative paths); later files and this one
    win, `tools` and `subagents` lists are joined."""
    subagents: list[SubagentEntry] = Field(default_factory=empty_list)
    """Agents the main agent can delegate to with the `task` tool: inline, `ref: file.yaml`,
    `import:` of a prebuilt graph, or `remote:` on an Agent Server."""
    general_purpose_agent: Annotated[
        GeneralPurposeAgentSpec,
        BeforeValidator(_enabled_shorthand, json_schema_input_type=bool | GeneralPurposeAgentSpec),
    ] = Field(default_factory=GeneralPurposeAgentSpec.model_construct)
    """The built-in `general-purpose` subagent (`false` removes it)."""
    task_description: str | None = None
    """Replace the `task` tool's description. `{available_agents}` in it (or `{agents}`) is
    replaced by the list of subagents, one `- name: description` line each."""

    _source: str | None = PrivateAttr(default=None)
    _locator: Callable[[tuple[str | int, ...], str, bool], Problem] | None = PrivateAttr(
        default=None
    )
    _warnings: list[Problem] = PrivateAttr(default_factory=list)

    @property
    def load_warnings(self) -> list[Problem]:
        """What loading found valid but not exact: the fields and tools of another tool's agent
        file that agentctl runs differently or not at all (`runner.load.dialects`)."""
        return self._warnings

    @property
    def source(self) -> str | None:
        """The file this spec was loaded from."""
        return self._source

    def problem(
        self, path: tuple[str | int, ...], message: str, *, at_key: bool = False
    ) -> Problem:
        """A problem located at `path` (e.g. `("tools", 0, "import")`) in the spec's files: at
        its value, or `at_key` at its key (a name that is a key, like an `interrupt_on` tool)."""
        if self._locator is not None:
            return self._locator(path, message, at_key)
        dotted = ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")
        return Problem(self._source or "<spec>", 0, 0, dotted, message)


SubagentSpec = InlineSubagent | RefSubagent | ImportSubagent | RemoteSubagent | A2ASubagent
__all__ = [
    "FILESYSTEM_TOOLS",
    "A2ASubagent",
    "AgentCore",
    "AgentSpec",
    "FilesystemSpec",
    "GeneralPurposeAgentSpec",
    "ImportRef",
    "ImportSubagent",
    "InlineSubagent",
    "InterruptOn",
    "LimitsSpec",
    "PromptCachingSpec",
    "PromptFile",
    "RefSubagent",
    "RemoteSubagent",
    "RetriesSpec",
    "RetryPolicy",
    "SubagentSpec",
    "SummarizationSpec",
    "Threshold",
]
