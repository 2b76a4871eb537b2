"""`agentctl inspect`: text, --json and --prompt, with no API key needed."""

from __future__ import annotations

import json

import pytest

import runner
from tests.conftest import AGENTS, run_cli


def test_json_has_the_promised_keys() -> None:
    done = run_cli("inspect", str(AGENTS / "writer.yaml"), "--json", env={"OPENAI_API_KEY": ""})
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert {"name", "model", "middleware", "tools", "subagents", "backend", "system_prompt"} <= set(
        info
    )
    assert info["name"] == "writer" and info["model"]["id"] == "openai:gpt-4.1-mini"
    assert info["middleware"][0] == "Todos" and "write_todos" in info["tools"]


def test_prompt_shows_the_assembled_system_prompt() -> None:
    done = run_cli("inspect", str(AGENTS / "writer.yaml"), "--prompt", "--var", "tone=dry")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("You are an editor.")
    assert "Tone: dry." in done.stdout and "## `write_todos`" in done.stdout


def test_text_view() -> None:
    done = run_cli("inspect", str(AGENTS / "writer.yaml"), process=True)  # the program itself
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("agent       writer")
    assert (
        "middleware  Todos → ToolJournal → Filesystem → LargeInputs → ReplyCheck → Summarization → PatchToolCalls"
        in done.stdout
    )


def test_every_example_describes_as_json() -> None:
    """The library behind `inspect --json`, for every example (in-process: one CLI run above)."""
    import json as jsonlib

    from runner.agent.inspect import describe
    from runner.check.validate import find_specs

    for path, _ in find_specs([AGENTS]):
        info = jsonlib.loads(jsonlib.dumps(describe(path)))
        assert info["name"] == path.stem
        assert {
            "name",
            "model",
            "middleware",
            "tools",
            "subagents",
            "backend",
            "system_prompt",
        } <= set(info)
        assert "Filesystem" in info["middleware"] and info["middleware"][-1] in (
            "PatchToolCalls",
            "HumanInTheLoop",
        )
        assert "ls" in info["tools"] and info["system_prompt"]


def test_the_chain_shown_is_the_chain_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """With fallbacks too, which need model objects: inspect resolves without models."""
    from runner.agent.build import middleware_chain, subagent_middleware
    from runner.agent.inspect import describe
    from runner.agent.resolve import Resolver

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    spec = runner.load_spec(AGENTS / "researcher.yaml")
    assert spec.model is not None and spec.model.fallbacks
    resolved = Resolver().resolve(spec)
    resolved.harness["subagents"] = subagent_middleware(resolved, compile=False)
    try:
        built = [m.name.removesuffix("Middleware") for m in middleware_chain(resolved)]
    finally:
        resolved.close()
    assert "ModelFallback" in built
    assert describe(AGENTS / "researcher.yaml")["middleware"] == built
