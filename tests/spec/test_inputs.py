"""Typed inputs (`inputs:`): `--var` values checked and converted, defaults, required inputs,
located errors in the spec, and how `vars:` and `inputs:` combine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import runner
from runner.serve.factory import assistant_config_schema
from runner.spec.inputs import CliText
from tests.conftest import run_cli
from tests.spec.files import write_files as write

AGENT = """
name: briefer
model: replay:./c.yaml
prompt: "{{ vars.topic }}|{{ vars.depth }}|{{ vars.tone }}|{{ vars.strict }}|{{ vars.ratio }}|{{ vars.notes }}"
inputs:
  topic: {type: string, description: What to write about, required: true}
  depth: {type: integer, default: 2, minimum: 1, maximum: 5}
  tone: {enum: [formal, casual]}
  strict: {type: boolean, default: false}
  ratio: {type: number, default: 0.5}
  notes: {type: file}
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    return write(tmp_path, {"a.yaml": AGENT, "c.yaml": "- content: done\n"})


def cli(**values: str) -> dict[str, Any]:
    """Values as `--var` gives them: text."""
    return {name: CliText(value) for name, value in values.items()}


def prompt_of(path: Path, values: dict[str, Any]) -> str:
    spec = runner.load_spec(path, vars=values)
    assert isinstance(spec.prompt, str)
    return spec.prompt


def problems(path: Path, values: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
    with pytest.raises(runner.SpecError) as info:
        runner.load_spec(path, vars=values, **kwargs)
    return [str(p) for p in info.value.problems]


def test_command_line_text_is_converted_and_defaults_fill_the_rest(
    agent: Path, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("Readers are new to databases.", encoding="utf-8")
    text = prompt_of(
        agent,
        cli(topic="3", depth="4", tone="Casual", strict="yes", ratio="1e-1", notes="notes.txt"),
    )
    # `topic` is a string: "3" stays text; a file input gives the file's text
    assert text == "3|4|casual|True|0.1|Readers are new to databases."
    assert prompt_of(agent, cli(topic="x")) == "x|2|None|False|0.5|None"


def test_data_values_must_have_the_type_already(agent: Path) -> None:
    assert prompt_of(agent, {"topic": "x", "depth": 3, "ratio": 2}) == "x|3|None|False|2|None"
    assert problems(agent, {"topic": 3, "strict": "maybe"}) == [
        "vars: strict: expected true or false (or yes/no), found text 'maybe' (the input is "
        "declared at a.yaml:8:11)",
        "vars: topic: expected text, found the number 3 (the input is declared at a.yaml:5:10)",
    ]


def test_wrong_values_name_the_input_the_value_and_what_was_expected(agent: Path) -> None:
    found = problems(
        agent,
        cli(topic="x", depth="deep", tone="loud", strict="maybe", ratio="nan", notes="missing.md"),
    )
    assert found == [
        "--var: depth: expected an integer from 1 to 5, found 'deep' (the input is declared at "
        "a.yaml:6:10)",
        "--var: notes: no file missing.md (the input is declared at a.yaml:10:10)",
        "--var: ratio: expected a number, found 'nan' (the input is declared at a.yaml:9:10)",
        "--var: strict: expected true or false (or yes/no), found 'maybe' (the input is "
        "declared at a.yaml:8:11)",
        "--var: tone: expected one of: formal, casual, found 'loud' (the input is declared at "
        "a.yaml:7:9)",
    ]
    assert problems(agent, cli(topic="x", depth="9")) == [
        "--var: depth: expected an integer from 1 to 5, found 9 (the input is declared at "
        "a.yaml:6:10)"
    ]


def test_a_missing_required_input_is_an_error_to_run_not_to_validate(agent: Path) -> None:
    assert problems(agent) == [
        "a.yaml:5:10: inputs.topic: required input 'topic' has no value; pass --var topic=TEXT"
    ]
    # validate and inspect render the prompts with a stand-in
    spec = runner.load_spec(agent, require_inputs=False)
    assert spec.prompt == "<topic>|2|None|False|0.5|None"
    from runner.check.validate import validate_file

    assert validate_file(agent) == []


def test_spec_mistakes_are_located(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "b.yaml": """
            name: b
            model: replay:./c.yaml
            inputs:
              depth: {type: integer, default: abc}
              name: {type: string, minimum: 3}
              kind: {type: strng}
              choice: {type: enum}
              both: {required: true, default: x}
              low: {type: number, minimum: 5, maximum: 1}
              picked: {type: boolean, enum: [a, b]}
              doc: {type: file, default: ./x.md}
            """
        },
    )
    assert problems(path) == [
        "b.yaml:4:35: inputs.depth.default: expected an integer, found text 'abc'",
        "b.yaml:5:9: inputs.name: `minimum` applies to integer and number inputs, not string",
        "b.yaml:6:16: inputs.kind.type: expected one of 'string', 'integer', 'number', "
        "'boolean', 'enum', 'file', found text 'strng'; did you mean 'string'?",
        "b.yaml:7:11: inputs.choice: `type: enum` needs `enum:`, the list of allowed values",
        "b.yaml:8:9: inputs.both: a required input has no default (the caller must give it); "
        "remove `default` or `required: true`",
        "b.yaml:9:8: inputs.low: `minimum` (5) is above `maximum` (1)",
        "b.yaml:10:11: inputs.picked: `enum:` lists choices, so the type is `enum`, not `boolean`",
        "b.yaml:11:30: inputs.doc.default: a `file` input has no default (its value is a path "
        "to read)",
    ]


def test_a_name_is_in_vars_or_in_inputs_not_both(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "a.yaml": """
            name: a
            model: replay:./c.yaml
            prompt: "{{ vars.tone }} {{ vars.topic }}"
            vars: {tone: plain}
            inputs:
              tone: {enum: [plain, fancy]}
              topic: {default: cats}
            """
        },
    )
    assert problems(path) == [
        "a.yaml:6:9: inputs.tone: 'tone' is also in `vars:`; a name is a plain variable or a "
        "typed input, not both (an input with a `default:` is one the caller may set)"
    ]


def test_plain_vars_still_read_command_line_text_as_yaml(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"a.yaml": 'name: a\nmodel: replay:./c.yaml\nprompt: "{{ vars.n + 1 }}"\nvars: {n: 1}\n'},
    )
    assert prompt_of(path, cli(n="41")) == "42"


def test_validate_run_and_inspect_from_the_command_line(agent: Path, tmp_path: Path) -> None:
    assert run_cli("validate", "a.yaml", cwd=tmp_path).returncode == 0
    missing = run_cli("run", "a.yaml", "hi", cwd=tmp_path)
    assert missing.returncode == 2
    assert "inputs.topic: required input 'topic' has no value" in missing.stderr
    wrong = run_cli("run", "a.yaml", "hi", "--var", "topic=x", "--var", "depth=2.5", cwd=tmp_path)
    assert wrong.returncode == 2
    assert "--var: depth: expected an integer from 1 to 5, found '2.5'" in wrong.stderr
    shown = run_cli("inspect", "a.yaml", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "  topic   string, required  What to write about\n" in shown.stdout
    assert "  depth   integer >= 1 <= 5, default 2\n" in shown.stdout
    assert "  tone    one of formal|casual\n" in shown.stdout


def test_serve_exposes_the_inputs_as_the_assistants_config_schema(agent: Path) -> None:
    spec = runner.load_spec(agent, require_inputs=False)
    schema = assistant_config_schema(spec)
    variables = schema["properties"]["vars"]
    assert variables["required"] == ["topic"]
    assert variables["properties"]["depth"] == {
        "type": "integer",
        "default": 2,
        "minimum": 1,
        "maximum": 5,
    }
    assert variables["properties"]["tone"] == {"enum": ["formal", "casual"]}
    assert variables["properties"]["topic"]["description"] == "What to write about"
