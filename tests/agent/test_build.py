"""Resolve and build: the chain, models, tools, and located resolution errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import runner
from runner.agent.build import middleware_chain
from runner.agent.resolve import Resolver
from runner.errors import ResolutionError, SpecError
from tests.conftest import ROOT
from tests.fakes import ScriptedChatModel, ai

TOOLS = ROOT / "tests" / "data" / "tools" / "sample_tools.py"


def spec_file(tmp_path: Path, data: dict[str, Any], name: str = "agent.yaml") -> Path:
    data = {"name": "tester", **data}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_build_agent_from_a_path_runs(tmp_path: Path) -> None:
    path = spec_file(tmp_path, {"prompt": "Be brief.", "tools": [f"{TOOLS}:add"]})
    model = ScriptedChatModel(script=[ai("adding", ("add", {"a": 2, "b": 3})), ai("It is 5.")])
    agent = runner.build_agent(path, model=model)
    result = agent.invoke({"messages": [{"role": "user", "content": "2+3?"}]})
    assert [m.text for m in result["messages"]][-2:] == ["5", "It is 5."]
    system = model.calls[0][0]
    assert system.type == "system" and system.text.startswith("Be brief.")


def test_the_chain_order_follows_the_design(tmp_path: Path) -> None:
    path = spec_file(
        tmp_path,
        {
            "model": "openai:gpt-4.1",
            "interrupt_on": {"add": True},
            "limits": {"model_calls": 5, "tool_calls": {"add": 2}},
            "retries": {"model": 2, "tools": 1},
        },
    )
    resolved = Resolver(with_models=False).resolve(runner.load_spec(path))
    names = [m.name for m in middleware_chain(resolved)]
    assert names == [
        "TodosMiddleware",
        "ToolJournalMiddleware",
        "FilesystemMiddleware",
        "LargeInputsMiddleware",
        "ReplyCheckMiddleware",
        "SummarizationMiddleware",
        "ModelCallLimitMiddleware",
        "ToolCallLimitMiddleware[add]",
        "ModelRetryMiddleware",
        "ToolRetryMiddleware",
        "PatchToolCallsMiddleware",
        "HumanInTheLoopMiddleware",
    ]


def test_todos_false_removes_write_todos(tmp_path: Path) -> None:
    path = spec_file(tmp_path, {"model": "openai:gpt-4.1", "todos": False})
    resolved = Resolver(with_models=False).resolve(runner.load_spec(path))
    assert "TodosMiddleware" not in [m.name for m in middleware_chain(resolved)]
    assert "todos" not in [s.name for s in resolved.prompt_sections]


def test_model_override_by_string_replaces_the_specs(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    cassette.write_text("- content: replayed\n", encoding="utf-8")
    path = spec_file(tmp_path, {"model": "anthropic:claude-sonnet-4-5"})
    agent = runner.build_agent(path, model=f"replay:{cassette}")
    result = agent.invoke({"messages": [{"role": "user", "content": "hi"}]})
    assert result["messages"][-1].text == "replayed"


def test_no_model_is_a_located_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = spec_file(tmp_path, {"prompt": "x"})
    with pytest.raises(ResolutionError) as caught:
        runner.build_agent(path)
    assert str(caught.value) == (
        "agent.yaml:1:1: model: missing: set `model:` (e.g. `model: openai:gpt-4.1`) or pass --model"
    )


def test_bad_override_model_id(tmp_path: Path) -> None:
    path = spec_file(tmp_path, {"model": "openai:gpt-4.1"})
    with pytest.raises(
        ResolutionError, match=r"--model: unknown model provider 'opnai'; did you mean 'openai'\?"
    ):
        runner.build_agent(path, model="opnai:gpt-4.1")


def test_missing_provider_package_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = spec_file(tmp_path, {"model": "ollama:llama3.1"})
    with pytest.raises(ResolutionError) as caught:
        runner.build_agent(path)
    assert str(caught.value) == (
        "agent.yaml:2:8: model: model 'ollama:llama3.1' needs the ollama integration, which is "
        "not installed: pip install 'agentctl[ollama]'"
    )


def test_provider_params_are_passed_through(tmp_path: Path) -> None:
    path = spec_file(
        tmp_path,
        {
            "model": {
                "id": "openai:gpt-4.1",
                "params": {
                    "api_key": "sk-x",
                    "temperature": 0.3,
                    "max_tokens": 77,
                    "base_url": "http://127.0.0.1:9/v1",
                },
            }
        },
    )
    resolved = Resolver().resolve(runner.load_spec(path))
    chat = resolved.model.require()
    assert (chat.temperature, chat.max_tokens, chat.openai_api_base) == (
        0.3,
        77,
        "http://127.0.0.1:9/v1",
    )  # type: ignore[attr-defined]
    assert resolved.model.display_params()["api_key"] == "***"


def test_fallback_models_are_created(tmp_path: Path) -> None:
    path = spec_file(
        tmp_path,
        {
            "model": {
                "id": "openai:gpt-4.1",
                "params": {"api_key": "sk-x"},
                "fallbacks": [{"id": "openai:gpt-4.1-mini", "params": {"api_key": "sk-y"}}],
            }
        },
    )
    resolved = Resolver().resolve(runner.load_spec(path))
    assert len(resolved.model.fallbacks) == 1
    assert "ModelFallbackMiddleware" in [m.name for m in middleware_chain(resolved)]


class TestImportTools:
    def tools(self, tmp_path: Path, entries: list[Any]) -> list[Any]:
        path = spec_file(tmp_path, {"model": "openai:gpt-4.1", "tools": entries})
        return Resolver(with_models=False).resolve(runner.load_spec(path)).tools

    def test_every_kind(self, tmp_path: Path) -> None:
        tools = self.tools(
            tmp_path,
            [
                f"{TOOLS}:shout",
                f"{TOOLS}:add",
                {"import": f"{TOOLS}:make_greeters", "args": {"greeting": "Hello"}},
                {"import": f"{TOOLS}:Counter", "args": {"offset": 1}},
            ],
        )
        assert [t.name for t in tools] == ["shout", "add", "greet", "greet_loudly", "counter"]
        assert tools[1].description == "Add two whole numbers."
        assert tools[1].invoke({"a": 2, "b": 2}) == 4
        assert tools[2].invoke({"name": "Ada"}) == "Hello, Ada!"
        assert tools[4].invoke({"text": "abc"}) == 4

    def test_every_kind_from_a_file_next_to_the_spec(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "specs").mkdir()
        (tmp_path / "specs" / "my_tools.py").write_text(TOOLS.read_text(), encoding="utf-8")
        monkeypatch.chdir(tmp_path)  # refs resolve against the spec's folder, not the cwd
        path = spec_file(
            tmp_path / "specs",
            {
                "model": "openai:gpt-4.1",
                "tools": [
                    "my_tools.py:shout",
                    "./my_tools.py:add",
                    {"import": "my_tools.py:make_greeters", "args": {"greeting": "Hi"}},
                    {"import": "./my_tools.py:Counter", "args": {"offset": 2}},
                ],
            },
        )
        tools = Resolver(with_models=False).resolve(runner.load_spec(path)).tools
        assert [t.name for t in tools] == ["shout", "add", "greet", "greet_loudly", "counter"]
        assert [tools[0].invoke({"text": "a"}), tools[2].invoke({"name": "Bo"})] == ["A", "Hi, Bo!"]
        assert tools[4].invoke({"text": "abc"}) == 5

    def test_module_refs(self, tmp_path: Path) -> None:
        tools = self.tools(tmp_path, ["runner.spec:import_ref_is_file"])
        assert tools[0].name == "import_ref_is_file"

    def test_overrides(self, tmp_path: Path) -> None:
        tools = self.tools(
            tmp_path,
            [
                {
                    "import": f"{TOOLS}:shout",
                    "name": "yell",
                    "description": "Yell it.",
                    "return_direct": True,
                }
            ],
        )
        assert (tools[0].name, tools[0].description, tools[0].return_direct) == (
            "yell",
            "Yell it.",
            True,
        )

    @pytest.mark.parametrize(
        ("entry", "message"),
        [
            (
                "no_such_pkg_xyz.tools:x",
                "cannot import 'no_such_pkg_xyz.tools': no module named 'no_such_pkg_xyz'",
            ),
            (f"{TOOLS}:shoot", "has no attribute 'shoot'; did you mean 'shout'?"),
            (f"{TOOLS}:NOT_A_TOOL", "sample_tools.py:NOT_A_TOOL is int, not a tool"),
            (f"{TOOLS}:undocumented", "has no docstring; a tool needs a description"),
            (
                {"import": f"{TOOLS}:broken_factory", "args": {}},
                "broken_factory() raised RuntimeError: the factory is broken",
            ),
            ({"import": f"{TOOLS}:shout", "args": {"x": 1}}, "`args:` given, but"),
            (
                {"import": f"{TOOLS}:make_greeters", "args": {"greeting": "Hi"}, "name": "x"},
                "gave 2 tools; `name` and `description` can only override one tool",
            ),
        ],
    )
    def test_errors_are_located(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: Any, message: str
    ) -> None:
        monkeypatch.chdir(tmp_path)
        with pytest.raises(ResolutionError) as caught:
            self.tools(tmp_path, [entry])
        text = str(caught.value)
        assert text.startswith("agent.yaml:4:") and ": tools[0].import: " in text
        assert message in text

    def test_a_missing_tool_file_is_a_spec_problem_before_any_import(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        with pytest.raises(SpecError) as caught:
            self.tools(tmp_path, ["./missing.py:x"])
        assert str(caught.value) == "agent.yaml:4:3: tools[0].import: file not found: missing.py"


def test_prompt_caching_only_for_anthropic_models(tmp_path: Path) -> None:
    def chain(data: dict[str, Any]) -> list[str]:
        path = spec_file(tmp_path, data)
        return [
            m.name
            for m in middleware_chain(Resolver(with_models=False).resolve(runner.load_spec(path)))
        ]

    assert "AnthropicPromptCachingMiddleware" in chain({"model": "anthropic:claude-sonnet-4-5"})
    assert "AnthropicPromptCachingMiddleware" in chain(
        {"model": {"id": "openai:gpt-4.1", "fallbacks": ["anthropic:claude-haiku-4-5"]}}
    )
    assert "AnthropicPromptCachingMiddleware" not in chain({"model": "openai:gpt-4.1"})
    assert "AnthropicPromptCachingMiddleware" not in chain(
        {"model": "anthropic:claude-sonnet-4-5", "prompt_caching": False}
    )


def test_prompt_caching_marks_anthropic_requests(tmp_path: Path) -> None:
    from langchain_anthropic import ChatAnthropic

    captured: list[dict[str, Any]] = []

    class Capturing(ChatAnthropic):
        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            from langchain_core.messages import AIMessage
            from langchain_core.outputs import ChatGeneration, ChatResult

            captured.append(kwargs)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="cached"))])

    path = spec_file(tmp_path, {"prompt_caching": {"ttl": "1h"}})
    model = Capturing(model="claude-sonnet-4-5", api_key="sk-test")  # type: ignore[call-arg]
    agent = runner.build_agent(path, model=model)
    assert (
        agent.invoke({"messages": [{"role": "user", "content": "hi"}]})["messages"][-1].text
        == "cached"
    )
    assert captured[0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
