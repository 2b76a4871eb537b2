"""The language server's pieces that need no client: the cursor's key path in half-typed YAML,
a diagnostic's range, an env variable's hover, the quick fix's target word."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from runner.lsp.context import cursor_at
from runner.lsp.diagnostics import word_range
from runner.lsp.features import env_hover, fixes

HALF_TYPED = """\
name: x
interrupt_on:
  read_f
subagents:
  - name: a
    tools: [ls, gr
  - name: b
    interrupt_on:
      wr
permissions:
  deny:
  - tool: wr
prompt: hi {{ vars.
tools:
- import: ./x
  na
"""


@pytest.mark.parametrize(
    ("line", "path", "kind", "prefix"),
    [
        (2, ("interrupt_on",), "key", "read_f"),
        (5, ("subagents", 0, "tools"), "value", "gr"),
        (8, ("subagents", 1, "interrupt_on"), "key", "wr"),
        (11, ("permissions", "deny", 0, "tool"), "value", "wr"),
        (15, ("tools", 0), "key", "na"),
    ],
)
def test_the_cursor_path_is_read_from_indentation(
    line: int, path: tuple[object, ...], kind: str, prefix: str
) -> None:
    text_line = HALF_TYPED.splitlines()[line]
    cursor = cursor_at(HALF_TYPED, line, len(text_line))
    assert (cursor.path, cursor.kind, cursor.prefix) == (path, kind, prefix)


def test_a_template_and_a_flow_mapping_are_seen() -> None:
    assert cursor_at(HALF_TYPED, 12, len("prompt: hi {{ vars.")).template == " vars."
    line = "      args: {description: Find, subagent_type: hel"
    cursor = cursor_at(f"agents:\n  a:\n    - tool_calls:\n{line}", 3, len(line))
    assert cursor.path[-2:] == ("args", "subagent_type")
    assert (cursor.kind, cursor.prefix) == ("value", "hel")


def test_a_range_covers_the_word_a_key_without_its_colon() -> None:
    text = "version: 1\nmodle: openai:gpt-4.1\nx: 'quoted text'\n"
    assert word_range(text, 2, 1) == lsp.Range(lsp.Position(1, 0), lsp.Position(1, 5))
    assert word_range(text, 2, 8).end == lsp.Position(1, 21)
    assert word_range(text, 3, 4).end == lsp.Position(2, 16)
    assert word_range(text, 0, 0) == lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))


def test_an_env_variable_hover_never_shows_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSP_TEST_KEY", "sk-secret")
    monkeypatch.delenv("LSP_TEST_UNSET", raising=False)
    shown = env_hover("LSP_TEST_KEY")
    assert "set in the environment" in shown and "sk-secret" not in shown
    assert "the default `x` is used" in env_hover("LSP_TEST_UNSET:-x")
    assert "**missing**" in env_hover("LSP_TEST_UNSET")


def test_a_fix_replaces_the_misspelled_name_even_where_the_problem_is_at_the_value() -> None:
    text = "interrupt_on:\n  writ_file: true\n"
    diagnostic = lsp.Diagnostic(
        range=lsp.Range(lsp.Position(1, 13), lsp.Position(1, 17)),
        message="interrupt_on.writ_file: no tool named 'writ_file' in agent 'a'; "
        "did you mean 'write_file'?",
        source="agentctl",
        data={"line": 2, "col": 14},
    )
    (action,) = fixes("file:///a.yaml", text, [diagnostic])
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes["file:///a.yaml"]
    assert edit.range == lsp.Range(lsp.Position(1, 2), lsp.Position(1, 11))
    assert edit.new_text == "write_file"


def test_tool_names_are_offered_in_a_file_that_never_loaded(tmp_path: Path) -> None:
    from runner.lsp.features import complete

    text = "name: x\nmodle: y\ntools:\n  - import: ./t.py:lookup\ninterrupt_on:\n  lo\n"
    items = complete(text, tmp_path / "x.yaml", "agent", 5, 4, [])
    assert {"lookup", "read_file", "write_todos"} <= {item.label for item in items}


def test_a_skills_folder_hovers_with_its_skills() -> None:
    from runner.lsp.features import hover
    from tests.conftest import AGENTS

    agent = AGENTS / "researcher.yaml"
    text = agent.read_text(encoding="utf-8")
    line = text.splitlines().index("skills: [../skills]")
    shown = hover(text, agent, "agent", line, len("skills: [../sk"), [])
    assert shown is not None and "- **fact-check**: Check the factual claims" in shown


def test_a_workflow_completes_step_ids_agents_and_tools() -> None:
    from runner.lsp.features import complete

    text = """\
agents:
  writer: {prompt: x}
  judge: {prompt: y}
tools:
  - http: {name: publish, description: P, url: "http://127.0.0.1:1/"}
workflow:
  steps:
    - id: draft
      agent: wr
      input: x
    - id: fan
      map:
        over: state.items
        steps:
          - id: inner
            tool: pu
    - id: again
      loop: {to: dr, while: "true", max: 2}
"""
    lines = text.splitlines()

    def labels(word: str) -> list[str]:
        line = next(i for i, t in enumerate(lines) if word in t)
        column = lines[line].index(word) + len(word)
        items = complete(text, Path("wf.yaml"), "workflow", line, column, [])
        return [i.label for i in items]

    assert labels("agent: wr") == ["judge", "writer"]
    assert labels("tool: pu") == ["publish"]
    assert labels("to: dr") == ["draft", "fan", "inner", "again", "end"]


def test_an_agent_written_in_a_workflow_completes_its_own_tool_names(tmp_path: Path) -> None:
    """`interrupt_on` of an agent under `agents:` or in a step's `agent:` offers that agent's
    tools: from the loaded workflow (its MCP/declared tools), or as typed when it did not load."""
    from runner.lsp.diagnostics import check
    from runner.lsp.documents import Overlay
    from runner.lsp.features import complete

    text = """\
version: 1
name: wf
model: openai:gpt-4.1-mini
agents:
  writer:
    prompt: x
    tools:
      - http: {name: publish, description: P, url: "http://127.0.0.1:1/"}
    interrupt_on:
      pu
workflow:
  steps:
    - id: draft
      agent: writer
      input: x
    - id: inline
      agent:
        prompt: y
        tools:
          - http: {name: fetch_page, description: F, url: "http://127.0.0.1:1/"}
        interrupt_on:
          fe
      input: y
"""
    file = tmp_path / "wf.yaml"  # as last saved, before the author typed `pu` and `fe`
    saved = text.replace("      pu\n", "      publish: true\n")
    file.write_text(saved.replace("          fe\n", "          fetch_page: true\n"), "utf-8")
    checked = check(file, "workflow", Overlay({}))
    assert not checked.problems.get(str(file))
    assert checked.workflow is not None and set(checked.workflow.agent_specs()) >= {"writer"}
    lines = text.splitlines()

    def labels(word: str, workflow: object) -> list[str]:
        line = next(i for i, t in enumerate(lines) if t.strip() == word)
        column = lines[line].index(word) + len(word)
        items = complete(text, file, "workflow", line, column, [], workflow)  # type: ignore[arg-type]
        return [i.label for i in items]

    for workflow in (checked.workflow, None):  # loaded, and as typed
        writer = labels("pu", workflow)
        assert "publish" in writer and "fetch_page" not in writer and "read_file" in writer
        inline = labels("fe", workflow)
        assert "fetch_page" in inline and "publish" not in inline
