"""`agentctl validate`, run as a user runs it: in a subprocess, reading stdout, stderr and the exit
code. Each subprocess costs ~0.3 s, so one call checks many files where it can."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.check.validate import is_agent_file_name
from tests.conftest import AGENTS, ROOT, run_cli
from tests.spec.files import write_files as write
from tests.spec.test_corpus import BROKEN, CORPUS, CORPUS_ENV, expected_problems

EXAMPLES = sorted(p.name for p in AGENTS.glob("*.yaml") if is_agent_file_name(p))
CASSETTES = sorted(p.name for p in AGENTS.glob("*.cassette.yaml"))


def test_valid_examples_and_their_cassettes_print_ok_and_exit_0() -> None:
    result = run_cli("validate", "agents/")
    assert result.returncode == 0, result.stderr
    assert CASSETTES, "the examples come with cassettes"
    assert result.stdout.splitlines() == [
        f"ok: agents/{name}" for name in sorted(EXAMPLES + CASSETTES)
    ]
    assert result.stderr == ""


def test_the_whole_corpus_through_the_cli() -> None:
    """Every corpus file at once: its exact lines on stderr, a summary, exit 2, no traceback."""
    result = run_cli("validate", ".", cwd=BROKEN, env=CORPUS_ENV)
    assert result.returncode == 2
    assert result.stdout == ""
    expected = [line for path in CORPUS for line in expected_problems(path)]
    expected.append(f"{len(CORPUS)} of {len(CORPUS)} files have problems")
    assert result.stderr.splitlines() == expected
    for text in (result.stdout, result.stderr):
        assert "Traceback" not in text
        assert "internal error" not in text


def test_ok_lines_go_to_stdout_and_problems_to_stderr(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "good.yaml": "name: good\n",
            "bad.yaml": "name: bad\nmodle: openai:gpt-4.1\n",
        },
    )
    result = run_cli("validate", "good.yaml", "bad.yaml", cwd=tmp_path, process=True)  # the program
    assert result.returncode == 2
    assert result.stdout == "ok: good.yaml\n"
    assert result.stderr == (
        "bad.yaml:2:1: modle: unknown key; did you mean 'model'?\n1 of 2 files have problems\n"
    )


def test_directory_rule_checks_cassettes_skips_fragments_hidden_and_subfolders(
    tmp_path: Path,
) -> None:
    broken = "name: [not, valid]\n"
    write(
        tmp_path,
        {
            "agent.yaml": "name: agent\n",
            "other.yml": "name: other\n",
            "agent.cassette.yaml": "- content: hi\n",
            "run.cassette.yml": "agents: {agent: [{content: hi}]}\n",
            "_base.yaml": broken,
            ".hidden.yaml": broken,
            "notes.txt": broken,
            "README.md": broken,
            "sub/nested.yaml": broken,
        },
    )
    result = run_cli("validate", ".", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    alone = (
        " (a cassette, checked for its format only: no agent file in its folder plays it or is "
        "named after it; validate the agent file to check its replies against it)"
    )
    assert result.stdout == (
        f"ok: agent.cassette.yaml\nok: agent.yaml\nok: other.yml\nok: run.cassette.yml{alone}\n"
    )
    # A file named on the command line is always checked, whatever its name.
    result = run_cli("validate", "_base.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == "_base.yaml:1:7: name: expected text, found a list\n"


def test_directory_rule_skips_other_yaml_but_not_broken_agents(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "agent.yaml": "name: agent\n",
            "docker-compose.yml": 'version: "3"\nservices:\n  web: {image: nginx}\n',
            "mkdocs.yml": "site_name: Docs\nnav: [index.md]\n",
            "typo.yaml": "nmae: typo\n",  # a near-miss of an agent key: an agent with a typo
            "only-tools.yaml": "tools: [pkg.mod:fn]\n",  # an agent key: an agent missing `name`
            "schema-line.yaml": "# yaml-language-server: $schema=../agent.schema.json\nx: 1\n",
            "syntax.yaml": "name: [unclosed\n",
        },
    )
    result = run_cli("validate", ".", cwd=tmp_path)
    assert result.returncode == 2
    skip = "(not an agent file: none of its top-level keys is an agent key)"
    assert result.stdout == (
        f"ok: agent.yaml\nskipped: docker-compose.yml {skip}\nskipped: mkdocs.yml {skip}\n"
    )
    assert result.stderr.splitlines()[-1] == "4 of 5 files have problems"
    assert [line.split(":")[0] for line in result.stderr.splitlines()[:-1]] == [
        "only-tools.yaml",
        "schema-line.yaml",
        "syntax.yaml",
        "typo.yaml",
    ]
    # named on the command line, it is checked whatever it holds
    assert run_cli("validate", "mkdocs.yml", cwd=tmp_path).returncode == 2


def test_missing_paths_empty_folders_and_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    result = run_cli("validate", "nowhere.yaml", "empty", "latin1.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "nowhere.yaml: no such file or directory",
        "empty: no agent files (*.yaml) here",
        "latin1.yaml: not UTF-8 text (invalid continuation byte at byte 9)",
        "3 of 3 files have problems",
    ]


def test_json_prints_one_object_per_problem_on_stdout(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "good.yaml": "name: good\n",
            "bad.yaml": "name: Bad\nmodel: gpt-4.1\n",
        },
    )
    result = run_cli("validate", "--json", "good.yaml", "bad.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == ""
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {
            "file": "bad.yaml",
            "line": 1,
            "col": 7,
            "path": "name",
            "message": "expected lowercase letters, digits, '-' and '_', starting with a letter "
            "or digit, found text 'Bad'",
        },
        {
            "file": "bad.yaml",
            "line": 2,
            "col": 8,
            "path": "model",
            "message": "expected 'provider:model', e.g. 'openai:gpt-4.1' or "
            "'replay:cassette.yaml', found text 'gpt-4.1'; did you mean 'openai:gpt-4.1'?",
        },
    ]


def test_json_on_valid_files_prints_nothing_and_exits_0() -> None:
    result = run_cli("validate", "--json", "agents/")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_var_defines_and_overrides_template_variables(tmp_path: Path) -> None:
    write(tmp_path, {"a.yaml": "name: a\nprompt: Hi {{ vars.who }}, {{ vars.n + 1 }}\n"})
    result = run_cli("validate", "a.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "a.yaml:2:9: prompt: undefined template variable 'vars.who'; the spec defines no `vars`\n"
    )
    # VALUE is read as YAML: `n=2` is a number, so `vars.n + 1` works.
    result = run_cli("validate", "--var", "who=you", "--var", "n=2", "a.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok: a.yaml\n", "")


def test_a_malformed_var_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("validate", "--var", "no-equals-sign", "agents/")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "Error: Invalid value for --var: expected KEY=VALUE with KEY an identifier, "
        "found 'no-equals-sign'"
    )


def test_validate_needs_a_target() -> None:
    result = run_cli("validate")
    assert result.returncode == 2
    assert "Missing argument 'TARGETS...'" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_on_every_command_and_version() -> None:
    top = run_cli("--help")
    assert top.returncode == 0
    assert "validate  Check agent and workflow files and report every problem." in top.stdout
    assert "schema    Print, write or check the agent (or cassette) JSON Schema." in top.stdout
    validate = run_cli("validate", "--help")
    assert validate.returncode == 0
    assert "Usage: agentctl validate [OPTIONS] TARGETS..." in validate.stdout
    assert "--json" in validate.stdout and "--var KEY=VALUE" in validate.stdout
    assert "*.cassette.yaml" in validate.stdout
    schema = run_cli("schema", "--help")
    assert schema.returncode == 0
    assert "Usage: agentctl schema [OPTIONS]" in schema.stdout
    assert "--check" in schema.stdout and "-o, --output FILE" in schema.stdout
    version = run_cli("--version")
    assert (version.returncode, version.stdout) == (0, "agentctl, version 0.1.0\n")


_IMPORTS_PROBE = """
import sys
from runner.cli import main

for argv in (["validate", "agents/"], ["schema"]):
    try:
        main(argv)
    except SystemExit as exc:
        assert not exc.code, exc.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("langchain", "langgraph"))
print("heavy modules:", heavy, file=sys.stderr)
"""


def test_validate_and_schema_import_neither_langchain_nor_langgraph() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", _IMPORTS_PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == "heavy modules: []"
    assert result.stdout.startswith("ok: agents/")


def test_the_docs_example_is_what_validate_prints(tmp_path: Path) -> None:
    """docs/agent-files.md's section on `agentctl validate` shows a spec and its output: they must
    not drift."""
    page = (ROOT / "docs" / "agent-files.md").read_text(encoding="utf-8")
    section = page.split("\n## Checking them: `agentctl validate`\n", 1)[1].split("\n## ", 1)[0]
    spec = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    console = section.split("$ agentctl validate helper.yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "helper.yaml").write_text(spec, encoding="utf-8")
    result = run_cli("validate", "helper.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == console


def test_skills_folders_are_checked_even_when_the_file_has_other_problems(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "ok.yaml": "name: ok\nskills: [./skills]\n",
            "missing.yaml": "name: missing\nskills: [./skills, ./nowhere]\n",
            "both.yaml": "name: both\ndescripton: typo\nskills: [./nowhere, ./skills]\n",
            "skills/good/SKILL.md": "---\nname: good\ndescription: Does good things\n---\nBody\n",
        },
    )
    assert run_cli("validate", "ok.yaml", cwd=tmp_path).returncode == 0
    result = run_cli("validate", "missing.yaml", "both.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "missing.yaml:2:20: skills[1]: skills folder not found: nowhere",
        "both.yaml:2:1: descripton: unknown key; did you mean 'description'?",
        "both.yaml:3:10: skills[0]: skills folder not found: nowhere",
        "2 of 2 files have problems",
    ]
    (tmp_path / "skills" / "bad").mkdir()
    (tmp_path / "skills" / "bad" / "SKILL.md").write_text("---\nname: bad\n---\nNo description\n")
    result = run_cli("validate", "ok.yaml", "both.yaml", cwd=tmp_path)
    # The bad SKILL.md, found through both files, is printed once, naming both.
    lines = result.stderr.splitlines()[:-1]
    assert [line.split(": ")[0] for line in lines] == [
        "skills/bad/SKILL.md:2:1",
        "both.yaml:2:1",
        "both.yaml:3:10",
    ]
    assert lines[0].endswith(" (found through ok.yaml, both.yaml)")


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "agents/notes.yaml"],
        ["validate", "agents/"],
        ["validate", "agents/notes.yaml", "--json", "--var", "nothing=here"],
        ["--help"],
        ["validate", "--help"],
        ["--version"],
        ["schema"],
    ],
)
def test_a_reader_gone_before_the_first_line_ends_the_command_with_141(argv: list[str]) -> None:
    """`agentctl validate agents/ | head -1`: 128 + SIGPIPE when the reader has left, and not a
    word on stderr, whether the write fails in the command or while its options are parsed
    (`--help`, `--version`). Click answers a broken pipe it sees itself with exit 1."""
    import os
    import subprocess
    import sys

    reader, writer = os.pipe()
    os.close(reader)  # gone before the command writes anything
    try:
        result = subprocess.run(
            [sys.executable, "-m", "runner", *argv],
            cwd=ROOT,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(writer)
    assert (result.returncode, result.stderr) == (141, "")
