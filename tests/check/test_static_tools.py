"""`runner.check.tools` knows each agent's tools without building it: its lists must be the ones a
build makes, and its argument models the schemas the harness tools give the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import runner
from runner.agent.build import middleware_chain, subagent_middleware
from runner.agent.resolve import ResolvedAgent, Resolver
from runner.check.tool_args import BUILTIN_TOOL_ARGS
from runner.check.tools import static_agents
from runner.check.validate import find_specs
from tests.conftest import AGENTS
from tests.spec.files import write_files as write

EXAMPLES = sorted(path for path, _ in find_specs([AGENTS]))


def built_tools(agent: ResolvedAgent) -> list[Any]:
    agent.harness["subagents"] = subagent_middleware(agent, compile=False)
    chain = middleware_chain(agent)
    return list(agent.tools) + [t for m in chain for t in (getattr(m, "tools", None) or ())]


def built_agents(spec: runner.AgentSpec) -> dict[str, list[str]]:
    """Each agent a build makes (main and subagents, nested), by name: its tool names."""
    resolved = Resolver(with_models=False).resolve(spec)
    resolved.close()
    found: dict[str, list[str]] = {}

    def visit(agent: ResolvedAgent) -> None:
        found.setdefault(agent.name, sorted(t.name for t in built_tools(agent)))
        for sub in agent.subagents:
            if sub.agent is not None:
                visit(sub.agent)

    visit(resolved)
    return found


def static(spec: runner.AgentSpec) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for agent in static_agents(spec):
        found.setdefault(agent.name, sorted(agent.tools))
    return found


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_static_lists_are_the_built_ones_for_every_example(path: Path) -> None:
    """Equal, except that an open list (tools only a build names) lacks those tools."""
    spec = runner.load_spec(path, require_inputs=False)
    built = built_agents(spec)
    agents = {a.name: a for a in reversed(static_agents(spec))}
    assert set(agents) == set(built)
    for name, agent in agents.items():
        if agent.open:
            assert set(agent.tools) < set(built[name]), name
        else:
            assert sorted(agent.tools) == built[name], name


def test_the_static_lists_follow_backends_inheritance_and_switches(tmp_path: Path) -> None:
    spec_path = write(
        tmp_path,
        {
            "lead.yaml": """\
            name: lead
            model: replay:x.yaml
            backend:
              kind: composite
              default: {kind: local_shell, root_dir: ./ws}
              routes: {/notes/: {kind: state}}
            tools: [{import: ./t.py:lookup, name: find}]
            subagents:
              - {name: plain, description: d}
              - name: stateful
                description: d
                backend: {kind: state}
                todos: false
                filesystem: {tools: [read_file]}
                tools: []
              - {ref: ./other.yaml}
            """,
            "other.yaml": """\
            name: other
            description: From a file
            general_purpose_agent: false
            subagents: [{name: leaf, description: d}]
            """,
            "t.py": "from langchain_core.tools import tool\n\n@tool\ndef lookup(q: str) -> str:\n"
            '    """Look up."""\n    return q\n',
        },
    )
    (tmp_path / "ws").mkdir()
    spec = runner.load_spec(spec_path)
    assert static(spec) == built_agents(spec)
    assert "execute" in static(spec)["plain"] and "execute" not in static(spec)["stateful"]


def test_the_argument_models_are_the_schemas_the_model_sees(tmp_path: Path) -> None:
    spec_path = write(
        tmp_path,
        {
            "a.yaml": """\
            name: a
            model: replay:x.yaml
            backend: {kind: local_shell, root_dir: ./ws}
            subagents: [{name: s, description: d}]
            ask_user: true
            """
        },
    )
    (tmp_path / "ws").mkdir()
    resolved = Resolver(with_models=False).resolve(runner.load_spec(spec_path))
    resolved.close()
    tools = {t.name: t for t in built_tools(resolved)}
    assert set(tools) == set(BUILTIN_TOOL_ARGS)
    for name, model in BUILTIN_TOOL_ARGS.items():
        live = tools[name].tool_call_schema.model_json_schema()
        ours = model.model_json_schema()
        assert sorted(ours["properties"]) == sorted(live["properties"]), name
        assert sorted(ours.get("required", [])) == sorted(live.get("required", [])), name
        for key, prop in live["properties"].items():
            assert _types(ours["properties"][key], ours) == _types(prop, live), (name, key)


def _types(prop: dict[str, Any], root: dict[str, Any]) -> Any:
    """A property's JSON types (and enum), without descriptions and titles."""
    if "$ref" in prop:
        prop = root["$defs"][prop["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in prop:
        return sorted(str(_types(p, root)) for p in prop["anyOf"])
    items = prop.get("items")
    return (
        prop.get("type"),
        tuple(prop.get("enum", ())),
        _types(items, root) if isinstance(items, dict) else None,
        sorted(prop.get("properties", {})),
    )


@pytest.mark.parametrize("name", ["issues.yaml", "maintainer.yaml"])
def test_declared_tool_arguments_are_the_schemas_the_model_sees(name: str) -> None:
    """`http:`, `script:` and `openapi:` tools: what cassette calls are checked against."""
    spec = runner.load_spec(AGENTS / name)
    (agent, *_) = static_agents(spec)
    resolved = Resolver(with_models=False).resolve(spec)
    resolved.close()
    tools = {t.name: t for t in resolved.tools}
    assert agent.declared_args and set(agent.declared_args) <= set(tools)
    for tool_name, ours in agent.declared_args.items():
        schema = tools[tool_name].tool_call_schema
        live = schema if isinstance(schema, dict) else schema.model_json_schema()
        assert sorted(ours["properties"]) == sorted(live["properties"]), tool_name
        assert sorted(ours["required"]) == sorted(live.get("required", [])), tool_name
