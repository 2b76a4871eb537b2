"""The workflow file as pydantic models: durable steps of agents, tools and people.

A file is an agent (its keys are `AgentSpec`'s) or a workflow (it has `workflow:`); both have
`version`, `name`, `description`, `inputs`, `vars` and `include`. A workflow adds a typed
`state:`, the `agents:` and `tools:` its steps use, and `workflow: {steps, output}`:

```yaml
version: 1
name: release-notes
inputs:
  version: {type: string, required: true}
state:
  draft: {type: string}
  review: {type: object}
agents:
  writer: {ref: agents/writer.yaml}
  reviewer:                          # an inline agent: an agent file's keys, without `name:`
    model: openai:gpt-4.1-mini
    prompt: You review release notes.
    response_format: {type: object, properties: {approved: {type: boolean}, notes: {type: string}}}
tools:
  - http: {name: publish, description: Publish, url: "http://127.0.0.1:8080/notes", method: POST}
workflow:
  steps:
    - id: draft
      agent: writer
      input: "Write the notes for {{ vars.version }}. {{ state.review.notes }}"
      output: draft                  # the agent's final answer goes into state.draft
    - id: review
      agent: reviewer
      input: "{{ state.draft }}"
      output: review                 # a `response_format` answer: its fields, as an object
    - id: again
      loop: {to: draft, while: "not state.review.approved", max: 3}
    - id: approve
      approval: {question: "Publish?", field: draft, on_reject: draft}
    - id: publish
      tool: publish
      args: {body: "{{ state.draft }}"}
  output: draft
```

Steps run in their order; `next:` on a step, a `route`, a `choose` or a `loop` jumps (to a step
id of the same list, or to `end`). Templates (`input:`, `question:`, string `args:` values) are
the prompts' Jinja, rendered when the step runs, over `vars` (inputs and vars), `state`, and in a
`map` `item` and `index`; conditions (`when:`, `while:`) are Jinja expressions over the same
names. An `args:` value that is one `{{ expression }}` and nothing else keeps the expression's
type (a list stays a list).

Pure data, like the agent spec: the loader adds locations, `runner.check.workflow` the checks
that need the whole file (unknown steps, unreachable steps, fields that do not exist), and
`runner.workflow` compiles it to a LangGraph `StateGraph`.
"""

from collections.abc import Callable
from typing import Annotated, Any, Literal, Self

from pydantic import (
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    model_validator,
)

from runner.errors import Problem
from runner.spec.agent import DECISIONS, AgentCore, AgentSpec, Decision, LimitsSpec, VarName
from runner.spec.base import ENTRY_ERROR, Name, SpecModel, empty_list, is_workflow_document
from runner.spec.inputs import InputSpec
from runner.spec.model import ModelInput
from runner.spec.tools import ToolEntry

__all__ = [
    "END",
    "STATE_TYPES",
    "STEP_KINDS",
    "AgentStep",
    "ApprovalSpec",
    "ApprovalStep",
    "AskSpec",
    "AskStep",
    "ChooseSpec",
    "ChooseStep",
    "LoopSpec",
    "LoopStep",
    "MapSpec",
    "MapStep",
    "ParallelStep",
    "RouteCase",
    "RouteStep",
    "StateField",
    "Step",
    "ToolStep",
    "WorkflowAgent",
    "WorkflowAgentRef",
    "WorkflowBody",
    "WorkflowSpec",
    "is_workflow_document",
    "step_kind",
]

END = "end"
"""The jump target that ends the workflow (in a `map`'s steps: ends that item)."""

StepId = Annotated[
    str,
    Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", min_length=1, max_length=64, examples=["draft"]),
]
"""A step's id: lowercase letters, digits, '-' and '_'. `end` is reserved."""

Target = Annotated[str, Field(min_length=1, examples=["draft", "end"])]
"""Where to go: a step id of the same step list, or `end`."""

Expression = Annotated[str, Field(min_length=1, examples=["not state.review.approved"])]
"""A Jinja expression (no braces) over `vars`, `state`, and in a map `item` and `index`."""

Template = Annotated[str, Field(examples=["Review this draft: {{ state.draft }}"])]
"""Jinja text over `vars`, `state`, and in a map `item` and `index`."""

StateType = Literal["string", "integer", "number", "boolean", "enum", "list", "object"]
STATE_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean", "enum", "list", "object")


class StateField(SpecModel):
    """One field of the workflow's state: what steps write (`output:`) and templates read
    (`{{ state.NAME }}`)."""

    type: StateType = "string"
    """`string`, `integer`, `number`, `boolean`, `enum` (one of `enum:`), `list` or `object`
    (a mapping, e.g. a `response_format` answer)."""
    description: str | None = None
    """What the field holds (shown by `agentctl inspect`)."""
    default: Any = None
    """The value before any step writes it (none: the field is unset, `null` in templates)."""
    enum: list[str | int | float | bool] | None = Field(default=None, min_length=1)
    """The allowed values of an `enum` field."""
    items: StateType | None = None
    """The type of a `list` field's items (any when unset)."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.enum is not None and self.type not in ("enum", "string"):
            raise ValueError(f"`enum:` fits `type: enum`, not `type: {self.type}`")
        if self.enum is not None:
            self.type = "enum"
        if self.type == "enum" and self.enum is None:
            raise ValueError("`type: enum` needs `enum:`, the list of allowed values")
        if self.items is not None and self.type != "list":
            raise ValueError(f"`items:` fits `type: list`, not `type: {self.type}`")
        return self


# --------------------------------------------------------------------------- agents


class WorkflowAgentRef(SpecModel):
    """Another agent file, run as a step."""

    ref: str = Field(min_length=1)
    """The agent file (relative to this file)."""


class WorkflowAgent(AgentCore):
    """An agent defined in place: an agent file's keys (`model`, `prompt`, `tools`, ...). Its name
    is its key in `agents:` (or the step's id for an agent written in the step)."""

    description: str | None = None
    """What the agent does (shown by `agentctl inspect`)."""
    subagents: list[Any] = Field(default_factory=empty_list)
    """Subagents, as in an agent file (checked when the agent is built)."""


def _agent_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "name"
    if isinstance(value, dict):
        return "ref" if "ref" in value else "inline"
    if isinstance(value, WorkflowAgentRef):
        return "ref"
    if isinstance(value, WorkflowAgent):
        return "inline"
    return None


AgentEntry = Annotated[
    Annotated[WorkflowAgentRef, Tag("ref")] | Annotated[WorkflowAgent, Tag("inline")],
    Discriminator(
        lambda v: _agent_kind(v) if not isinstance(v, str) else None,
        custom_error_type=ENTRY_ERROR,
        custom_error_message="expected an agent: a mapping with `ref:` (another agent file) or "
        "an agent's keys (`model:`, `prompt:`, ...)",
    ),
]

StepAgent = Annotated[
    Annotated[Name, Tag("name")]
    | Annotated[WorkflowAgentRef, Tag("ref")]
    | Annotated[WorkflowAgent, Tag("inline")],
    Discriminator(
        _agent_kind,
        custom_error_type=ENTRY_ERROR,
        custom_error_message="expected an agent: a name from `agents:`, a mapping with `ref:` "
        "(another agent file), or an agent's keys (`model:`, `prompt:`, ...)",
    ),
]
"""A name from the workflow's `agents:`, `{ref: file.yaml}`, or an inline agent."""

OutputMap = dict[VarName, str]
"""State field to the answer's field (`{approved: ok}`: state.approved = answer.ok)."""


# --------------------------------------------------------------------------- steps


class _StepBase(SpecModel):
    id: StepId
    """The step's id: jump targets, `--at` of `threads fork`, cassettes and tests name it."""
    description: str | None = None
    """What the step does (shown by `agentctl inspect` and on the web page)."""
    next: Target | None = None
    """The step that follows (default: the next in the list; `end` ends the workflow)."""


class AgentStep(_StepBase):
    """Run an agent on a message; its answer goes into the state."""

    agent: StepAgent
    """A name from `agents:`, `{ref: file.yaml}`, or an inline agent."""
    input: Template
    """The message the agent gets (a template)."""
    output: VarName | OutputMap | None = None
    """Where the answer goes: a state field (the final answer's text, or with a
    `response_format` the answer as an object), or `{state_field: answer_field}` to spread a
    `response_format` answer over several fields."""


class ToolStep(_StepBase):
    """Call a declared tool with rendered arguments; no model is involved."""

    tool: Name
    """A tool from the workflow's `tools:` (http, openapi, script, import or MCP)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The tool's arguments; strings are templates (one `{{ expression }}` keeps its type)."""
    output: VarName | OutputMap | None = None
    """Where the tool's result goes: a state field, or `{state_field: result_field}`."""


class ApprovalSpec(SpecModel):
    """What a person is asked to approve."""

    question: Template = "Approve?"
    """What the person is asked (a template)."""
    field: VarName | None = None
    """A state field shown with the question; `edit` replaces its value."""
    decisions: list[Decision] = Field(default_factory=lambda: list(DECISIONS), min_length=1)
    """The answers allowed: `approve`, `edit`, `reject`."""
    on_reject: Target | Literal["fail"] = "fail"
    """Where a rejection goes: a step id, `end` (the workflow ends), or `fail` (the run fails
    with the person's message)."""


class ApprovalStep(_StepBase):
    """Wait for a person to approve, edit or reject (the same answers and API as an agent's
    approvals)."""

    approval: ApprovalSpec


class AskSpec(SpecModel):
    """A question to a person, whose answer goes into the state."""

    question: Template
    """The question (a template)."""
    field: VarName
    """The state field the answer goes into."""
    choices: list[str] | None = Field(default=None, min_length=2)
    """The answers to choose from (free text when unset)."""


class AskStep(_StepBase):
    """Ask a person a question (like the `ask_user` tool); the answer goes into the state."""

    ask: AskSpec


class RouteCase(SpecModel):
    """One branch of a `route`: the first case whose condition holds is taken."""

    when: Expression | None = None
    """The condition; the last case may leave it out (the default branch)."""
    to: Target
    """Where to go."""


class RouteStep(_StepBase):
    """Go to the first branch whose condition holds (none holds: the next step)."""

    route: list[RouteCase] = Field(min_length=1)


class ChooseSpec(SpecModel):
    """A model's structured choice among named branches."""

    agent: StepAgent
    """The agent that chooses (its answer is constrained to one of `options`)."""
    input: Template
    """What it is told (a template); the options and their descriptions are added."""
    options: dict[Target, str] = Field(min_length=2)
    """Target step (or `end`) to a description of when to choose it."""
    output: VarName | None = None
    """A state field for the chosen option's name."""


class ChooseStep(_StepBase):
    """Let a model choose the next step among named options."""

    choose: ChooseSpec


class LoopSpec(SpecModel):
    """A bounded jump back."""

    to: Target
    """The earlier step to go back to."""
    while_: Expression = Field(alias="while")
    """Go back while this holds."""
    max: int = Field(gt=0, le=1000)
    """Go back at most this many times (required: a loop must end); then go on."""
    on_max: Literal["continue", "fail"] = "continue"
    """When the bound is reached with the condition still true: go on (`continue`) or fail."""


class LoopStep(_StepBase):
    """Jump back to an earlier step while a condition holds, at most `max` times."""

    loop: LoopSpec


class ParallelStep(_StepBase):
    """Run agent and tool steps at the same time; the workflow goes on when all finish. Two
    branches may not write the same state field."""

    parallel: list[Annotated[AgentStep | ToolStep, Field(discriminator=None)]] = Field(min_length=2)


class MapSpec(SpecModel):
    """Run steps once per item of a list."""

    over: Expression
    """The list (an expression, e.g. `state.tickets`)."""
    as_: VarName = Field(default="item", alias="as")
    """The item's name in templates (`{{ item }}`); `{{ index }}` is its position."""
    concurrency: int = Field(default=4, gt=0, le=100)
    """How many items run at once."""
    steps: list["MapItemStep"] = Field(min_length=1)
    """The steps for each item (agent, tool, route, choose). Their `output:` names are keys of
    the item's result (`{{ result.NAME }}` in later steps of the item); `end` ends the item."""


class MapStep(_StepBase):
    """Run steps once per item of a list, some at once; `output:` gets the list of the items'
    results (each a mapping of the item steps' outputs), in the list's order."""

    map: MapSpec
    output: VarName | None = None
    """The state field (a list) that gets the results."""


def step_kind(value: Any) -> str | None:
    """The kind of a step entry (the key that says what it does), or None."""
    if isinstance(value, dict):
        return next((k for k in STEP_KINDS if k in value), None)
    return next((k for k, cls in _STEP_CLASSES.items() if isinstance(value, cls)), None)


_STEP_CLASSES: dict[str, type[_StepBase]] = {
    "agent": AgentStep,
    "tool": ToolStep,
    "approval": ApprovalStep,
    "ask": AskStep,
    "route": RouteStep,
    "choose": ChooseStep,
    "loop": LoopStep,
    "parallel": ParallelStep,
    "map": MapStep,
}
STEP_KINDS: tuple[str, ...] = tuple(_STEP_CLASSES)

_STEP_ERROR = (
    "a step needs `id:` and one of `agent:`, `tool:`, `approval:`, `ask:`, `route:`, "
    "`choose:`, `loop:`, `parallel:` or `map:`"
)

Step = Annotated[
    Annotated[AgentStep, Tag("agent")]
    | Annotated[ToolStep, Tag("tool")]
    | Annotated[ApprovalStep, Tag("approval")]
    | Annotated[AskStep, Tag("ask")]
    | Annotated[RouteStep, Tag("route")]
    | Annotated[ChooseStep, Tag("choose")]
    | Annotated[LoopStep, Tag("loop")]
    | Annotated[ParallelStep, Tag("parallel")]
    | Annotated[MapStep, Tag("map")],
    Discriminator(step_kind, custom_error_type=ENTRY_ERROR, custom_error_message=_STEP_ERROR),
]

MapItemStep = Annotated[
    Annotated[AgentStep, Tag("agent")]
    | Annotated[ToolStep, Tag("tool")]
    | Annotated[RouteStep, Tag("route")]
    | Annotated[ChooseStep, Tag("choose")],
    Discriminator(
        step_kind,
        custom_error_type=ENTRY_ERROR,
        custom_error_message="a step of a `map` needs `id:` and one of `agent:`, `tool:`, "
        "`route:` or `choose:`",
    ),
]

MapSpec.model_rebuild()


class WorkflowBody(SpecModel):
    """The `workflow:` key: the steps and the result."""

    steps: list[Step] = Field(min_length=1)
    """The steps, run in order unless a step jumps."""
    output: VarName | Template | None = None
    """The workflow's result: a state field, or a template over `state` and `vars` (default:
    the last step's output)."""


class WorkflowSpec(SpecModel):
    """A workflow: one YAML file with `workflow:`."""

    version: Literal[1] = 1
    """Spec format version."""
    name: Name
    """The workflow's name (lowercase letters, digits, '-', '_')."""
    description: str | None = None
    """What the workflow does."""
    vars: dict[VarName, Any] = Field(default_factory=dict)
    """Template variables (`{{ vars.NAME }}`); `agentctl run --var NAME=VALUE` overrides them."""
    inputs: dict[VarName, InputSpec] = Field(default_factory=dict)
    """Typed inputs, as in an agent file; templates read them as `{{ vars.NAME }}`."""
    include: list[str] = Field(default_factory=empty_list)
    """Files merged under this one before validation, as in an agent file."""
    state: dict[VarName, StateField] = Field(default_factory=dict)
    """The workflow's state: field name to `{type, description, default, enum, items}`."""
    model: ModelInput | None = None
    """The default model of inline agents that set none."""
    agents: dict[Name, AgentEntry] = Field(default_factory=dict)
    """Agents the steps use by name: `{ref: file.yaml}` or inline."""
    tools: list[ToolEntry] = Field(default_factory=empty_list)
    """Tools the `tool:` steps call (the entries of an agent's `tools:`)."""
    limits: LimitsSpec = Field(default_factory=LimitsSpec.model_construct)
    """Budgets for the whole run, every step's agents included."""
    workflow: WorkflowBody
    """The steps and the result."""

    _source: str | None = PrivateAttr(default=None)
    _locator: Callable[[tuple[str | int, ...], str, bool], Problem] | None = PrivateAttr(
        default=None
    )
    _agent_specs: dict[str, AgentSpec] = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> str | None:
        """The file this workflow was loaded from."""
        return self._source

    def agent_specs(self) -> dict[str, AgentSpec]:
        """The loaded spec of every agent the steps run, by agent key: its name in `agents:`, or
        the id of the step that defines it in place (set by the loader)."""
        return dict(self._agent_specs)

    def problem(
        self, path: tuple[str | int, ...], message: str, *, at_key: bool = False
    ) -> Problem:
        """A problem located at `path` (e.g. `("workflow", "steps", 2, "to")`) in the file."""
        if self._locator is not None:
            return self._locator(path, message, at_key)
        dotted = ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")
        return Problem(self._source or "<spec>", 0, 0, dotted, message)
