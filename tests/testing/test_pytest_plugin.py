"""pytest collects `*.test.yaml` through agentctl's plugin: one item per case."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from tests.testing.conftest import AGENT, CASSETTE, write_test


def test_the_plugin_is_installed_as_an_entry_point() -> None:
    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("agentctl") == "runner.testing.pytest_plugin"


@pytest.fixture
def folder(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "tiny.yaml").write_text(AGENT)
    (pytester.path / "tiny.cassette.yaml").write_text(CASSETTE)
    (pytester.path / "other.yaml").write_text("not: a test file\n")  # not collected
    return pytester


def test_pytest_runs_each_case_as_an_item(folder: pytest.Pytester) -> None:
    write_test(
        folder.path,
        "  - name: passes\n    input: hi\n    expect: {files: {/out.md: {exists: false}}}\n"
        "  - name: fails\n    input: hi\n    expect: {subagents: [critic]}\n"
        "  - name: judged\n    input: hi\n    expect: {judge: {rubric: Says hi}}\n",
    )
    (folder.path / ".tmp").mkdir()
    result = folder.runpytest_inprocess("-rs", "--basetemp", str(folder.path / ".tmp" / "base"))
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    out = result.stdout.str()
    assert "FAIL tiny.test.yaml::fails (tiny.test.yaml:7)" in out
    assert "  x expect.subagents: subagent critic was never started" in out
    assert "SKIPPED [1] tiny.test.yaml:10: no judge model: pass --judge-model MODEL" in out
    selected = folder.runpytest_inprocess("-k", "passes")
    selected.assert_outcomes(passed=1, deselected=2)


def test_a_bad_test_file_is_a_collection_error(folder: pytest.Pytester) -> None:
    write_test(folder.path, "  - name: a\n    inptu: hi\n")
    result = folder.runpytest_inprocess()
    result.assert_outcomes(errors=1)
    assert "tiny.test.yaml:5:5: cases[0].inptu: unknown key; did you mean 'input'?" in (
        result.stdout.str()
    )
