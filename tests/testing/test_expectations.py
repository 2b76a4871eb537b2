"""Every kind of expectation: a case that must pass and one that must fail, with its message.

All cases run in one suite (each on its own thread, in its own copy of the workspace), then each
test looks at its case's result.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner.testing.execution import CaseResult
from runner.testing.suite import run_suite
from tests.testing.conftest import AGENT, CASSETTE, JUDGE, write_test

APPROVED = "    turns: [{user: hi}, {decisions: [approve]}]\n"

# name -> (expect, as YAML under `expect:`; status; the failed checks' "expectation: message")
CASES: dict[str, tuple[str, str, list[str]]] = {
    "final passes": (
        '{final: {contains: [answer is 42], not_contains: error, regex: "4\\\\d", '
        "equals: 'Done: the answer is 42. {\"answer\": 42}'}}",
        "passed",
        [],
    ),
    "final fails": (
        "{final: {contains: [43, answer], not_contains: [Done], regex: 'x{3}', equals: Done}}",
        "failed",
        [
            "expect.final.contains: the answer does not contain '43'",
            "expect.final.not_contains: the answer contains 'Done'",
            "expect.final.regex: the answer does not match /x{3}/",
            "expect.final.equals: the answer differs",
        ],
    ),
    "json schema passes": (
        "{final: {json_schema: {type: string, pattern: answer is 42}}}",
        "passed",
        [],
    ),
    "json schema fails": (
        "{final: {json_schema: {type: object}}}",
        "failed",
        [
            "expect.final.json_schema: the answer does not fit the schema (it is not JSON, so "
            "it is checked as a JSON string): the answer: 'Done: the answer is 42. "
            "{\"answer\": 42}' is not of type 'object'"
        ],
    ),
    "files pass": (
        "{files: {/out.md: {contains: hello, not_contains: bye, regex: '^hello'}, "
        "/keep.txt: {contains: a fixture}, /stale.md: {exists: false}, "
        "/scratch/none.md: {exists: false}}}",
        "passed",
        [],
    ),
    "files fail": (
        "{files: {/out.md: {contains: bye, not_contains: hello}, /missing.md: {}, "
        "/keep.txt: {exists: false}}}",
        "failed",
        [
            "expect.files[\"/out.md\"].contains: /out.md does not contain 'bye'",
            "expect.files[\"/out.md\"].not_contains: /out.md contains 'hello'",
            'expect.files["/missing.md"].exists: /missing.md does not exist',
            'expect.files["/keep.txt"].exists: /keep.txt exists',
        ],
    ),
    "tool calls in order pass": (
        "{tool_calls: [{name: write_todos}, {name: write_file, args: {file_path: /out.md}}, "
        "{name: task, args: {subagent_type: helper}}]}",
        "passed",
        [],
    ),
    "tool calls in order fail": (
        "{tool_calls: [{name: task}, {name: write_file}]}",
        "failed",
        [
            "expect.tool_calls: expected call 2, write_file(), was not made after call 3 "
            "(it was made before: the order differs)"
        ],
    ),
    "tool calls any order pass": (
        "{tool_calls: [{name: task}, {name: write_todos}], tool_order: any_order}",
        "passed",
        [],
    ),
    "tool calls any order fail": (
        "{tool_calls: [{name: task}, {name: write_file, args: {file_path: /x.md}}], "
        "tool_order: any_order}",
        "failed",
        ['expect.tool_calls: no call matches write_file({"file_path": "/x.md"})'],
    ),
    "tool calls exact pass": (
        "{tool_calls: [{name: write_todos}, {name: write_file}, {name: task}], tool_order: exact}",
        "passed",
        [],
    ),
    "tool calls exact fail": (
        "{tool_calls: [{name: write_todos}, {name: task}], tool_order: exact}",
        "failed",
        [
            "expect.tool_calls: call 2 is write_file(file_path=/out.md, content=hello world) [tiny], expected task()"
        ],
    ),
    "not called passes": ("{not_called: [edit_file, execute]}", "passed", []),
    "not called fails": (
        "{not_called: [task]}",
        "failed",
        ["expect.not_called: task was called once"],
    ),
    "subagents pass": ("{subagents: [helper]}", "passed", []),
    "subagents fail": (
        "{subagents: [critic]}",
        "failed",
        ["expect.subagents: subagent critic was never started"],
    ),
    "interrupts pass": (
        "{interrupts: [{name: write_file, args: {file_path: /out.md}}]}",
        "passed",
        [],
    ),
    "interrupts fail": (
        "{interrupts: [{name: task}]}",
        "failed",
        ["expect.interrupts[0]: task() never waited for approval"],
    ),
    "todos pass": ("{todos: {all_completed: false, min_count: 2}}", "passed", []),
    "todos fail": (
        "{todos: {all_completed: true, min_count: 3}}",
        "failed",
        [
            "expect.todos.all_completed: 1 of 2 todos are not completed",
            "expect.todos.min_count: 2 todos, expected at least 3",
        ],
    ),
    "limits pass": ("{limits: {model_calls: 4, tool_calls: 3, tokens: 100000}}", "passed", []),
    "limits fail": (
        "{limits: {model_calls: 2, tool_calls: 2, tokens: 10}}",
        "failed",
        [
            "expect.limits.model_calls: 4 model calls, more than 2",
            "expect.limits.tool_calls: 3 tool calls, more than 2",
            "expect.limits.tokens: <N> tokens, more than 10",
        ],
    ),
    "error passes": (
        "{error: true, final: {contains: has no approval waiting}}",
        "passed",
        [],
    ),
    "error fails": (
        "{error: true}",
        "failed",
        ["expect.error: the run was expected to fail"],
    ),
    "seeded files pass": (
        "{files: {/keep.txt: {contains: seeded}, /scratch/a.md: {contains: in state}, "
        "/new/b.md: {contains: new}}}",
        "passed",
        [],
    ),
    "judge passes": ("{judge: {rubric: Gives the answer, threshold: 0.5}}", "passed", []),
    "judge fails": (
        "{judge: {rubric: Gives the answer, threshold: 0.8}}",
        "failed",
        [
            "expect.judge: the judge scored 0.60, below 0.80: "
            "It gives the answer. Thus, the score should be: 0.6."
        ],
    ),
    "judge without a model is skipped": (
        "{judge: {rubric: Gives the answer, model: null}}",
        "skipped",
        [],
    ),
}

TURNS = {
    # a third turn answers an approval that is no longer waiting: the run fails
    "error passes": "    turns: [{user: hi}, {decisions: [approve]}, {decisions: [approve]}]\n",
    "seeded files pass": (
        "    files: {/keep.txt: seeded over the copy, /scratch/a.md: in state, /new/b.md: new}\n"
        + APPROVED
    ),
}

# The judge of "judge without a model" has none: its file sets no judge_model, and neither here.
NO_JUDGE = {"judge without a model is skipped"}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CaseResult]:
    folder = tmp_path_factory.mktemp("expectations")
    (folder / "tiny.yaml").write_text(AGENT)
    (folder / "tiny.cassette.yaml").write_text(CASSETTE)
    (folder / "judge.cassette.yaml").write_text(JUDGE)
    (folder / "workspace").mkdir()
    (folder / "workspace" / "stale.md").write_text("left by a manual run\n")
    (folder / "fixture").mkdir()
    (folder / "fixture" / "keep.txt").write_text("a fixture\n")
    judged = "".join(
        f"  - name: {name}\n{TURNS.get(name, APPROVED)}    expect: {expect}\n"
        for name, (expect, _, _) in CASES.items()
        if name not in NO_JUDGE
    )
    fixtures = "fixtures: {/: ./fixture}\n"
    write_test(folder, judged, head=f"judge_model: replay:./judge.cassette.yaml\n{fixtures}")
    unjudged = "".join(
        f"  - name: {name}\n{APPROVED}    expect: {CASES[name][0]}\n" for name in NO_JUDGE
    )
    write_test(folder, unjudged, name="unjudged.test.yaml", head=fixtures)
    suite = run_suite([folder], jobs=2, workdir=folder / ".kept")
    assert not suite.problems, suite.problems
    # the real workspace is untouched, and no case saw what was left in it
    assert sorted(p.name for p in (folder / "workspace").iterdir()) == ["stale.md"]
    return {r.name: r for r in suite.results}


@pytest.mark.parametrize("name", CASES)
def test_expectation(name: str, results: dict[str, CaseResult]) -> None:
    _, status, messages = CASES[name]
    result = results[name]
    assert result.status == status, (result.checks, result.problems)
    found = [f"{c.expectation}: {c.message}" for c in result.failures]
    assert len(found) == len(messages), found
    for line, message in zip(found, messages, strict=True):
        # <N>: a number that depends on the token estimate
        assert re.fullmatch(re.escape(message).replace("<N>", r"\d+"), line), (line, message)
    assert result.checks, "every case checks something"


def test_a_skipped_judge_says_why_and_is_never_passed(results: dict[str, CaseResult]) -> None:
    result = results["judge without a model is skipped"]
    assert [(c.status, c.message) for c in result.checks] == [
        (
            "skipped",
            "no judge model: pass --judge-model MODEL or set `judge_model:` in the file",
        )
    ]


def test_a_failure_keeps_its_thread_and_shows_the_last_steps(
    results: dict[str, CaseResult],
) -> None:
    failed = results["subagents fail"]
    assert failed.db is not None and Path(failed.db).is_file()
    assert failed.transcript[-1] == 'final: Done: the answer is 42. {"answer": 42}'
    assert "tiny -> task(subagent_type='helper', description='say hi')" in failed.transcript
    assert results["subagents pass"].db is None  # a passing case leaves nothing behind
