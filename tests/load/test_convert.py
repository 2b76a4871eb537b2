"""`agentctl convert`: other tools' agent files to agentctl YAML (commented where not exact),
agentctl agents to each tool's format with a loss report, and to a deepagents script."""

from __future__ import annotations

import importlib.util
import io
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.load.loader import load_spec
from tests.conftest import AGENTS, ROOT

DATA = ROOT / "tests" / "data" / "dialects"


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code: Any = main(list(args))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the samples: a project with .claude/, .github/, .codex/ and adk/."""
    shutil.copytree(DATA, tmp_path / "project")
    return tmp_path / "project"


LOSSLESS = [
    (".claude/agents/reviewer.md", "claude", "back.md"),
    (".github/agents/planner.agent.md", "copilot", "back.agent.md"),
    (".codex/agents/fixer.toml", "codex", "back.toml"),
    ("adk/weather_agent.yaml", "adk", "back.yaml"),
]


@pytest.mark.parametrize(("sample", "dialect", "back"), LOSSLESS, ids=[d for _, d, _ in LOSSLESS])
def test_a_lossless_round_trip_through_yaml_gives_back_the_same_file(
    project: Path, sample: str, dialect: str, back: str
) -> None:
    original = project / sample
    as_yaml = project / "converted.yaml"
    code, _, err = cli("convert", str(original), "--to", "yaml", "-o", str(as_yaml))
    assert code == 0, err
    assert "loss:" not in err
    code, _, err = cli("convert", str(as_yaml), "--to", dialect, "-o", str(project / back))
    assert code == 0, err
    assert "loss:" not in err
    assert (project / back).read_text() == original.read_text()


@pytest.mark.parametrize(
    "sample",
    [
        ".claude/agents/auditor.md",
        ".github/agents/docs-writer.agent.md",
        ".codex/agents/explorer.toml",
        "adk/root_agent.yaml",
    ],
)
def test_yaml_from_another_tool_loads_as_the_same_agent(project: Path, sample: str) -> None:
    original = project / sample
    as_yaml = project / "sub" / "converted.yaml"
    as_yaml.parent.mkdir()
    code, _, err = cli("convert", str(original), "--to", "yaml", "-o", str(as_yaml))
    assert code == 0, err
    direct = load_spec(original, allow_unused_vars=True)
    converted = load_spec(as_yaml, allow_unused_vars=True)
    assert converted.model_dump(exclude={"subagents"}) == direct.model_dump(exclude={"subagents"})
    assert [s.model_dump(exclude={"ref"}) for s in converted.subagents] == [
        s.model_dump(exclude={"ref"}) for s in direct.subagents
    ]


def test_every_field_without_an_exact_equivalent_is_a_comment_in_the_yaml(project: Path) -> None:
    code, text, err = cli("convert", str(project / ".claude/agents/auditor.md"), "--to", "yaml")
    assert code == 0, err
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert (
        "# filesystem: from tools: Read, Grep, WebFetch, mcp__github__search_issues, "
        "TodoWrite in the original"
    ) in comments
    assert "# model: `inherit` in the original: the parent agent's model or --model" in comments
    assert "# limits: maxTurns in the original: agentctl counts model calls" in comments
    assert "# filesystem: permissionMode: plan in the original: no commands or edits" in comments
    assert comments[-4:] == [
        "# Not converted (agentctl does not run these fields of the original):",
        "#   tools: WebFetch  (no agentctl equivalent)",
        "#   tools: mcp__github__search_issues  (no agentctl equivalent)",
        "#   color: purple  (a display color of Claude Code)",
    ]
    # the prompt's `${...}` and `{{ ... }}` were text there and stay text here
    assert "$${MANIFEST_POLICY}" in text and "{% raw %}" in text


def test_exports_report_what_the_target_cannot_express(tmp_path: Path) -> None:
    code, text, err = cli("convert", str(AGENTS / "coder.yaml"), "--to", "claude")
    assert code == 0, err
    losses = [line for line in err.splitlines() if line.startswith("loss: ")]
    assert losses == [
        "loss: backend: claude cannot express the shell's paths, env or network",
        "loss: model: Claude Code runs Anthropic models; openai:gpt-4.1 is kept as written",
        "loss: interrupt_on (execute): Claude Code chooses approvals by permission mode and none "
        "matches; the default mode is written (it asks before commands and edits)",
        "loss: limits.tool_calls: claude cannot express budgets other than maxTurns",
    ]
    # and they are comments in the front matter, which still reads as this agent
    assert text.startswith("---\n# agentctl convert: claude cannot express:\n")
    out = tmp_path / ".claude" / "agents" / "coder.md"
    out.parent.mkdir(parents=True)
    out.write_text(text)
    spec = load_spec(out)
    assert spec.name == "coder" and spec.filesystem.tools is not None
    assert "execute" in spec.filesystem.tools


@pytest.mark.parametrize("target", ["copilot", "codex", "adk"])
def test_every_export_loads_back(tmp_path: Path, target: str) -> None:
    names = {"copilot": "coder.agent.md", "codex": "coder.toml", "adk": "root_agent.yaml"}
    out = tmp_path / names[target]
    code, _, err = cli("convert", str(AGENTS / "coder.yaml"), "--to", target, "-o", str(out))
    assert code == 0, err
    assert any(line.startswith(("loss: interrupt_on", "loss: limits")) for line in err.splitlines())
    spec = load_spec(out, allow_unused_vars=True)
    assert spec.name == "coder"
    original = load_spec(AGENTS / "coder.yaml").prompt
    assert spec.prompt is not None and original is not None
    assert spec.prompt.rstrip("\n") == original.rstrip("\n")


def test_python_export_is_a_script(project: Path) -> None:
    code, text, err = cli("convert", str(project / "adk" / "root_agent.yaml"), "--to", "python")
    assert code == 0, err
    compile(text, "travel_helper.py", "exec")
    assert "from tools_pkg.packing import packing_list as tool_0" in text
    assert "model=init_chat_model('google_genai:gemini-2.5-flash', temperature=0.2)," in text
    assert "'name': 'weather_agent'" in text
    assert "loss: general_purpose_agent: create_deep_agent always adds it" in err


@pytest.mark.parametrize(
    "sample", [".claude/agents/reviewer.md", ".github/agents/planner.agent.md"]
)
def test_python_export_builds_with_deepagents(
    project: Path, sample: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """deepagents is not a dependency of agentctl (the bench extra installs it): where it is
    installed, the script builds its agent (no model is called)."""
    if importlib.util.find_spec("deepagents") is None:
        pytest.skip("deepagents is not installed")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-used")
    script = project / "agent.py"
    code, _, err = cli("convert", str(project / sample), "--to", "python", "-o", str(script))
    assert code == 0, err
    namespace: dict[str, Any] = {"__name__": "converted", "__file__": str(script)}
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    graph = namespace["agent"]
    assert graph.name == Path(sample).name.split(".")[0]
    backend = "LocalShellBackend" if "reviewer" in sample else "FilesystemBackend"
    assert f"backend={backend}(root_dir=HERE / '.'," in script.read_text()


def test_a_file_that_does_not_load_is_not_converted(tmp_path: Path) -> None:
    agent = tmp_path / "bad.toml"
    agent.write_text('name = "a"\nmodel = \n')
    code, text, err = cli("convert", str(agent), "--to", "yaml")
    assert (code, text) == (2, "")
    assert err.startswith(f"{agent}:2:9: TOML syntax error")


def test_an_agentctl_file_to_yaml_is_refused(tmp_path: Path) -> None:
    code, _, err = cli("convert", str(AGENTS / "coder.yaml"), "--to", "yaml")
    assert code == 2
    assert "already an agentctl YAML file" in err


def test_settings_inside_the_keys_a_target_has_are_losses_too(tmp_path: Path) -> None:
    agent = tmp_path / "a.yaml"
    agent.write_text(
        "name: a\n"
        "model: {id: 'anthropic:claude-sonnet-4-5', context_window: 100000}\n"
        "filesystem: {tools: [read_file], tool_descriptions: {read_file: Read it.}}\n"
        "general_purpose_agent: {description: Helps.}\n"
        "prompt: Hi.\n"
    )
    code, text, err = cli("convert", str(agent), "--to", "claude")
    assert code == 0, err
    assert [line for line in err.splitlines() if line.startswith("loss: ")] == [
        "loss: model.context_window: claude has no field for it",
        "loss: filesystem.tool_descriptions: claude has no field for it",
        "loss: general_purpose_agent.description: claude has no field for it",
    ]
    assert "tools: Read, TodoWrite, Task\n" in text


def test_max_turns_goes_back_to_claude_code(tmp_path: Path) -> None:
    """A Claude Code agent's maxTurns runs as limits.model_calls and is written back as maxTurns."""
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    original = "---\nname: r\ndescription: Reviews.\nmaxTurns: 7\n---\n\nReview.\n"
    (agents / "r.md").write_text(original)
    code, text, err = cli("convert", str(agents / "r.md"), "--to", "claude")
    assert code == 0, err
    assert "loss:" not in err
    assert text == original
