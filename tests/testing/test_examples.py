"""The example agents' test files pass offline, and the test file schema is current."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from runner.check.validate import find_specs
from runner.testing import test_json_schema_text
from runner.testing.loader import load_test_file
from tests.conftest import AGENTS, ROOT, run_cli

TEST_FILES = sorted(AGENTS.glob("*.test.yaml"))
SCHEMA = ROOT / "schemas" / "test.schema.json"
WRITTEN_BY_CASES = [
    "report.md",
    "notes/sources.md",
    "code/word_counts.py",
    "code/count_words.py",
    "docs/guide.md",
]


def test_every_example_agent_has_a_test_file() -> None:
    agents = sorted(path.stem for path, _ in find_specs([AGENTS]))
    assert sorted(p.name.removesuffix(".test.yaml") for p in TEST_FILES) == agents


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.name)
def test_the_example_test_file_passes_offline(
    path: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from runner.testing.suite import run_suite

    if path.name == "issues.test.yaml":  # its tools call the example tracker
        request.getfixturevalue("tracker")

    suite = run_suite([path], workdir=tmp_path)
    assert not suite.problems, suite.problems
    assert suite.results
    for result in suite.results:
        assert result.status == "passed", (result.name, result.failures, result.problems)
        assert len(result.checks) >= 3, result.name
    # what the cases wrote went to their copies (scripts/demo, run by another test, may write
    # agents/workspace/showcase/ meanwhile, so only these files are looked for)
    for written in WRITTEN_BY_CASES:
        assert not (AGENTS / "workspace" / written).exists(), f"a test wrote {written}"


def test_the_committed_test_schema_is_the_generated_one() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == test_json_schema_text(), (
        "schemas/test.schema.json is stale: run `agentctl schema --test -o schemas/test.schema.json`"
    )
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_schema_accepts_the_examples_and_rejects_typos() -> None:
    import yaml

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    for path in TEST_FILES:
        load_test_file(path)  # valid for the loader
        assert not list(validator.iter_errors(yaml.safe_load(path.read_text()))), path
    typo = {"agent": "x.yaml", "cases": [{"name": "a", "input": "hi", "expect": {"fnal": {}}}]}
    assert [e.validator for e in validator.iter_errors(typo)] == ["additionalProperties"]


def test_schema_test_check_and_the_example_header() -> None:
    done = run_cli("schema", "--test", "--check")
    assert (done.returncode, done.stdout) == (0, "ok: schemas/test.schema.json is up to date\n")
    for path in TEST_FILES:
        first = path.read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=../schemas/test.schema.json", path
