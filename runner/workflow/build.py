"""A loaded WorkflowSpec -> its agents and tools resolved and built -> the compiled workflow.

Each agent (by agent key: its name in `agents:`, or the id of the step that defines it) is
resolved and built as `runner.agent` builds any agent, without a checkpointer of its own: it runs
as a subgraph of its step and checkpoints in the workflow's thread. The tools of `tool:` steps
are resolved like an agent's `tools:`.

Budgets: the workflow's `limits.tokens`, `limits.time`, `limits.cost`, `limits.model_calls`
and `limits.tool_calls` are one budget for the whole run, every step's agents (and their
subagents) counting against it (`runner.middleware.budgets`); an agent's own `limits` still
bound each of its runs. `tool:` steps are not tool calls of an agent: they do not count.

Replay (`replay:` models) plays each agent's replies by its key; each run of an agent step
starts a new run of replies in the cassette, as a subagent's `task` call does, so a step that
runs again (a loop going back, a map's items) plays the next replies, not the first ones again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runner.errors import BuildError
from runner.spec.workflow import AgentStep, ChooseStep, MapStep, ParallelStep, WorkflowSpec
from runner.workflow.graph import agent_key, compile_workflow

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.tools import BaseTool
    from langgraph.graph.state import CompiledStateGraph

    from runner.agent.resolve import LocalContext, ResolvedAgent
    from runner.replay.cassette import Cassette
    from runner.spec import AgentSpec

__all__ = ["BuiltWorkflow", "build_workflow", "choice_format", "steps_of"]


def steps_of(spec: WorkflowSpec) -> list[Any]:
    """Every step of the workflow, those of parallel branches and maps included, in file order."""
    found: list[Any] = []

    def walk(steps: list[Any]) -> None:
        for step in steps:
            found.append(step)
            if isinstance(step, ParallelStep):
                walk(list(step.parallel))
            elif isinstance(step, MapStep):
                walk(list(step.map.steps))

    walk(list(spec.workflow.steps))
    return found


def choice_format(options: Mapping[str, str]) -> dict[str, Any]:
    """The `response_format` a `choose` step's agent answers with: one of the options."""
    return {
        "title": "choice",
        "description": "The option chosen",
        "type": "object",
        "properties": {
            "choice": {
                "type": "string",
                "enum": list(options),
                "description": "; ".join(f"{k}: {v}" for k, v in options.items()),
            }
        },
        "required": ["choice"],
    }


@dataclass
class BuiltWorkflow:
    """A compiled workflow and what it holds open (the agents' MCP servers)."""

    spec: WorkflowSpec
    graph: CompiledStateGraph
    agents: dict[str, ResolvedAgent] = field(default_factory=dict)
    tools: dict[str, BaseTool] = field(default_factory=dict)
    cassettes: dict[Path, Cassette] = field(default_factory=dict)
    resources: list[Any] = field(default_factory=list)

    def close(self) -> None:
        from runner.agent.resolved import close_all

        close_all(self.resources)


def _playing_runs(agent: ResolvedAgent) -> None:
    """A replayed agent of a workflow plays a new run of its replies each time its step runs
    (a cassette's main agent would start from its first reply on every new conversation)."""
    from runner.replay.model import ReplayChatModel

    answer_format = agent.response_format or {}
    title = answer_format.get("title") if isinstance(answer_format, dict) else None
    for model in (agent.model.chat_model, *agent.model.fallbacks):
        if isinstance(model, ReplayChatModel):
            model.is_main = False
            model.cassette.answers_with(agent.name, frozenset([title] if title else []))


def build_workflow(
    spec: WorkflowSpec,
    *,
    model: str | BaseChatModel | None = None,
    checkpointer: Any = None,
    store: Any = None,
    local_context: LocalContext | None = None,
) -> BuiltWorkflow:
    """Resolve and build every agent and tool of `spec`, then compile the workflow with
    `checkpointer` and `store`. `model` replaces every agent's model (`replay:FILE` plays each
    agent's replies from one cassette, by agent key)."""
    from runner.agent.build import MAX_CONCURRENCY, build_graph

    resolver = _resolver(spec, model=model, local_context=local_context)
    built = BuiltWorkflow(spec=spec, graph=None)  # type: ignore[arg-type]
    built.resources = resolver.resources
    built.cassettes = resolver.cassettes
    try:
        specs = spec.agent_specs()
        graphs: dict[str, Any] = {}
        choosers: dict[str, Any] = {}
        for step in steps_of(spec):
            if isinstance(step, AgentStep):
                key = agent_key(step)
                if key not in graphs:
                    resolved = _resolve(resolver, specs, key, step.id)
                    built.agents[key] = resolved
                    graphs[key] = build_graph(resolved, checkpointer=None, store=store)
            elif isinstance(step, ChooseStep):
                key = agent_key(step)
                base = _agent_spec(specs, key, step.id)
                chooser = base.model_copy(
                    update={"response_format": choice_format(step.choose.options)}
                )
                resolved = _resolve(resolver, {key: chooser}, key, step.id)
                built.agents.setdefault(key, resolved)
                choosers[step.id] = build_graph(resolved, checkpointer=None, store=store)
        built.tools = _tools(resolver, spec)
        graph = compile_workflow(
            spec,
            agents=graphs,
            tools=built.tools,
            choosers=choosers,
            checkpointer=checkpointer,
            store=store,
        )
        # A map's items wait on its own limit (`concurrency`); LangGraph's pool must not be
        # the smaller one.
        widest = max(
            [s.map.concurrency for s in steps_of(spec) if isinstance(s, MapStep)]
            + [len(s.parallel) for s in steps_of(spec) if isinstance(s, ParallelStep)],
            default=1,
        )
        built.graph = graph.with_config(max_concurrency=max(MAX_CONCURRENCY, widest * 2))
    except BaseException:
        built.close()
        raise
    return built


def _resolver(spec: WorkflowSpec, **options: Any) -> Any:
    """A `Resolver` whose agents share the workflow's budget (when it sets one)."""
    from runner.agent.harness import budget_middleware, run_budget
    from runner.agent.resolve import Resolver

    budget = run_budget(
        spec,  # type: ignore[arg-type]
        lambda path, message: spec.problem(path, message),
        counts_calls=True,
    )

    class WorkflowResolver(Resolver):
        def _budget(self, core: Any, is_main: bool, model: Any, locate: Any) -> Any:
            if budget is None:
                return super()._budget(core, is_main, model, locate)
            self.budget = budget
            return budget_middleware(budget, core, model, main=False)

    return WorkflowResolver(**options)


def _agent_spec(specs: Mapping[str, AgentSpec], key: str, step_id: str) -> AgentSpec:
    found = specs.get(key)
    if found is None:
        raise BuildError(
            f"step {step_id!r} runs agent {key!r}, which the workflow's loader did not load "
            f"(loaded: {', '.join(sorted(specs)) or 'none'})"
        )
    return found


def _resolve(
    resolver: Any, specs: Mapping[str, AgentSpec], key: str, step_id: str
) -> ResolvedAgent:
    spec = _agent_spec(specs, key, step_id)
    resolver.budget = None
    resolved: ResolvedAgent = resolver._agent(
        spec,
        name=key,
        description=spec.description,
        where=(),
        locator=spec.problem,
        parent=None,
        source=spec.source,
    )
    _playing_runs(resolved)
    return resolved


def _tools(resolver: Any, spec: WorkflowSpec) -> dict[str, BaseTool]:
    """The workflow's `tools:` by name, resolved as an agent's are."""
    if not spec.tools:
        return {}
    tools = resolver.tools_for(spec, (), spec.problem)
    return {tool.name: tool for tool in tools}
