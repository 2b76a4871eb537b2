"""`agentctl test` as a user runs it: exit codes, bad test files, -k, --repeat, JSON lines, JUnit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.testing.loader import load_test_file
from tests.testing.conftest import agentctl, write_test

PASSING = "  - name: passes\n    input: hi\n    expect: {files: {/out.md: {exists: false}}}\n"
FAILING = (
    "  - name: fails\n    turns: [{user: hi}, {decisions: [approve]}]\n"
    "    expect: {final: {contains: [nowhere]}, subagents: [critic]}\n"
)
SKIPPED = (
    "  - name: skipped\n    turns: [{user: hi}, {decisions: [approve]}]\n"
    "    expect: {judge: {rubric: Gives the answer, threshold: 0.5}}\n"
)


def test_exit_codes_and_the_failure_report(tiny: Path) -> None:
    write_test(tiny, PASSING)
    done = agentctl("test", cwd=tiny)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("PASS  tiny.test.yaml::passes\n\n1 passed in ")

    write_test(tiny, PASSING + FAILING)
    done = agentctl("test", "tiny.test.yaml", cwd=tiny, process=True)  # the program itself
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "FAIL  tiny.test.yaml::fails\n" in out
    assert "FAIL tiny.test.yaml::fails (tiny.test.yaml:7)\n" in out
    assert "  x expect.final.contains: the answer does not contain 'nowhere'\n" in out
    assert "  x expect.subagents: subagent critic was never started\n" in out
    assert "    expected: critic\n    found:    helper\n" in out
    assert "  last steps:\n" in out
    assert "    final: Done: the answer is 42." in out
    assert "  thread: agentctl threads show " in out and "/agentctl.db" in out
    assert out.rstrip().splitlines()[-1].startswith("1 passed, 1 failed in ")
    # the thread of the failed case can be shown
    line = next(x for x in out.splitlines() if x.startswith("  thread: "))
    thread, db = line.split()[4], line.split()[6]
    shown = agentctl("threads", "show", thread, "--db", db, cwd=tiny)
    assert shown.returncode == 0, shown.stderr
    assert "Done: the answer is 42." in shown.stdout


def test_a_judge_without_a_model_is_skipped_and_exits_0(tiny: Path) -> None:
    write_test(tiny, SKIPPED)
    done = agentctl("test", cwd=tiny)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "SKIP  tiny.test.yaml::skipped  (expect.judge skipped: no judge model: pass "
        "--judge-model MODEL or set `judge_model:` in the file)\n"
    )
    judged = agentctl("test", "--judge-model", "replay:judge.cassette.yaml", cwd=tiny)
    assert judged.returncode == 0, judged.stdout
    assert judged.stdout.startswith(
        "PASS  tiny.test.yaml::skipped\n"
        "      judge: score 0.60 (threshold 0.50): It gives the answer. Thus, the score should "
        "be: 0.6.\n"
    )


def test_junit_counts(tiny: Path) -> None:
    write_test(tiny, PASSING + FAILING + SKIPPED)
    write_test(tiny, "  - name: no input\n", name="broken.test.yaml")
    done = agentctl("test", "--junit", "out/report.xml", cwd=tiny)
    assert done.returncode == 2, done.stdout  # a bad test file outweighs a failed case
    root = ET.parse(tiny / "out" / "report.xml").getroot()
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "4",
        "failures": "1",
        "errors": "1",
        "skipped": "1",
    }
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert sorted(suites) == ["broken.test.yaml", "tiny.test.yaml"]
    tiny_suite = suites["tiny.test.yaml"]
    assert [(c.get("name"), [e.tag for e in c]) for c in tiny_suite.iter("testcase")] == [
        ("passes", []),
        ("fails", ["failure"]),
        ("skipped", ["skipped"]),
    ]
    failure = tiny_suite.find("testcase/failure")
    assert failure is not None
    assert failure.get("message") == (
        "expect.final.contains: the answer does not contain 'nowhere'; "
        "expect.subagents: subagent critic was never started"
    )
    error = suites["broken.test.yaml"].find("testcase/error")
    assert error is not None
    assert error.get("message") == (
        "broken.test.yaml:4:5: cases[0]: give `input` (one message) or `turns` (a list), not "
        "both or neither"
    )


def test_k_selects_cases_and_jsonl_reports_them(tiny: Path) -> None:
    write_test(tiny, PASSING + FAILING)
    done = agentctl("test", "-k", "PASSES", "--output", "jsonl", cwd=tiny)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(x["type"], x.get("case"), x.get("status")) for x in lines] == [
        ("case", "passes", "passed"),
        ("summary", None, None),
    ]
    assert lines[0]["checks"] == [
        {"expectation": 'expect.files["/out.md"].exists', "status": "passed"}
    ]
    assert lines[1]["passed"] == 1 and lines[1]["exit_code"] == 0
    none = agentctl("test", "-k", "nothing-like-this", cwd=tiny)
    assert none.returncode == 0
    assert "no case matches -k 'nothing-like-this'" in none.stderr


def test_repeat_reports_a_pass_rate_and_j_runs_cases_side_by_side(tiny: Path) -> None:
    write_test(tiny, PASSING + FAILING)
    done = agentctl("test", "--repeat", "3", "-j", "2", cwd=tiny)
    assert done.returncode == 1
    assert "PASS  tiny.test.yaml::passes  (3/3 passed, 100%)\n" in done.stdout
    assert "FAIL  tiny.test.yaml::fails  (0/3 passed, 0%)\n" in done.stdout


BAD_FILES = [
    (
        "cases:\n  - name: a\n    input: hi\n    expect: {final: {contans: x}}\n",
        "bad.test.yaml:6:22: cases[0].expect.final.contans: unknown key; did you mean 'contains'?",
    ),
    (
        "cases:\n  - name: a\n    input: hi\n    expect: {tool_order: random, tool_calls: [{name: ls}]}\n",
        "bad.test.yaml:6:26: cases[0].expect.tool_order: expected one of 'in_order', "
        "'any_order', 'exact', found text 'random'",
    ),
    (
        "cases:\n  - name: a\n    turns: [{user: hi}, {approve: true}]\n",
        "bad.test.yaml:5:25: cases[0].turns[1]: a turn is `{user: TEXT}` or `{decisions: [...]}`",
    ),
    (
        "cases:\n  - name: a\n    input: hi\n  - name: a\n    input: again\n",
        "bad.test.yaml:6:11: cases[1].name: another case has this name (line 4); each case "
        "needs its own",
    ),
    (
        "cases:\n  - name: a\n    model: replay:./gone.yaml\n    input: hi\n",
        "bad.test.yaml:5:12: cases[0].model: cassette not found: gone.yaml",
    ),
    (
        "cases:\n  - name: a\n    input: hi\n    expect: {final: {regex: '(unclosed'}}\n",
        "bad.test.yaml:6:29: cases[0].expect.final.regex: '(unclosed' is not a valid regular "
        "expression: missing ), unterminated subpattern at position 0",
    ),
    (
        "cases:\n  - name: a\n    input: hi\n    files: {notes.md: x}\n",
        "bad.test.yaml:6:12: cases[0].files: file paths are the agent's, starting with '/'; "
        "found 'notes.md'",
    ),
    (
        "cases:\n  - name: a\n    input: hi\n    turns: [{user: hi}]\n",
        "bad.test.yaml:4:5: cases[0]: give `input` (one message) or `turns` (a list), not both "
        "or neither",
    ),
    (
        "cases:\n  - name: a\n    input: 'hi\n",
        "bad.test.yaml:5:12: YAML syntax error: this quoted text has no closing '",
    ),
]


@pytest.mark.parametrize(("cases", "message"), BAD_FILES)
def test_bad_test_files_get_located_errors(
    tiny: Path, cases: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tiny)
    (tiny / "bad.test.yaml").write_text(f"version: 1\nagent: ./tiny.yaml\n{cases}")
    with pytest.raises(SpecError) as caught:
        load_test_file("bad.test.yaml")
    assert str(caught.value) == message


def test_a_bad_test_file_exits_2_with_every_problem(tiny: Path) -> None:
    (tiny / "bad.test.yaml").write_text(
        "version: 1\nagent: ./tiny.yaml\ncases:\n  - name: a\n    input: hi\n"
        "    expect: {final: {contans: x}, tool_order: random}\n"
    )
    done = agentctl("test", "bad.test.yaml", cwd=tiny)
    assert (done.returncode, done.stderr) == (
        2,
        "bad.test.yaml:6:22: cases[0].expect.final.contans: unknown key; did you mean "
        "'contains'?\n"
        "bad.test.yaml:6:47: cases[0].expect.tool_order: expected one of 'in_order', "
        "'any_order', 'exact', found text 'random'\n",
    )
    assert done.stdout == "\n1 bad test file in " + done.stdout.split(" in ")[-1]


def test_a_missing_agent_file_and_paths_without_tests(tiny: Path) -> None:
    (tiny / "t.test.yaml").write_text(
        "version: 1\nagent: ./nope.yaml\ncases: [{name: a, input: hi}]\n"
    )
    (tiny / "empty").mkdir()
    done = agentctl("test", "t.test.yaml", "empty", "gone.test.yaml", cwd=tiny)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "t.test.yaml:2:8: agent: file not found: nope.yaml",
        "empty: no test files (*.test.yaml) here",
        "gone.test.yaml: no such file or directory",
    ]


def test_an_agent_that_cannot_be_built_is_an_error_case(tiny: Path) -> None:
    (tiny / "tiny.yaml").write_text(
        "version: 1\nname: tiny\nmodel: replay:./tiny.cassette.yaml\nprompt: Hi {{ vars.nope }}\n"
    )
    write_test(tiny, PASSING)
    done = agentctl("test", cwd=tiny)
    assert done.returncode == 2
    assert "ERROR tiny.test.yaml::passes\n" in done.stdout
    assert "tiny.yaml:4:9: prompt: " in done.stdout


def test_record_needs_model(tiny: Path) -> None:
    done = agentctl("test", "--record", cwd=tiny)
    assert done.returncode == 2
    assert "--record needs --model" in done.stderr
