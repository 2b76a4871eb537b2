"""Bounded input: alias bombs, alias loops, deep nesting, huge files and runaway templates end
with a located error in well under a second, in little memory, on both YAML parsers."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import runner
from runner.errors import SpecError
from runner.load import source as yamlsource
from runner.load.source import read_yaml
from tests.conftest import ROOT


def alias_bomb(levels: int, *, key: str = "bomb") -> str:
    """`levels` lists of nine aliases to the list before: 9**levels strings when expanded."""
    lines = [f'{key}0: &{key}0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*{key}{level - 1}"] * 9)
        lines.append(f"{key}{level}: &{key}{level} [{aliases}]")
    return "\n".join(lines) + "\n"


PYTHON_PARSER_ONLY = 'note: "a\ttab"\n'
"""A tab in a quoted value: libyaml is not asked, the Python parser reads the file."""


@pytest.mark.parametrize("prefix", ["", PYTHON_PARSER_ONLY], ids=["libyaml", "python"])
def test_an_alias_bomb_is_refused_at_the_alias_that_crosses_the_cap(prefix: str) -> None:
    doc = read_yaml(prefix + alias_bomb(9), "bomb.yaml")
    assert doc.value is None
    [problem] = doc.problems
    line = 5 + (1 if prefix else 0)  # the fourth level copies more than 10,000 nodes
    assert str(problem) == (
        f"bomb.yaml:{line}:16: too many alias expansions (over 10,000); is this an alias bomb?"
    )


@pytest.mark.parametrize("prefix", ["", PYTHON_PARSER_ONLY], ids=["libyaml", "python"])
def test_aliases_under_the_cap_and_merge_keys_still_work(prefix: str) -> None:
    doc = read_yaml(prefix + alias_bomb(3) + "base: &b {x: 1}\nuse: {<<: *b, y: 2}\n", "ok.yaml")
    assert doc.problems == []
    assert len(doc.value["bomb3"]) == 9 and doc.value["use"] == {"x": 1, "y": 2}


@pytest.mark.parametrize("prefix", ["", PYTHON_PARSER_ONLY], ids=["libyaml", "python"])
def test_an_alias_inside_its_own_anchor_is_refused(prefix: str) -> None:
    doc = read_yaml(prefix + "loop: &me [1, *me]\n", "loop.yaml")
    [problem] = doc.problems
    assert "'*me' is inside the '&me' it names" in problem.message
    assert problem.line == (2 if prefix else 1)


@pytest.mark.parametrize(
    "text",
    [
        "x: " + "[" * 5000 + "]" * 5000,
        "x: " + "[" * 150 + "]" * 150,
        "- " * 5000 + "x\n",
        "a: " + "{a: " * 300 + "}" * 300,
        PYTHON_PARSER_ONLY + "x: " + "[" * 300 + "]" * 300,
    ],
    ids=["flow-5000", "flow-150", "block-5000", "mapping-300", "python-parser"],
)
def test_nesting_past_100_levels_is_refused(text: str) -> None:
    doc = read_yaml(text, "deep.yaml")
    [problem] = doc.problems
    assert problem.message == "lists and mappings nested more than 100 deep"
    assert problem.line >= 1 and problem.col > 1


def test_a_file_over_the_size_cap_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yamlsource, "MAX_SOURCE_BYTES", 1000)
    agent = tmp_path / "agent.yaml"
    agent.write_text("name: big\nmodel: openai:gpt-4.1\nprompt: |\n" + "  words\n" * 200)
    with pytest.raises(SpecError) as error:
        runner.load_spec(agent)
    size = len(agent.read_bytes())
    message = f"agent.yaml: the file is {size:,} bytes; files over 1,000 bytes are not read"
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ('{{ "x" * 10**10 }}', "repeating 1 items 10,000,000,000 times makes more than 1,000,000"),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxx{% endfor %}"
            "{% endfor %}",
            "the rendered prompt is over 1,000,000 characters",
        ),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "the template ran more than 1,000,000 steps; is a loop running away?",
        ),
        ('{{ "".__class__.__mro__ }}', "access to attribute '__class__' of 'str' object is unsafe"),
    ],
    ids=["repeat", "loops", "quiet-loops", "internals"],
)
def test_a_runaway_or_unsafe_template_is_a_located_error(
    tmp_path: Path, prompt: str, expected: str
) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(f"name: t\nmodel: openai:gpt-4.1\nprompt: '{prompt}'\n")
    with pytest.raises(SpecError) as error:
        runner.load_spec(agent)
    assert expected in str(error.value) and "agent.yaml:3" in str(error.value)


# --------------------------------------------------------------------------- in little memory

LIMIT = 200 * 2**20
"""Address space for the child: the bombs took gigabytes before they were capped."""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _files(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (agentctl arguments or a Python snippet, the message expected)."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("name: bomb\nmodel: openai:gpt-4.1\n" + alias_bomb(9))
    included = tmp_path / "included.yaml"
    included.write_text(f"include: [{bomb.name}]\nname: inc\nmodel: openai:gpt-4.1\n")
    cassette = tmp_path / "bomb.cassette.yaml"
    cassette.write_text(alias_bomb(9, key="replies") + "agents: {a: []}\n")
    jinja = tmp_path / "jinja.yaml"
    jinja.write_text("name: j\nmodel: openai:gpt-4.1\nprompt: '{{ \"x\" * 10**10 }}'\n")
    alias = "too many alias expansions (over 10,000); is this an alias bomb?"
    return {
        "agent": (["validate", str(bomb)], alias),
        "include": (["validate", str(included)], alias),
        "jinja": (["validate", str(jinja)], "makes more than 1,000,000"),
        "cassette": (
            [
                "-c",
                "from runner.replay.cassette import load_cassette; import sys\n"
                f"try:\n    load_cassette({str(cassette)!r})\n"
                "except Exception as exc:\n    print(exc, file=sys.stderr); sys.exit(2)",
            ],
            alias,
        ),
    }


@pytest.mark.parametrize("case", ["agent", "include", "jinja", "cassette"])
def test_bombs_end_with_a_clean_error_under_a_memory_limit(tmp_path: Path, case: str) -> None:
    args, expected = _files(tmp_path)[case]
    command = (
        [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "runner", *args]
    )
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, "AGENTCTL_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        preexec_fn=_limited,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert "MemoryError" not in done.stderr and "Traceback" not in done.stderr
