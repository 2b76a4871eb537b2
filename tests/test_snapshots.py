"""Golden snapshots of each example agent's assembled system prompt and tool schemas.

A change to a prompt, a tool description or a schema shows up here as a diff to review. To
accept changes on purpose: `UPDATE_SNAPSHOTS=1 scripts/test tests/test_snapshots.py`, then
read the diff of tests/snapshots/ before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

import runner
from runner.agent.build import middleware_chain, subagent_middleware
from runner.agent.resolve import ResolvedAgent, Resolver
from runner.check.validate import find_specs
from runner.middleware.prompt import preview_prompt
from tests.conftest import AGENTS, ROOT

SNAPSHOTS = ROOT / "tests" / "snapshots"
EXAMPLES = [path for path, _ in find_specs([AGENTS])]


def tool_schemas(agent: ResolvedAgent) -> list[dict[str, Any]]:
    agent.harness["subagents"] = subagent_middleware(agent, compile=False)
    tools = [
        *agent.tools,
        *(t for m in middleware_chain(agent) for t in (getattr(m, "tools", None) or ())),
    ]
    return [convert_to_openai_tool(tool) for tool in tools]


def render(agent: ResolvedAgent) -> tuple[str, dict[str, Any]]:
    prompts = [f"# {agent.name}\n\n{preview_prompt(agent.prompt_sections)}\n"]
    schemas: dict[str, Any] = {agent.name: tool_schemas(agent)}
    for sub in agent.subagents:
        if sub.agent is not None:
            prompts.append(
                f"# subagent {sub.name}\n\n{preview_prompt(sub.agent.prompt_sections)}\n"
            )
            schemas[sub.name] = tool_schemas(sub.agent)
    return "\n".join(prompts), schemas


def check(path: Path, text: str) -> None:
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(
            f"no snapshot {path.relative_to(ROOT)}: run UPDATE_SNAPSHOTS=1 pytest {__file__}"
        )
    assert text == path.read_text(encoding="utf-8"), (
        f"{path.relative_to(ROOT)} changed (see the module docstring)"
    )


@pytest.mark.parametrize("spec_path", EXAMPLES, ids=lambda p: p.stem)
def test_example_prompt_and_tools(spec_path: Path) -> None:
    spec = runner.load_spec(spec_path, require_inputs=False)  # stand-ins for required inputs
    resolved = Resolver(with_models=False).resolve(spec)
    try:
        prompts, schemas = render(resolved)
    finally:
        resolved.close()
    check(SNAPSHOTS / f"{spec_path.stem}.prompt.md", prompts)
    check(
        SNAPSHOTS / f"{spec_path.stem}.tools.json",
        json.dumps(schemas, indent=2, sort_keys=True) + "\n",
    )
