"""Static checks of agent files: what `agentctl validate` runs.

A file is valid when it loads (`runner.load_spec`: YAML, schema, paths, prompts, refs) and passes
the static checks that need no model and no network: those `run` makes before it starts
(`interrupt_on` names, `execute` without a shell backend, skills folders, replay cassettes, with
the same messages) and the cassettes it plays, checked against it (`runner.check.cassettes`).
A cassette file (by name or content) is checked as a cassette. Nothing here imports langchain.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import Problem, SpecError, display_path
from runner.load.any import load_any
from runner.load.dialects.detect import is_dialect_file
from runner.load.loader import _host_path
from runner.spec import AgentSpec
from runner.spec.base import CASSETTE_SUFFIXES, is_workflow_document

if TYPE_CHECKING:  # the workflow models are loaded with the first workflow file
    from runner.spec.workflow import WorkflowSpec

__all__ = ["SPEC_SUFFIXES", "find_specs", "validate_file"]

SPEC_SUFFIXES = (".yaml", ".yml")
TEST_SUFFIXES = (".test.yaml", ".test.yml")  # `agentctl test` files, not agents


def is_agent_file_name(path: Path) -> bool:
    """The directory rule: `*.yaml` / `*.yml` files, except cassettes (`*.cassette.yaml`), test
    files (`*.test.yaml`) and names starting with `_` or `.` (include fragments like
    `_base.yaml`)."""
    name = path.name
    return (
        name.endswith(SPEC_SUFFIXES)
        and not name.endswith(CASSETTE_SUFFIXES + TEST_SUFFIXES)
        and not name.startswith(("_", "."))
    )


def is_test_file_name(path: Path) -> bool:
    """An `agentctl test` file (`runner.testing`): `*.test.yaml` / `*.test.yml`, except names
    starting with `_` or `.`."""
    return path.name.endswith(TEST_SUFFIXES) and not path.name.startswith(("_", "."))


def not_an_agent(path: Path) -> str | None:
    """Why the YAML file at `path`, found in a folder, is not an agent file (None if it may be):
    its top level is a mapping in which no key is a key of agent files (other than `version` and
    `description`, which other YAML has too) or a near-miss of one. A file that cannot be read,
    or has the agent schema line at its top, counts as an agent file, so its problems show."""
    import difflib

    from runner.load.source import read_source, read_yaml

    try:
        text = read_source(path)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if "agent.schema.json" in "".join(text.splitlines(keepends=True)[:3]):
        return None
    value = read_yaml(text, str(path), env={}).value
    if not isinstance(value, dict) or not value or is_workflow_document(value):
        return None
    keys = _agent_keys()
    for key in value:
        # 0.72: `nmae` (0.75) is a typo of `name`; `services` and `stages` (0.67) are not
        if key in keys or difflib.get_close_matches(str(key).lower(), keys, n=1, cutoff=0.72):
            return None
    return "not an agent file: none of its top-level keys is an agent key"


def _agent_keys() -> list[str]:
    names = {field.alias or name for name, field in AgentSpec.model_fields.items()}
    return sorted((names | {"include"}) - {"version", "description"})


def find_specs(
    targets: Iterable[str | Path],
    on_skip: Callable[[Path, str], None] | None = None,
    *,
    with_cassettes: bool = False,
) -> Iterator[tuple[Path, Problem | None]]:
    """Each target file, or the agent files (and cassettes, `with_cassettes`) directly inside
    each target directory. Files of a directory that pass the name rule but are other YAML
    (`not_an_agent`) go to `on_skip`."""
    for target in targets:
        path = Path(target)
        if path.is_dir():
            found = 0
            for candidate in sorted(path.iterdir()):
                if candidate.is_file() and candidate.name.endswith(CASSETTE_SUFFIXES):
                    if with_cassettes:
                        yield candidate, None
                    continue
                if candidate.is_file() and is_dialect_file(candidate):
                    found += 1
                    yield candidate, None
                    continue
                if not (candidate.is_file() and is_agent_file_name(candidate)):
                    continue
                reason = not_an_agent(candidate)
                if reason is None:
                    found += 1
                    yield candidate, None
                elif on_skip is not None:
                    on_skip(candidate, reason)
            if not found:
                yield path, Problem(display_path(path), 0, 0, "", "no agent files (*.yaml) here")
        elif path.exists():
            yield path, None
        else:
            yield path, Problem(display_path(path), 0, 0, "", "no such file or directory")


def validate_file(
    path: str | Path,
    *,
    vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    allow_unused_vars: bool = False,
    cache: LoadCache | None = None,
) -> list[Problem]:
    """Every problem in the agent file (or cassette) at `path`; an empty list when it is valid.
    Several calls on unchanged files may share a `cache` of loaded specs (a dict)."""
    return check_file(
        path, vars=vars, env=env, allow_unused_vars=allow_unused_vars, cache=cache
    ).problems


@dataclass(frozen=True)
class FileReport:
    problems: list[Problem]
    note: str | None = None
    """What a reader of `ok: FILE` should know: a cassette that no agent file here plays was
    checked for its format only."""
    warnings: list[Problem] = field(default_factory=list)
    """What is valid but likely a mistake (`spec_warnings`): printed, not failed on."""


def check_file(
    path: str | Path,
    *,
    vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    allow_unused_vars: bool = False,
    cache: LoadCache | None = None,
) -> FileReport:
    """`validate_file`, with a note for a cassette checked without an agent."""
    path = Path(path)
    named = path.name.endswith(CASSETTE_SUFFIXES)
    if not named:
        try:
            spec = _load(path, vars=vars, env=env, allow_unused_vars=allow_unused_vars, cache=cache)
        except SpecError as exc:
            if not looks_like_cassette(path):  # (only a file that is no agent is looked at)
                problems = set(exc.problems) | set(_skill_problems_of_unloaded(path, env))
                return FileReport(sorted(problems))
        else:
            if not isinstance(spec, AgentSpec):  # a workflow
                return _check_workflow(spec, cache)
            found = set(skill_problems(spec)) | set(sandbox_spec_problems(spec))
            found |= set(static_problems(spec, cache=cache))
            return FileReport(sorted(found), warnings=spec_warnings(spec))
    from runner.check.cassettes import cassette_problems

    agents = agents_playing(path, vars=vars, env=env, cache=cache)
    note = None
    if not agents:
        note = (
            "a cassette, checked for its format only: no agent file in its folder plays it or is "
            "named after it; validate the agent file to check its replies against it"
        )
    return FileReport(cassette_problems(path, agents), note)


def _check_workflow(spec: WorkflowSpec, cache: LoadCache | None) -> FileReport:
    """A workflow's own checks (`runner.check.workflow`), and its agents' as an agent file's
    (each cassette once, checked against every agent of the workflow that plays it)."""
    from runner.check.cassettes import replay_problems
    from runner.check.workflow import workflow_problems

    found = set(workflow_problems(spec))
    agents = list(spec.agent_specs().values())
    checked: set[Path] = set()
    warnings: list[Problem] = []
    for agent in agents:
        found |= set(skill_problems(agent)) | set(sandbox_spec_problems(agent))
        found |= set(static_problems(agent, cassettes=False))
        if any(m.startswith("replay:") for m in _model_ids(agent)):
            found |= set(
                replay_problems(
                    agent,
                    checked=checked,
                    also_played_by=lambda cassette: [
                        *agents,
                        *agents_playing(cassette, cache=cache),
                    ],
                )
            )
        warnings += [w for w in spec_warnings(agent) if w not in warnings]
    return FileReport(sorted(found), warnings=warnings)


def _model_ids(spec: AgentSpec) -> list[str]:
    from runner.check.tools import static_agents

    agents = static_agents(spec)
    summarizers = [a.core.summarization.model for a in agents]
    return (
        [m for a in agents for m, _, _ in a.models]
        + [m.id for m in summarizers if m is not None]
        + [f.id for m in summarizers if m is not None for f in m.fallbacks]
    )


LoadCache = dict[tuple[Any, ...], "AgentSpec | WorkflowSpec | SpecError"]


def _load(
    path: Path,
    *,
    vars: Mapping[str, Any] | None,
    env: Mapping[str, str] | None,
    allow_unused_vars: bool,
    cache: LoadCache | None,
) -> AgentSpec | WorkflowSpec:
    """`load_any`, remembered in `cache` (one `agentctl validate`): validating a folder would
    load an agent file once for itself and again for each of its cassettes."""
    if env is not None or cache is None:
        return load_any(
            path, vars=vars, env=env, allow_unused_vars=allow_unused_vars, require_inputs=False
        )
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = None
    key = (str(path.resolve()), stamp, repr(sorted((vars or {}).items())), allow_unused_vars)
    found = cache.get(key)
    if found is None:
        try:
            found = load_any(
                path, vars=vars, allow_unused_vars=allow_unused_vars, require_inputs=False
            )
        except SpecError as exc:
            found = exc
        cache[key] = found
    if isinstance(found, SpecError):
        raise found
    return found


def looks_like_cassette(path: Path) -> bool:
    """A cassette by name, or a YAML file whose content is one (see `is_cassette`)."""
    from runner.check.cassettes import is_cassette
    from runner.load.source import read_source, read_yaml

    if path.name.endswith(CASSETTE_SUFFIXES):
        return True
    try:
        text = read_source(path)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if "agent.schema.json" in "".join(text.splitlines(keepends=True)[:3]):
        return False
    return is_cassette(path, read_yaml(text, str(path), env={}).value)


def agents_playing(
    cassette: Path,
    *,
    vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    cache: LoadCache | None = None,
) -> list[AgentSpec]:
    """The agent files a cassette serves: those in its folder that play it (`replay:`, written
    in them or in a file they include), and the one it is named after (`coder.cassette.yaml`,
    `coder.reject.cassette.yaml`: `coder.yaml`).
    Files that do not load are left out (validating them shows why)."""
    from runner.load.source import read_source

    target = cassette.resolve()
    stem = cassette.name
    for suffix in CASSETTE_SUFFIXES:
        stem = stem.removesuffix(suffix)
    named = {
        f"{'.'.join(stem.split('.')[:n])}{ext}"
        for n in range(1, stem.count(".") + 2)
        for ext in SPEC_SUFFIXES
    }
    found: list[AgentSpec] = []
    for candidate in sorted(cassette.parent.iterdir()) if cassette.parent.is_dir() else []:
        if not (candidate.is_file() and is_agent_file_name(candidate)):
            continue
        try:
            text = read_source(candidate)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if candidate.name not in named and cassette.name not in text and "include" not in text:
            continue  # not named after it, not mentioning it, no include: not worth loading
        try:
            loaded = _load(candidate, vars=vars, env=env, allow_unused_vars=True, cache=cache)
        except SpecError:
            continue
        specs = [loaded] if isinstance(loaded, AgentSpec) else list(loaded.agent_specs().values())
        if candidate.name in named or any(target in _replayed(spec) for spec in specs):
            found += specs
    return found


def _replayed(spec: AgentSpec) -> set[Path]:
    from runner.check.tools import static_agents

    return {
        Path(m.partition(":")[2]).resolve()
        for agent in static_agents(spec)
        for m, _, _ in agent.models
        if m.startswith("replay:")
    }


def budget_problems(spec: AgentSpec, agents: list[Any]) -> list[Problem]:
    """Budgets only on the main agent (they count the whole run), and with `limits.cost`, a
    price for every model an agent of the run may call."""
    from runner.spec.agent import InlineSubagent

    problems: list[Problem] = []
    for index, entry in enumerate(spec.subagents):
        if not isinstance(entry, InlineSubagent):
            continue
        for key in ("tokens", "time", "cost"):
            if getattr(entry.limits, key) is not None:
                problems.append(
                    spec.problem(
                        ("subagents", index, "limits", key),
                        f"a budget counts the whole run, subagents included: set `limits.{key}` "
                        "on the main agent",
                    )
                )
    if spec.limits.cost is None:
        return problems
    cost_at = spec.problem(("limits", "cost"), "")
    need = f"`limits.cost` ({cost_at.file}:{cost_at.line}:{cost_at.col}) needs its price"
    models = [(a.core.model, (*a.where, "model"), a.locate) for a in agents]
    gp_model = spec.general_purpose_agent.model
    if spec.general_purpose_agent.enabled and gp_model is not None:
        models.append((gp_model, ("general_purpose_agent", "model"), spec.problem))
    for model, at, locate in models:
        if model is None:
            continue  # inherited: checked where it is written
        if model.price is None:
            problems.append(locate(at, f"{model.id} has no `price`; {need}"))
        for number, fallback in enumerate(model.fallbacks):
            if fallback.price is None:
                problems.append(
                    locate((*at, "fallbacks", number), f"{fallback.id} has no `price`; {need}")
                )
    return problems


def static_problems(
    spec: AgentSpec, *, cassettes: bool = True, cache: LoadCache | None = None
) -> list[Problem]:
    """What `run` refuses before it starts, found without building: tool names in
    `interrupt_on`, `execute` in `filesystem.tools` or a `script:` tool without a shell
    backend, a `fraction` threshold that a replay model cannot size, and the replay cassettes
    (see `runner.check.cassettes`). The messages are the ones `run` prints. Also a `permissions`
    rule matching no tool, which `run` accepts (the rule never applies) and `validate` reports."""
    from runner.check.tools import (
        execute_message,
        fraction_message,
        script_message,
        static_agents,
        unknown_tool_message,
    )
    from runner.spec import ScriptTool

    problems: list[Problem] = []
    agents = static_agents(spec)
    for agent in agents:
        core, where = agent.core, agent.where
        if agent.explicit_interrupts and not agent.open:
            for name in core.interrupt_on:
                if not agent.has_tool(name):
                    message = unknown_tool_message(name, agent.name, agent.tools)
                    at = (*where, "interrupt_on", name)
                    problems.append(agent.locate(at, message, at_key=True))
        wanted = core.filesystem.tools
        if wanted is not None and "execute" in wanted and not agent.executes:
            kind = core.backend.kind if core.backend is not None else "state"
            problems.append(
                agent.locate(
                    (*where, "filesystem", "tools", wanted.index("execute")), execute_message(kind)
                )
            )
        if agent.is_main or "permissions" in core.model_fields_set:
            problems += _permission_problems(agent, agents)
        if not agent.executes and (agent.is_main or "tools" in core.model_fields_set):
            kind = core.backend.kind if core.backend is not None else "state"
            for index, entry in enumerate(core.tools):
                if isinstance(entry, ScriptTool):
                    at = (*where, "tools", index, "script")
                    problems.append(agent.locate(at, script_message(kind)))
        settings = core.summarization
        model_id = agent.models[0][0] if agent.models else ""
        if settings.enabled and agent.context_window is None and model_id.startswith("replay:"):
            # a replay model reports no context window (another provider's may: see run)
            for key in ("trigger", "keep"):
                threshold = getattr(settings, key)
                if threshold is not None and threshold.fraction is not None:
                    at = (*where, "summarization", key, "fraction")
                    problems.append(agent.locate(at, fraction_message(model_id)))
                    break
    problems += budget_problems(spec, agents)
    if not cassettes or not any(i.startswith("replay:") for i in _model_ids(spec)):
        return problems  # (and the cassette checks are not imported)
    from runner.check.cassettes import replay_problems

    return problems + replay_problems(
        spec, also_played_by=lambda cassette: agents_playing(cassette, cache=cache)
    )


def spec_warnings(spec: AgentSpec) -> list[Problem]:
    """What `validate` warns about and `run` accepts: a `script:` tool whose `command` hands a
    `{placeholder}` to a shell (`sh -c`, `bash -c`, `env sh -c`, ...) or an interpreter
    (`python -c`, `perl -e`, `ruby -e`, `node -e`) inside the code it runs, where a value with
    `;`, `$(...)` or a quote runs as code. Each agent file's own tools, once."""
    from runner.check.tools import code_with_placeholder, is_shell, static_agents
    from runner.spec import ScriptTool

    warnings: list[Problem] = _load_warnings(spec, set())
    for agent in static_agents(spec):
        if not (agent.is_main or "tools" in agent.core.model_fields_set):
            continue  # inherited tools are warned about where they are written
        for index, entry in enumerate(agent.core.tools):
            if not isinstance(entry, ScriptTool):
                continue
            command = entry.script.command
            found = code_with_placeholder(command)
            if found is None:
                continue
            position, name = found
            shown = " ".join(command[:position])
            at = (*agent.where, "tools", index, "script", "command", position)
            message = (
                f"{{{name}}} is inside the code `{shown}` runs: a value holding `;`, `$(...)` or "
                "a quote runs as code. Pass it as an argument after the code instead"
            )
            if is_shell(command, position):
                message += (
                    f", e.g. [sh, -c, 'grep -- \"$1\" notes.txt', sh, '{{{name}}}'] "
                    "(the shell reads it as $1, never as code)"
                )
            else:
                message += (
                    ", and read it there (`sys.argv[1]` in Python, `$ARGV[0]` in Perl, "
                    "`ARGV[0]` in Ruby, `process.argv[1]` in Node)"
                )
            warnings.append(agent.locate(at, message))
    return warnings


def _load_warnings(spec: AgentSpec, seen: set[int]) -> list[Problem]:
    """What loading found in the files of other tools (`runner.load.dialects`): the agent's own
    and those of the agent files its subagents ref, once each."""
    from runner.spec import RefSubagent

    if id(spec) in seen:
        return []
    seen.add(id(spec))
    found = list(spec.load_warnings)
    for entry in spec.subagents:
        if isinstance(entry, RefSubagent) and entry._spec is not None:
            found += _load_warnings(entry._spec, seen)
    return found


def _permission_problems(agent: Any, agents: list[Any]) -> list[Problem]:
    """A `permissions` rule whose tool pattern matches no tool of the agent or of any agent
    under it (subagents inherit deny rules): a typo, reported as `interrupt_on` names are.
    Skipped when some agent's tools are only known after a build."""
    from fnmatch import fnmatchcase

    from runner.check.tools import unknown_tool_message

    if any(a.open for a in agents):
        return []
    tools = sorted({tool for a in agents for tool in a.tools})
    found: list[Problem] = []
    for kind in ("deny", "allow"):
        for index, rule in enumerate(getattr(agent.core.permissions, kind)):
            if any(fnmatchcase(tool, rule.tool) for tool in tools):
                continue
            at = (*agent.where, "permissions", kind, index, "tool")
            if any(c in rule.tool for c in "*?["):
                message = f"{rule.tool!r} matches no tool of agent {agent.name!r} or its subagents"
                found.append(agent.locate(at, message))
            else:
                found.append(agent.locate(at, unknown_tool_message(rule.tool, agent.name, tools)))
    return found


def _skill_problems_of_unloaded(path: Path, env: Mapping[str, str] | None) -> list[Problem]:
    """The host skills folders named at the top of a file that did not load (so its other
    problems and these show together): missing folders and bad SKILL.md files."""
    from runner.load.source import read_source, read_yaml

    try:
        doc = read_yaml(read_source(path), display_path(path), env)
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    skills = doc.value.get("skills") if isinstance(doc.value, dict) else None
    if not isinstance(skills, list) or ("skills",) in doc.failed_paths:
        return []
    problems: list[Problem] = []
    failed = doc.failed_paths
    for index, entry in enumerate(skills):
        if not isinstance(entry, str) or entry.startswith("/") or ("skills", index) in failed:
            continue  # a backend folder, or a value the loader reports itself
        at = doc.pos.children["skills"].children[index].loc.problem(f"skills[{index}]", "")
        problems += _skills_folder_problems(_host_path(entry, path.parent), at)
    return problems


def _skills_folder_problems(folder: Path, at: Problem) -> list[Problem]:
    """A missing host skills folder (located where `at` is, the key that names it), or the
    problems of its SKILL.md files (located in them)."""
    from runner.load.skills import discover

    if not folder.is_dir():
        return [replace(at, message=f"skills folder not found: {display_path(folder)}")]
    return discover([(folder, "/skills/")]).problems


def skill_problems(spec: AgentSpec, seen: set[str] | None = None) -> list[Problem]:
    """Problems in the host skills folders of an agent, its inline subagents and its ref'd
    files: a missing folder (located at the spec's key), a bad SKILL.md (located in it)."""
    from runner.spec import InlineSubagent, RefSubagent

    seen = set() if seen is None else seen
    if spec.source in seen:
        return []
    seen.add(spec.source or "")
    problems: list[Problem] = []
    cores: list[tuple[tuple[str | int, ...], Any]] = [((), spec)]
    cores += [
        (("subagents", i), s) for i, s in enumerate(spec.subagents) if isinstance(s, InlineSubagent)
    ]
    for where, core in cores:
        for index, entry in enumerate(core.skills):
            if entry.host is None:
                continue  # in the backend: checked when the agent runs
            at = spec.problem((*where, "skills", index), "")
            problems += _skills_folder_problems(Path(entry.host), at)
    for entry in spec.subagents:
        if isinstance(entry, RefSubagent) and entry._spec is not None:
            problems.extend(skill_problems(entry._spec, seen))
    return problems


def sandbox_spec_problems(spec: AgentSpec, seen: set[str] | None = None) -> list[Problem]:
    """What this machine lacks for the `local_shell` sandboxes of an agent, its inline subagents
    and its ref'd files (`sandbox: bubblewrap` without bubblewrap, missing extra paths), located
    at the key."""
    from runner.spec import InlineSubagent, RefSubagent
    from runner.spec.backend import has_local_shell

    seen = set() if seen is None else seen
    if spec.source in seen:
        return []
    seen.add(spec.source or "")
    cores: list[tuple[tuple[str | int, ...], Any]] = [((), spec)]
    cores += [
        (("subagents", i), s) for i, s in enumerate(spec.subagents) if isinstance(s, InlineSubagent)
    ]
    shells = [
        (where, core.backend)
        for where, core in cores
        if core.backend is not None and has_local_shell(core.backend)
    ]
    problems: list[Problem] = []
    if shells:  # (else the sandbox module stays unimported: start-up)
        from runner.backends.sandbox import sandbox_problems

        problems = [
            spec.problem(at, message)
            for where, backend in shells
            for at, message in sandbox_problems(backend, (*where, "backend"))
        ]
    for entry in spec.subagents:
        if isinstance(entry, RefSubagent) and entry._spec is not None:
            problems.extend(sandbox_spec_problems(entry._spec, seen))
    return problems
