"""The form writes back into the file keeping the author's comments, order and layout: only the
lines of the settings changed move."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from runner.check.validate import find_specs, validate_file
from runner.edit.form import FormError, read_form, write_form
from tests.conftest import AGENTS

AGENT = """\
# yaml-language-server: $schema=../schemas/agent.schema.json
version: 1
name: keeper      # the graph id
description: Keeps notes

# which model
model: replay:keeper.cassette.yaml
prompt: |
  You keep notes.
tools:
  - import: ./tools.py:word_count   # counts words
  - mcp: {name: docs, command: python, args: [server.py]}
interrupt_on:
  write_file: {allowed_decisions: [approve, reject], description: Write it?}
  edit_file: true
inputs:
  topic: {type: string, required: true}   # asked first
limits: {model_calls: 5}
"""


def _changed(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_the_form_reads_the_common_settings() -> None:
    values = read_form(AGENT)
    assert values["name"] == "keeper"
    assert values["model"] == "replay:keeper.cassette.yaml"
    assert values["prompt"] == "You keep notes.\n"
    assert values["tools"] == ["./tools.py:word_count"]
    assert values["other_tools"] == ["mcp: docs"]
    assert values["interrupt_on"] == ["write_file", "edit_file"]
    assert values["subagents"] == values["other_subagents"] == []
    assert values["inputs"] == [
        {"name": "topic", "type": "string", "description": None, "required": True, "default": None}
    ]


def test_a_changed_description_changes_its_line_only() -> None:
    after = write_form(AGENT, {"description": "Keeps the team's notes"})
    assert _changed(AGENT, after) == [
        "-description: Keeps notes",
        "+description: Keeps the team's notes",
    ]


def test_every_field_written_back_unchanged_changes_nothing() -> None:
    values = {
        k: v
        for k, v in read_form(AGENT).items()
        if k not in ("other_tools", "other_subagents", "backend_editable")
    }
    assert write_form(AGENT, values) == AGENT


def test_comments_and_order_survive_changes_to_every_field() -> None:
    after = write_form(
        AGENT,
        {
            "name": "scribe",
            "model": "openai:gpt-4.1",
            "prompt": "You keep notes.\nShort ones.",
            "tools": ["./tools.py:word_count", "./tools.py:sentences"],
            "interrupt_on": ["write_file", "execute"],
            "backend": "filesystem",
            "inputs": [
                {"name": "topic", "type": "string", "required": True, "description": "What"}
            ],
        },
    )
    for comment in ("# the graph id", "# which model", "# counts words", "# asked first"):
        assert comment in after
    keys = [line.split(":")[0] for line in after.splitlines() if line[:1].isalpha()]
    assert keys == [
        "version", "name", "description", "model", "prompt", "tools", "backend",
        "interrupt_on", "inputs", "limits",
    ]  # fmt: skip
    assert "write_file: {allowed_decisions: [approve, reject], description: Write it?}" in after
    assert "edit_file" not in after
    assert "  execute: true" in after
    assert "  - import: ./tools.py:sentences" in after
    assert "mcp: {name: docs" in after
    assert "prompt: |\n  You keep notes.\n  Short ones.\n" in after
    assert "backend:\n  kind: filesystem\n  root_dir: ./workspace\n" in after


def test_an_emptied_setting_is_removed_and_a_new_one_goes_at_its_place() -> None:
    after = write_form(AGENT, {"description": "", "interrupt_on": [], "backend": "store"})
    assert "description" not in after and "interrupt_on" not in after
    assert "name: keeper      # the graph id\n\n# which model\nmodel:" in after
    lines = after.splitlines()
    assert (
        lines.index("backend: store")
        == lines.index("  - mcp: {name: docs, command: python, args: [server.py]}") + 1
    )


EXAMPLES = [path for path, _ in find_specs([AGENTS])]
"""The example agent files, as serve finds them (no cassettes, no test files)."""


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_example_agents_go_through_the_form_unchanged(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    values = read_form(text)
    values = {k: values[k] for k in ("name", "description", "model", "tools", "interrupt_on")}
    assert write_form(text, values) == text


def test_subagents_from_other_files_are_added_and_removed_inline_ones_kept() -> None:
    text = AGENT.replace(
        "limits:",
        "subagents:\n  - name: critic   # inline\n    description: Critiques\n"
        "    prompt: You critique.\n  - ref: ./old.yaml\nlimits:",
    )
    values = read_form(text)
    assert values["subagents"] == ["./old.yaml"]
    assert values["other_subagents"] == ["critic"]
    after = write_form(text, {"subagents": ["./helper.yaml"]})
    assert "  - name: critic   # inline\n" in after
    assert "./old.yaml" not in after
    assert "  - ref: ./helper.yaml\nlimits:" in after


def test_bad_values_are_refused_with_the_reason() -> None:
    with pytest.raises(FormError, match="each input needs a name"):
        write_form(AGENT, {"inputs": [{"type": "string"}]})
    with pytest.raises(FormError, match="expected one of"):
        write_form(AGENT, {"backend": "cloud"})
    with pytest.raises(FormError, match="not a setting of the form"):
        write_form(AGENT, {"limits": {}})
    with pytest.raises(FormError, match="does not parse"):
        read_form("name: [unclosed\n")


def test_a_saved_form_passes_validate(client: TestClient, folder: Path) -> None:
    opened = client.get("/web/api/edit/file", params={"path": "planner.yaml"}).json()
    written = client.post(
        "/web/api/edit/form/write",
        json={
            "text": opened["text"],
            "values": {"interrupt_on": ["write_file"], "description": "Plans"},
        },
    )
    assert written.status_code == 200, written.text
    text = written.json()["text"]
    assert "# The model. `replay:` plays the recorded replies" in text
    saved = client.post(
        "/web/api/edit/save",
        json={"path": "planner.yaml", "text": text, "base": opened["version"]},
    )
    assert saved.status_code == 200
    assert list(validate_file(folder / "planner.yaml")) == []
    refused = client.post("/web/api/edit/form/write", json={"text": text, "values": {"x": 1}})
    assert refused.status_code == 422
