"""Agent files of other tools (Claude Code, Copilot, Codex, ADK) load as agentctl agents: their
fields mapped, what has no exact equivalent a warning located in the original file."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
import yaml

from runner.errors import SpecError
from runner.load.dialects import markdown
from runner.load.loader import load_spec
from runner.spec import FilesystemBackendSpec, ImportTool, LocalShellBackendSpec, McpTool
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "dialects"
CLAUDE = DATA / ".claude" / "agents"
COPILOT = DATA / ".github" / "agents"
CODEX = DATA / ".codex" / "agents"
ADK = DATA / "adk"
TEAM = DATA / "adk_team"


def warnings_of(path: Path) -> list[str]:
    return [str(w) for w in load_spec(path, allow_unused_vars=True).load_warnings]


# --------------------------------------------------------------------------- Claude Code


def test_a_claude_agent_maps_name_description_tools_model_and_prompt() -> None:
    spec = load_spec(CLAUDE / "reviewer.md")
    assert spec.name == "reviewer"
    assert spec.description == (
        "Reviews a change for bugs and missing tests. Use after code is written."
    )
    assert spec.model is not None and spec.model.id == "anthropic:claude-sonnet-4-5"
    assert spec.filesystem.tools == ["read_file", "grep", "glob", "execute"]
    assert not spec.todos and not spec.general_purpose_agent.enabled
    assert isinstance(spec.backend, LocalShellBackendSpec)
    assert Path(spec.backend.root_dir) == DATA  # the folder holding .claude/
    assert spec.prompt is not None
    assert spec.prompt.startswith("You review code changes in this repository.\n\n1. Read")
    assert spec.prompt.endswith("Do not edit files.")
    # Claude Code asks before a command (its default permission mode): so does agentctl
    assert spec.interrupt_on == {"execute": True}


@pytest.mark.parametrize(
    ("mode", "tools", "approvals"),
    [
        ("", "", {"execute", "write_file", "edit_file"}),
        ("permissionMode: acceptEdits\n", "", {"execute"}),
        ("permissionMode: bypassPermissions\n", "", set()),
        ("", "tools: Read, Edit\n", {"edit_file"}),
        ("permissionMode: plan\n", "", set()),
    ],
)
def test_the_permission_mode_is_which_tools_wait_for_an_approval(
    tmp_path: Path, mode: str, tools: str, approvals: set[str]
) -> None:
    agent = tmp_path / "a.md"
    agent.write_text(f"---\nname: a\ndescription: d\n{mode}{tools}---\nHi.\n")
    spec = load_spec(agent)
    assert set(spec.interrupt_on) == approvals
    if "plan" in mode:
        assert spec.filesystem.tools == ["ls", "read_file", "glob", "grep"]


def test_claude_tool_names_are_located_warnings_naming_the_agentctl_tool() -> None:
    shown = "tests/data/dialects/.claude/agents/auditor.md"
    assert warnings_of(CLAUDE / "auditor.md") == [
        f"{shown}:4:8: tools[0]: Claude Code tool 'Read' runs as agentctl's `read_file`",
        f"{shown}:4:14: tools[1]: Claude Code tool 'Grep' runs as agentctl's `grep`",
        f"{shown}:4:20: tools[2]: Claude Code tool 'WebFetch' has no agentctl equivalent; "
        "agentctl has no built-in web tool: add an MCP server or an `http:` tool (left out)",
        f"{shown}:4:30: tools[3]: Claude Code tool 'mcp__github__search_issues' has no agentctl "
        "equivalent; an MCP server's tools are an agentctl `tools: [{mcp: {name: ..., command: "
        "...}}]` entry (left out)",
        f"{shown}:4:58: tools[4]: Claude Code tool 'TodoWrite' runs as agentctl's `write_todos`",
        f"{shown}:6:17: permissionMode: plan runs with the tools that change nothing",
        f"{shown}:8:1: maxTurns: runs as `limits.model_calls` (model calls, not turns)",
        f"{shown}:7:1: color: not run by agentctl: a display color of Claude Code",
    ]


def test_inherit_leaves_the_model_to_the_parent_and_the_prompt_is_text() -> None:
    spec = load_spec(CLAUDE / "auditor.md")
    assert spec.model is None
    assert spec.filesystem.tools == ["read_file", "grep"]
    assert spec.todos and spec.limits.model_calls == 12
    assert isinstance(spec.backend, FilesystemBackendSpec)  # no Bash: no shell
    assert spec.prompt is not None
    assert "against ${MANIFEST_POLICY} and note {{ anything odd }}." in spec.prompt


def test_a_tool_with_a_close_agentctl_name_suggests_it(tmp_path: Path) -> None:
    agent = tmp_path / "a.md"
    agent.write_text("---\nname: a\ndescription: d\ntools: Glob, read_files\n---\nHi.\n")
    assert warnings_of(agent)[1] == (
        f"{agent}:4:14: tools[1]: Claude Code tool 'read_files' has no agentctl equivalent; "
        "the closest agentctl tool is `read_file` (left out)"
    )


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        (
            "name: a\ndescription: d\nmodel: [sonnet]\n",
            "4:8: model: expected a model alias (sonnet, opus, haiku, inherit) or a model id",
        ),
        ("name: a\ndescription: [d\n", "3:14: YAML syntax error"),
        ("name: Bad Name\ndescription: d\ncolour: red\n", "4:1: colour: not run by agentctl: "),
    ],
)
def test_front_matter_problems_point_at_the_line_in_the_file(
    tmp_path: Path, front: str, expected: str
) -> None:
    agent = tmp_path / "a.md"
    agent.write_text(f"---\n{front}---\nThe prompt.\n")
    try:
        found = warnings_of(agent)
    except SpecError as exc:
        found = [str(p) for p in exc.problems]
    assert any(line.startswith(f"{agent}:{expected}") for line in found), found


def test_an_unknown_field_says_what_it_may_mean(tmp_path: Path) -> None:
    agent = tmp_path / "a.md"
    agent.write_text("---\nname: a\ndescription: d\ntool: Read\n---\nHi.\n")
    assert warnings_of(agent) == [
        f"{agent}:4:1: tool: not run by agentctl: unknown Claude Code field; did you mean 'tools'?"
    ]


def test_the_prompt_starts_on_its_line_in_the_file(tmp_path: Path) -> None:
    agent = tmp_path / "a.md"
    agent.write_text("---\nname: a\ndescription: d\n---\n\nLine one.\nLine two.\n")
    fm = markdown.split(agent.read_text(), str(agent))
    assert (fm.body, fm.body_line) == ("Line one.\nLine two.", 6)


# --------------------------------------------------------------------------- Copilot


def test_a_copilot_agent_maps_tool_aliases_and_its_model_name() -> None:
    spec = load_spec(COPILOT / "planner.agent.md")
    assert spec.name == "planner"
    assert spec.model is not None and spec.model.id == "anthropic:claude-sonnet-4-5"
    assert spec.filesystem.tools == ["read_file", "ls", "grep", "glob"]
    assert spec.todos and not spec.general_purpose_agent.enabled
    assert isinstance(spec.backend, FilesystemBackendSpec)
    assert Path(spec.backend.root_dir) == DATA  # the folder holding .github/


def test_every_copilot_field_agentctl_does_not_map_is_reported() -> None:
    shown = "tests/data/dialects/.github/agents/docs-writer.agent.md"
    spec = load_spec(COPILOT / "docs-writer.agent.md")
    assert spec.name == "docs-writer"
    assert spec.model is not None and spec.model.id == "openai:gpt-5"
    assert [f.id for f in spec.model.fallbacks] == ["anthropic:claude-sonnet-4-5"]
    found = [str(w) for w in spec.load_warnings]
    assert found[0] == (
        f"{shown}:2:7: name: 'Docs Writer' is not an agentctl name; runs as 'docs-writer'"
    )
    assert f"{shown}:8:5: tools[2]: Copilot tool 'fetch' has no agentctl equivalent" in "\n".join(
        found
    )
    assert f"{shown}:9:5: tools[3]: Copilot tool 'github/*' has no agentctl equivalent" in (
        "\n".join(found)
    )
    for line, key in ((4, "target"), (11, "argument-hint"), (12, "handoffs")):
        assert any(w.startswith(f"{shown}:{line}:1: {key}: not run by agentctl") for w in found)


# --------------------------------------------------------------------------- Codex


def test_a_codex_agent_maps_instructions_model_and_effort() -> None:
    spec = load_spec(CODEX / "fixer.toml")
    assert (spec.name, spec.description) == (
        "fixer",
        "Fixes a failing test with the smallest change.",
    )
    assert spec.model is not None and spec.model.id == "openai:gpt-5-codex"
    assert spec.model.params == {"reasoning_effort": "high"}
    assert spec.prompt is not None and spec.prompt.startswith("Run the failing test")
    assert isinstance(spec.backend, LocalShellBackendSpec)  # workspace-write, Codex's default
    assert spec.interrupt_on == {"execute": True}  # approval_policy = "untrusted"
    assert spec.load_warnings == []


def test_a_read_only_codex_agent_gets_read_only_tools_and_its_mcp_server() -> None:
    shown = "tests/data/dialects/.codex/agents/explorer.toml"
    spec = load_spec(CODEX / "explorer.toml")
    assert isinstance(spec.backend, FilesystemBackendSpec)
    assert spec.filesystem.tools == ["ls", "read_file", "glob", "grep"]
    (server,) = spec.tools
    assert isinstance(server, McpTool)
    assert (server.mcp.name, server.mcp.command, server.mcp.args, server.mcp.include) == (
        "docs",
        "python",
        ["-m", "docs_server"],
        ["search"],
    )
    assert [str(w) for w in spec.load_warnings] == [
        f"{shown}:4:1: sandbox_mode: read-only runs with the read-only file tools and no shell",
        f"{shown}:15:1: mcp_servers.docs.startup_timeout_sec: not run by agentctl: an MCP server "
        "setting agentctl does not have",
        f"{shown}:5:1: nickname_candidates: not run by agentctl: display names of Codex",
    ]
    assert spec.interrupt_on == {}  # approval_policy = "never": agentctl's default


def test_a_toml_syntax_error_is_located(tmp_path: Path) -> None:
    agent = tmp_path / "a.toml"
    agent.write_text('name = "a"\ndescription = \n')
    with pytest.raises(SpecError) as caught:
        load_spec(agent)
    assert str(caught.value).startswith(f"{agent}:2:15: TOML syntax error")


# --------------------------------------------------------------------------- ADK


def test_an_adk_agent_maps_instruction_tools_config_and_sub_agents() -> None:
    spec = load_spec(ADK / "root_agent.yaml")
    assert spec.name == "travel_helper"
    assert spec.model is not None and spec.model.id == "google_genai:gemini-2.5-flash"
    assert spec.model.params == {"temperature": 0.2}
    assert spec.prompt is not None and spec.prompt.startswith("You help people plan trips.")
    assert [t.import_ for t in spec.tools if isinstance(t, ImportTool)] == [
        "tools_pkg.packing:packing_list"
    ]
    assert spec.filesystem.tools == [] and not spec.todos
    (sub,) = spec.subagents
    assert sub._spec is not None and sub._spec.name == "weather_agent"  # type: ignore[union-attr]
    shown = "tests/data/dialects/adk/root_agent.yaml"
    assert [str(w) for w in spec.load_warnings] == [
        f"{shown}:13:5: tools[1]: ADK tool 'google_search' has no agentctl equivalent; agentctl "
        "has no built-in web search: add an MCP server or an `http:` tool (left out)",
        f"{shown}:16:1: output_key: not run by agentctl: agentctl keeps the answer in the run's "
        "messages, not in session state",
    ]


def test_an_adk_agent_tool_is_a_subagent_and_a_litellm_model_its_model() -> None:
    shown = "tests/data/dialects/adk_team/root_agent.yaml"
    spec = load_spec(TEAM / "root_agent.yaml")
    assert spec.name == "coordinator"
    assert spec.model is not None and spec.model.id == "openai:gpt-4o"
    (sub,) = spec.subagents
    assert sub._spec is not None and sub._spec.name == "researcher"  # type: ignore[union-attr]
    assert [str(w) for w in spec.load_warnings] == [
        f"{shown}:3:7: name: 'Coordinator' is not an agentctl name; runs as 'coordinator'",
        f"{shown}:5:1: model_code: LiteLlm model 'openai/gpt-4o' runs as 'openai:gpt-4o'",
        f"{shown}:10:14: instruction: ADK fills {{name}} from session state; agentctl leaves it "
        "as written",
        f"{shown}:12:5: tools[0]: AgentTool 'researcher.yaml' runs as a subagent, called with "
        "agentctl's `task` tool",
        f"{shown}:16:7: tools[0].args.skip_summarization: not run by agentctl: an AgentTool "
        "setting agentctl does not have",
        f"{shown}:17:1: disallow_transfer_to_parent: not run by agentctl: agentctl subagents "
        "always return to the agent that called",
    ]


def test_files_that_are_no_agents_of_those_tools_say_so(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nNo front matter here.\n")
    config = tmp_path / "pyproject.toml"
    config.write_text('[project]\nname = "x"\n')
    found = []
    for path in (notes, config):
        with pytest.raises(SpecError) as caught:
            load_spec(path)
        found += [str(p) for p in caught.value.problems]
    assert found == [
        f"{notes}:1:1: a Claude Code agent starts with YAML front matter between '---' lines "
        "(name:, description:, tools:, model:), then the prompt",
        f"{config}:1:1: developer_instructions: missing: a Codex agent file has "
        "`developer_instructions` (the agent's prompt), with `name` and `description`",
    ]


def test_a_workflow_agent_class_is_a_located_problem(tmp_path: Path) -> None:
    agent = tmp_path / "root_agent.yaml"
    agent.write_text("agent_class: SequentialAgent\nname: steps\nsub_agents: []\n")
    with pytest.raises(SpecError) as caught:
        load_spec(agent)
    assert str(caught.value).startswith(
        f"{agent}:1:14: agent_class: 'SequentialAgent': agentctl runs ADK's LlmAgent"
    )


# --------------------------------------------------------------------------- nothing lost


def _fields(path: Path) -> list[str]:
    if path.suffix == ".toml":
        return list(tomllib.loads(path.read_text()))
    if path.suffix == ".md":
        return list(markdown.split(path.read_text(), str(path)).value)
    return list(yaml.safe_load(path.read_text()))


MAPPED = {
    "name",
    "description",
    "tools",
    "model",
    "developer_instructions",
    "instructions",
    "model_reasoning_effort",
    "sandbox_mode",
    "mcp_servers",
    "approval_policy",
    "model_provider",
    "agent_class",
    "instruction",
    "sub_agents",
    "generate_content_config",
    "maxTurns",
}


@pytest.mark.parametrize(
    "path",
    [
        *CLAUDE.glob("*.md"),
        *COPILOT.glob("*.md"),
        *CODEX.glob("*.toml"),
        *ADK.glob("*.yaml"),
        *TEAM.glob("*.yaml"),
    ],
    ids=lambda p: p.name,
)
def test_every_field_agentctl_does_not_map_is_a_warning(path: Path) -> None:
    spec = load_spec(path, allow_unused_vars=True)
    warned = {w.path.split("[")[0].split(".")[0] for w in spec.load_warnings}
    for key in _fields(path):
        if key not in MAPPED:
            assert key in warned, f"{key} of {path.name} is lost without a word"


def test_a_folder_of_claude_agents_is_served_and_validated(tmp_path: Path) -> None:
    from runner.check.validate import find_specs
    from runner.serve.agents import collect_agents

    project = tmp_path / "project"
    shutil.copytree(DATA / ".claude", project / ".claude")
    (project / ".claude" / "agents" / "README.md").write_text("# Our agents\n")
    folder = project / ".claude" / "agents"
    assert [p.name for p, _ in find_specs([folder])] == ["auditor.md", "reviewer.md"]
    served = collect_agents([folder], shared_workspace=True)
    assert [(a.name, a.path.name) for a in served] == [
        ("auditor", "auditor.md"),
        ("reviewer", "reviewer.md"),
    ]
    with pytest.raises(SpecError, match="works on its project folder: pass --shared-workspace"):
        collect_agents([folder])


def _cli(*args: str) -> tuple[int, str, str]:
    import io
    from contextlib import redirect_stderr, redirect_stdout
    from typing import Any

    from runner.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code: Any = main(list(args))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_a_copilot_agent_runs_as_it_is_on_its_project_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path))
    code, out, err = _cli(
        "run",
        str(COPILOT / "planner.agent.md"),
        "Give the weather agent a forecast tool.",
        "--model",
        f"replay:{DATA / 'planner.cassette.yaml'}",
        "--output",
        "jsonl",
    )
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert "name: weather_agent" in result["content"]  # the file in the project folder
    assert events[-1]["type"] == "final" and events[-1]["agent"] == "planner"
    # what the file says that agentctl runs differently is said before the run
    assert err.startswith(
        "warning: tests/data/dialects/.github/agents/planner.agent.md:4:9: tools[0]: Copilot "
        "tool 'read' runs as agentctl's `read_file`, `ls`\n"
    )


def test_a_test_file_tests_an_agent_of_another_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path))
    code, out, err = _cli("test", str(DATA / "planner.test.yaml"))
    assert code == 0, out + err
    assert "PASS" in out and "1 passed" in out


def test_validate_a_folder_of_codex_agents(tmp_path: Path) -> None:
    code, out, err = _cli("validate", str(CODEX))
    assert code == 0, err
    assert out.splitlines() == [
        "ok: tests/data/dialects/.codex/agents/explorer.toml",
        "ok: tests/data/dialects/.codex/agents/fixer.toml",
    ]
    assert "warning: tests/data/dialects/.codex/agents/explorer.toml:5:1: nickname_candidates" in (
        err
    )


@pytest.mark.parametrize(
    "text", ["plain", "Use when: x", "#tag", "yes", "a\nb", "it's", "- item", "", "ends ...", "..."]
)
def test_a_front_matter_value_reads_back_as_written(text: str) -> None:
    assert yaml.safe_load("key: " + markdown.scalar(text))["key"] == text


def test_a_codex_model_provider_is_the_model_id_prefix(tmp_path: Path) -> None:
    agent = tmp_path / "local.toml"
    agent.write_text(
        'name = "local"\ndescription = "d"\nmodel = "qwen3"\nmodel_provider = "ollama"\n'
        'developer_instructions = "Hi."\n'
    )
    spec = load_spec(agent)
    assert spec.model is not None and spec.model.id == "ollama:qwen3"


def test_an_agentctl_file_refs_one_as_a_subagent_and_validate_warns_there(
    tmp_path: Path,
) -> None:
    shutil.copytree(DATA / ".claude", tmp_path / ".claude")
    lead = tmp_path / "lead.yaml"
    lead.write_text(
        "name: lead\nmodel: anthropic:claude-sonnet-4-5\nprompt: Ask the reviewer.\n"
        "subagents:\n  - ref: .claude/agents/reviewer.md\n"
    )
    spec = load_spec(lead)
    (sub,) = spec.subagents
    assert sub._spec is not None and sub._spec.name == "reviewer"  # type: ignore[union-attr]
    code, out, err = _cli("validate", str(lead))
    assert code == 0 and out == f"ok: {lead}\n"
    assert f"warning: {tmp_path}/.claude/agents/reviewer.md:4:26: tools[3]: Claude Code tool " in (
        err
    )


def test_instruction_in_an_agentctl_file_is_a_typo_not_an_adk_agent(tmp_path: Path) -> None:
    agent = tmp_path / "a.yaml"
    agent.write_text(
        "name: a\nmodel: openai:gpt-4.1\ninstruction: Hi.\ninterrupt_on: {execute: true}\n"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(agent)
    assert str(caught.value) == f"{agent}:3:1: instruction: unknown key; did you mean 'prompt'?"


ODD_FILES = [
    ("a.md", "---\nname: a\ndescription: d\ntools:\nmodel:\ncolour:\n---\nHi\n"),
    ("a.md", "---\n---\n"),
    ("a.md", "---\nname: a\n"),
    ("a.md", "---\n- x\n---\nbody"),
    ("a.md", "---\nname: [a]\ndescription: {x: 1}\n---\n"),
    ("a.md", "---\nname: a\ndescription: d\ntools: 3\npermissionMode: [x]\nmaxTurns: -1\n---\nB"),
    ("a.md", "---\nname: a\ndescription: d\ntools: Bash(git:*), Read\n---\n${HOME} {% if %}"),
    ("b.agent.md", "---\ntools: 5\nmodel: {a: 1}\n---\n"),
    ("b.agent.md", "---\nmodel: []\nhandoffs: 3\n---\nx"),
    ("c.toml", "name = 1\ndeveloper_instructions = 2\n"),
    ("c.toml", 'developer_instructions = "x"\nsandbox_mode = "weird"\napproval_policy = 3\n'),
    ("c.toml", 'developer_instructions = "x"\nmcp_servers = 3\nmodel_provider = []\n'),
    ("root_agent.yaml", "- a\n"),
    ("root_agent.yaml", "name: x\ntools: 3\nsub_agents: 4\ngenerate_content_config: 5\nmodel: 6\n"),
    (
        "root_agent.yaml",
        "name: x\ninstruction: hi\ntools: [{name: a.b}, 3, {x: 1}, {name: AgentTool, args: 3}]\n"
        "sub_agents: [{code: a.b}, 7, {config_path: missing.yaml}]\nmodel_code: {name: x}\n",
    ),
    ("root_agent.yaml", "agent_class: [x]\nname: y\n"),
]


@pytest.mark.parametrize(("name", "text"), ODD_FILES)
def test_odd_values_are_located_problems_or_warnings_never_a_crash(
    tmp_path: Path, name: str, text: str
) -> None:
    from runner.load.dialects.convert import convert

    path = tmp_path / name
    path.write_text(text)
    for attempt in (
        lambda: load_spec(path, allow_unused_vars=True),
        lambda: convert(path, "yaml"),
        lambda: convert(path, "claude"),
    ):
        try:
            attempt()
        except SpecError as exc:
            assert all(p.file == str(path) for p in exc.problems), exc


# --------------------------------------------------------------------------- odd but valid files


def test_a_byte_order_mark_and_crlf_lines_are_read_as_the_tools_read_them(tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "debugger.md").write_bytes(
        b"\xef\xbb\xbf---\r\nname: debugger\r\ndescription: 'Debugs.'\r\ntools: Read, Bash\r\n"
        b"---\r\nYou debug.\r\n"
    )
    spec = load_spec(agents / "debugger.md")
    assert (spec.name, spec.description, spec.prompt) == ("debugger", "Debugs.", "You debug.")
    assert spec.filesystem.tools == ["read_file", "execute"]
    codex = tmp_path / "fixer.toml"
    codex.write_bytes(
        b'\xef\xbb\xbfname = "fixer"\r\ndeveloper_instructions = """\r\nFix.\r\nNow."""\r\n'
    )
    assert load_spec(codex).prompt == "Fix.\nNow."
    from runner.load.dialects.detect import is_dialect_file

    assert is_dialect_file(agents / "debugger.md")  # a folder's validate/serve finds it


def test_copilot_star_is_every_tool_and_tool_set_names_map_by_their_tool(tmp_path: Path) -> None:
    agents = tmp_path / ".github" / "agents"
    agents.mkdir(parents=True)
    (agents / "all.agent.md").write_text(
        "---\ndescription: All\ntools: ['*', 'github/*']\n---\nGo.\n"
    )
    spec = load_spec(agents / "all.agent.md")
    assert spec.filesystem.tools is None or "execute" in spec.filesystem.tools
    assert spec.todos and spec.general_purpose_agent.enabled
    warned = warnings_of(agents / "all.agent.md")
    assert any("'*' runs as every agentctl tool" in w for w in warned)
    assert any(":3:14: tools[1]: Copilot tool 'github/*' has no" in w for w in warned)
    (agents / "sets.agent.md").write_text(
        "---\ndescription: Sets\n"
        "tools: ['edit/editFiles', 'search/codebase', 'read/problems', 'execute/runInTerminal']\n"
        "---\nGo.\n"
    )
    spec = load_spec(agents / "sets.agent.md")
    assert sorted(spec.filesystem.tools or []) == [
        "edit_file",
        "execute",
        "glob",
        "grep",
        "write_file",
    ]
    warned = warnings_of(agents / "sets.agent.md")
    assert any(
        "tools[2]: Copilot tool 'read/problems' has no agentctl equivalent; a tool of Copilot's "
        "built-in `read` tool set (left out)" in w
        for w in warned
    )
    assert not any("MCP" in w for w in warned)


def test_a_codex_approval_policy_without_a_shell_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "ro.toml"
    path.write_text(
        'name = "ro"\ndeveloper_instructions = "Read."\nsandbox_mode = "read-only"\n'
        'approval_policy = "on-request"\n'
    )
    spec = load_spec(path)
    assert not spec.interrupt_on
    assert any(
        ":4:1: approval_policy: not run by agentctl: nothing to approve" in w
        for w in warnings_of(path)
    )


def test_an_adk_sub_agent_without_a_description_loads_described_by_its_name(
    tmp_path: Path,
) -> None:
    (tmp_path / "helper.yaml").write_text("name: helper\nmodel: gemini-2.5-flash\ninstruction: H\n")
    (tmp_path / "root_agent.yaml").write_text(
        "name: root\nmodel: gemini-2.5-flash\ninstruction: R\n"
        "sub_agents:\n  - config_path: helper.yaml\n"
    )
    spec = load_spec(tmp_path / "root_agent.yaml")
    assert [getattr(s, "description", None) for s in spec.subagents] == ["The helper agent."]
    assert any(
        ":5:5: sub_agents: helper.yaml has no `description`" in w
        for w in warnings_of(tmp_path / "root_agent.yaml")
    )


def test_codex_mcp_servers_are_located_at_their_tables_and_a_disabled_one_is_left_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mcp.toml"
    path.write_text(
        'name = "m"\ndeveloper_instructions = "Go."\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
        '\n[mcp_servers.off]\ncommand = "off-mcp"\nenabled = false\n'
    )
    from runner.load.dialects import codex

    spec = load_spec(path)
    assert [t.mcp.name for t in spec.tools if isinstance(t, McpTool)] == ["docs"]
    translated = codex.read(path, path.read_text(), str(path))
    assert translated.root.children["tools"].children[0].loc.line == 4  # not 1:1
    assert any(
        ":7:1: mcp_servers.off: not run by agentctl: a disabled server (left out)" in w
        for w in warnings_of(path)
    )


def test_each_disallowed_tool_is_located_at_its_name(tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    path = agents / "d.md"
    path.write_text("---\nname: d\ndescription: D\ndisallowedTools: Bash, Write\n---\nGo.\n")
    warned = warnings_of(path)
    assert any(":4:18: disallowedTools[0]: Claude Code tool 'Bash'" in w for w in warned)
    assert any(":4:24: disallowedTools[1]: Claude Code tool 'Write'" in w for w in warned)
    assert "execute" not in (load_spec(path).filesystem.tools or [])
