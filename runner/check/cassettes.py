"""Cassettes checked against the agents they serve: what `agentctl validate` adds to the format.

A cassette does not name its agent file. It is checked against an agent when that agent's spec
plays it (`model: replay:...`, a fallback, a subagent's or the summarizer's model), and when it
sits next to the agent file its name comes from (`coder.cassette.yaml`, `coder.*.cassette.yaml`
serve `coder.yaml`, the convention for `--model replay:...` cassettes). Each reply list must
belong to an agent that plays the cassette; each tool call must name a tool that agent has (see
`runner.check.tools` for which names are known without a build), with arguments the harness
tools accept; a `task` call must name one of its subagents. Nothing here imports langchain.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.check.tools import StaticAgent, static_agents
from runner.errors import Problem, SpecError
from runner.load.problems import did_you_mean
from runner.replay.cassette import MAIN, CassetteDocument, read_cassette
from runner.spec import AgentSpec
from runner.spec.cassette import CASSETTE_SUFFIXES

__all__ = [
    "CASSETTE_SUFFIXES",
    "cassette_problems",
    "is_cassette",
    "missing_cassette",
    "replay_problems",
]

SUMMARY_SUFFIX = "/summary"


def is_cassette(path: Path, value: Any = None) -> bool:
    """A cassette by its name (`*.cassette.yaml`), or by its content: a top-level `agents:`
    mapping (and no key an agent file has besides `version`), or a list of replies."""
    if path.name.endswith(CASSETTE_SUFFIXES):
        return True
    if isinstance(value, dict):
        return isinstance(value.get("agents"), dict) and set(value) <= {"version", "agents"}
    if isinstance(value, list) and value:
        return all(isinstance(v, dict) and ({"content", "tool_calls"} & set(v)) for v in value)
    return False


@dataclass
class _Players:
    """The agents that play one cassette, by the name their replies are filed under."""

    by_name: dict[str, StaticAgent] = field(default_factory=dict)
    main: StaticAgent | None = None


def _players(agents: list[StaticAgent], cassette: Path) -> _Players:
    found = _Players()
    for agent in agents:
        for model_id, _, _ in agent.models:
            if _replay_file(model_id) == cassette:
                found.by_name.setdefault(agent.name, agent)
                if agent.is_main:
                    found.main = agent
        summary = agent.core.summarization
        if summary.enabled:
            ids = (
                [summary.model.id, *(f.id for f in summary.model.fallbacks)]
                if summary.model is not None
                else [m for m, _, _ in agent.models]
            )
            if any(_replay_file(m) == cassette for m in ids):
                found.by_name.setdefault(agent.name + SUMMARY_SUFFIX, agent)
    return found


def _replay_file(model_id: str) -> Path | None:
    provider, _, rest = model_id.partition(":")
    return Path(rest).resolve() if provider == "replay" else None


def replay_problems(
    spec: AgentSpec,
    *,
    checked: set[Path] | None = None,
    also_played_by: Callable[[Path], list[AgentSpec]] | None = None,
) -> list[Problem]:
    """Every cassette the spec plays: a missing one (located at the key naming it, with the
    path it resolved to), its format problems, and its replies checked against the agents
    (the spec's, and those of the other agent files `also_played_by(cassette)` gives: a
    cassette shared through an include serves every agent that plays it)."""
    agents = static_agents(spec)
    problems: list[Problem] = []
    cassettes: dict[Path, None] = {}
    seen_keys: set[tuple[str, str]] = set()
    for agent in agents:
        for model_id, at, locate in _model_keys(agent):
            path = _replay_file(model_id)
            if path is None:
                continue
            if not path.is_file():
                problem = locate(at, missing_cassette(path))
                if (problem.file, problem.path) not in seen_keys:
                    seen_keys.add((problem.file, problem.path))
                    problems.append(problem)
                continue
            cassettes[path] = None
    for path in cassettes:
        if checked is not None:
            if path in checked:
                continue
            checked.add(path)
        others = also_played_by(path) if also_played_by is not None else []
        problems += _check(path, agents, others)
    return problems


def missing_cassette(path: Path) -> str:
    """The message for a `replay:` cassette that is not there (`run` says the same)."""
    from runner.errors import display_path

    return f"replay cassette not found: {display_path(path)}"


def _model_keys(agent: StaticAgent) -> Iterable[tuple[str, tuple[str | int, ...], Any]]:
    yield from agent.models
    summary = agent.core.summarization.model
    if summary is not None:
        at = (*agent.where, "summarization", "model")
        yield summary.id, at, agent.locate
        for index, fallback in enumerate(summary.fallbacks):
            yield fallback.id, (*at, "fallbacks", index), agent.locate


def cassette_problems(path: Path, specs: list[AgentSpec]) -> list[Problem]:
    """A cassette file on its own: its format, and its replies against each agent file in
    `specs` that plays it (see the module docstring for how they are found)."""
    try:
        document = read_cassette(path)
    except SpecError as exc:
        return list(exc.problems)
    if not specs:
        return []
    return sorted(set(_check_replies(document, _players_of(specs, path.resolve()))))


def _players_of(specs: list[AgentSpec], cassette: Path) -> _Players:
    """The players of a cassette among several agent files, together: a reply list belongs
    to an agent of any of them (one `_model.yaml` included by two agents serves both)."""
    found = _Players()
    for spec in specs:
        agents = static_agents(spec)
        players = _players(agents, cassette)
        if not players.by_name:  # named after the agent, played with --model replay:...
            players = _as_override(agents)
        for name, agent in players.by_name.items():
            found.by_name.setdefault(name, agent)
        found.main = found.main or players.main
    return found


def _as_override(agents: list[StaticAgent]) -> _Players:
    """The players of a cassette given as `--model replay:...`: every agent (a replay override
    replaces every agent's model, so its cassette holds each agent's replies by name)."""
    found = _Players()
    for agent in agents:
        found.by_name.setdefault(agent.name, agent)
        if agent.is_main:
            found.main = agent
        if agent.core.summarization.enabled:
            found.by_name.setdefault(agent.name + SUMMARY_SUFFIX, agent)
    return found


def _check(path: Path, agents: list[StaticAgent], others: list[AgentSpec]) -> list[Problem]:
    try:
        document = read_cassette(path)
    except SpecError as exc:
        return list(exc.problems)
    players = _players(agents, path)
    for name, agent in _players_of(others, path).by_name.items():
        players.by_name.setdefault(name, agent)  # another agent file's replies
    return _check_replies(document, players)


def _check_replies(document: CassetteDocument, players: _Players) -> list[Problem]:
    problems: list[Problem] = []
    names = sorted(players.by_name)
    for key, replies in document.parsed.agents.items():
        at: tuple[str | int, ...] = ("agents", key)
        if key == MAIN:
            agent = players.main
            if agent is None:
                continue
        else:
            agent = players.by_name.get(key)
        if agent is None:
            hint = did_you_mean(key, names)
            fix = f"did you mean {hint!r}? " if hint else ""
            problems.append(
                document.problem(
                    at,
                    f"no agent named {key!r} plays this cassette; {fix}"
                    f"the agents that do: {', '.join(names) or 'none'}",
                    at_key=True,
                )
            )
            continue
        if key.endswith(SUMMARY_SUFFIX) and key != agent.name:
            continue  # the summarizer has no tools
        problems += _check_answers(document, at, replies, is_main=key == MAIN or agent.is_main)
        for index, reply in enumerate(replies):
            for number, call in enumerate(reply.tool_calls):
                call_at = (*at, index, "tool_calls", number)
                problems += _check_call(document, agent, call.name, call.args, call_at)
    return problems


def _check_answers(
    document: CassetteDocument, at: tuple[str | int, ...], replies: list[Any], *, is_main: bool
) -> list[Problem]:
    """`answers` (the `task` call a subagent's run answers) only where a run starts."""
    problems = []
    for index, reply in enumerate(replies):
        if reply.answers is None:
            continue
        if is_main:
            message = "only a subagent's replies answer a `task` call; remove `answers`"
        elif index and replies[index - 1].tool_calls:
            message = (
                "`answers` names the call a run answers, so it goes on the run's first reply "
                "(the first of the list, or one after a reply without tool calls)"
            )
        else:
            continue
        problems.append(document.problem((*at, index, "answers"), message, at_key=True))
    return problems


def _check_call(
    document: CassetteDocument,
    agent: StaticAgent,
    name: str,
    args: dict[str, Any],
    at: tuple[str | int, ...],
) -> list[Problem]:
    from runner.check.tool_args import BUILTIN_TOOL_ARGS
    from runner.check.tools import unknown_tool_message

    if name == agent.answer_tool:
        return []  # the structured answer: checked against `response_format` by the model
    if not agent.has_tool(name):
        if agent.open:
            return []  # a tool whose name only a build knows (see runner.check.tools)
        return [
            document.problem((*at, "name"), unknown_tool_message(name, agent.name, agent.tools))
        ]
    schema = agent.declared_args.get(name)
    if schema is not None:
        return _check_declared(document, name, args, schema, at)
    model = BUILTIN_TOOL_ARGS.get(name)
    if model is None:
        return []  # the spec's own tool: its schema is known when it is imported
    from pydantic import ValidationError

    problems: list[Problem] = []
    try:
        model.model_validate(args)
    except ValidationError as exc:
        allowed = sorted(model.model_fields)
        for error in exc.errors():
            loc = tuple(error["loc"])
            where = (*at, "args", *loc)
            if error["type"] == "missing":
                message = f"{name} needs the argument {loc[-1]!r}"
                problems.append(document.problem((*at, "args"), message))
            elif error["type"] == "extra_forbidden" and len(loc) == 1:
                hint = did_you_mean(str(loc[0]), allowed)
                fix = f"did you mean {hint!r}?" if hint else f"its arguments: {', '.join(allowed)}"
                message = f"{name} has no argument {loc[0]!r}; {fix}"
                problems.append(document.problem(where, message, at_key=True))
            else:
                problems.append(
                    document.problem(where, f"{name}: {error['msg'][:1].lower()}{error['msg'][1:]}")
                )
    if name == "task" and not problems:
        wanted = args.get("subagent_type")
        if wanted not in agent.subagents:
            hint = did_you_mean(str(wanted), agent.subagents)
            fix = f"did you mean {hint!r}? " if hint else ""
            message = (
                f"agent {agent.name!r} has no subagent {wanted!r}; {fix}"
                f"its subagents: {', '.join(agent.subagents)}"
            )
            problems.append(document.problem((*at, "args", "subagent_type"), message))
    return problems


def _check_declared(
    document: CassetteDocument,
    name: str,
    args: dict[str, Any],
    schema: dict[str, Any],
    at: tuple[str | int, ...],
) -> list[Problem]:
    """A call of an `http:`, `script:` or `openapi:` tool: its required arguments given, and
    no argument the tool does not have (values are checked when the tool is called)."""
    allowed = sorted(schema.get("properties") or {})
    problems = [
        document.problem((*at, "args"), f"{name} needs the argument {arg!r}")
        for arg in schema.get("required") or ()
        if arg not in args
    ]
    for arg in args:
        if arg not in allowed:
            hint = did_you_mean(arg, allowed)
            fix = f"did you mean {hint!r}?" if hint else f"its arguments: {', '.join(allowed)}"
            problems.append(
                document.problem(
                    (*at, "args", arg), f"{name} has no argument {arg!r}; {fix}", at_key=True
                )
            )
    return problems
