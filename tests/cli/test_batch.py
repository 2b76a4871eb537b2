"""`agentctl run SPEC --batch FILE`: one run per line, N at a time, resumable results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner.run.batch import ResultsFile, read_batch
from tests.conftest import ROOT, run_cli


@pytest.fixture
def calc(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tests" / "data" / "spine", tmp_path / "spine")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    return tmp_path


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def twenty(bad: bool) -> list[str]:
    lines = [json.dumps({"message": f"add {n} and 1", "id": f"q{n}"}) for n in range(1, 21)]
    if bad:
        lines[4] = '{"message": "add 5 and 1", "id": "q5"'  # cut short
        lines[11] = json.dumps({"mesage": "add 12 and 1", "id": "q12"})
    return lines


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_batch_of_twenty_with_two_bad_lines_reruns_to_completion(calc: Path) -> None:
    inputs, out = calc / "inputs.jsonl", calc / "results.jsonl"
    write_lines(inputs, twenty(bad=True))
    args = ("run", "spine/agent.yaml", "--batch", "inputs.jsonl", "-j", "4", "--out", str(out))
    first = run_cli(*args, cwd=calc)
    assert first.returncode == 1, first.stderr
    assert first.stdout == ""
    assert first.stderr.endswith("batch: 20 lines, 18 ok, 2 failed; results in results.jsonl\n")
    done = records(out)
    assert sorted(r["line"] for r in done) == list(range(1, 21))
    failed = {r["line"]: r["error"] for r in done if r["status"] == "error"}
    assert failed == {
        5: "inputs.jsonl:5: not JSON: Expecting ',' delimiter at column 38",
        12: "inputs.jsonl:12: unknown key 'mesage'; did you mean 'message'?",
    }
    ok = [r for r in done if r["status"] == "ok"]
    assert {r["answer"] for r in ok} == {"The sum is 5."}
    assert all(r["usage"]["model_calls"] == 2 and r["usage"]["total_tokens"] > 0 for r in ok)
    assert len({r["thread_id"] for r in ok}) == 18
    listed = json.loads(run_cli("threads", "list", "--json", cwd=calc).stdout)
    assert {t["thread_id"] for t in listed} == {r["thread_id"] for r in ok}
    assert "[" in first.stderr and "line 5: error: inputs.jsonl:5: not JSON" in first.stderr

    write_lines(inputs, twenty(bad=False))
    second = run_cli(*args, cwd=calc)
    assert second.returncode == 0, second.stderr
    assert "skipping 18 lines already done in results.jsonl" in second.stderr
    assert second.stderr.endswith(
        "batch: 20 lines, 18 already done, 2 ok; results in results.jsonl\n"
    )
    final = records(out)
    assert sorted(r["line"] for r in final) == list(range(1, 21))  # one result per line
    assert all(r["status"] == "ok" for r in final)
    assert [r for r in final if r["line"] not in (5, 12)] == ok  # kept as they were

    third = run_cli(*args, cwd=calc)
    assert third.returncode == 0
    assert records(out) == final
    assert not (calc / "results.jsonl.lock").exists()


def test_a_changed_line_and_a_half_written_result_run_again(calc: Path) -> None:
    inputs, out = calc / "inputs.jsonl", calc / "results.jsonl"
    write_lines(inputs, ['{"message": "add 2 and 3"}', '{"message": "add 4 and 5"}'])
    args = ("run", "spine/agent.yaml", "--batch", "inputs.jsonl", "--out", "results.jsonl")
    assert run_cli(*args, cwd=calc).returncode == 0
    first, second = sorted(records(out), key=lambda r: r["line"])
    # a crash in the middle of writing a result leaves half a line; line 2's content changes
    out.write_text(json.dumps(first) + "\n" + json.dumps(second)[:40], encoding="utf-8")
    write_lines(inputs, ['{"message": "add 2 and 3"}', '{"message": "add 6 and 7"}'])
    again = run_cli(*args, cwd=calc)
    assert again.returncode == 0, again.stderr
    now = sorted(records(out), key=lambda r: r["line"])
    assert now[0] == first
    assert now[1]["line"] == 2 and now[1]["thread_id"] != second["thread_id"]
    assert now[1]["input_hash"] != second["input_hash"]


def test_approvals_fail_the_line_unless_auto_approve(calc: Path) -> None:
    (calc / "spine" / "shout.cassette.yaml").write_text(
        "agents:\n  calc:\n"
        "    - content: Shouting.\n"
        "      tool_calls: [{name: shout, args: {text: hi}}]\n"
        "    - content: I shouted.\n",
        encoding="utf-8",
    )
    write_lines(calc / "inputs.jsonl", ['{"message": "shout hi", "id": "s"}'])
    args = ("run", "spine/agent.yaml", "--model", "replay:spine/shout.cassette.yaml")
    args += ("--batch", "inputs.jsonl")
    refused = run_cli(*args, cwd=calc)
    assert refused.returncode == 1
    (result,) = [json.loads(line) for line in refused.stdout.splitlines()]
    assert result["status"] == "error" and result["id"] == "s"
    assert result["error"] == (
        "the agent asked for approval of shout, and a batch run cannot ask: run the batch with "
        "--auto-approve, or answer this thread with `agentctl run spine/agent.yaml --thread "
        f"{result['thread_id']} --approve`"
    )
    approved = run_cli(*args, "--auto-approve", cwd=calc)
    assert approved.returncode == 0, approved.stderr
    (result,) = [json.loads(line) for line in approved.stdout.splitlines()]
    assert (result["status"], result["answer"], result["error"]) == ("ok", "I shouted.", None)
    assert result["usage"]["model_calls"] == 2


def test_vars_per_line_and_a_line_whose_vars_do_not_build(calc: Path) -> None:
    write_lines(
        calc / "inputs.jsonl",
        [
            '{"message": "add 2 and 3", "vars": {"who": "auditors"}}',
            '{"message": "add 2 and 3", "vars": {"nope": 1}}',
            '{"message": "add 2 and 3"}',
        ],
    )
    done = run_cli("run", "spine/agent.yaml", "--batch", "inputs.jsonl", "-q", cwd=calc)
    assert done.returncode == 1
    by_line = {r["line"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert by_line[1]["status"] == by_line[3]["status"] == "ok"
    assert by_line[2]["status"] == "error" and "nope" in str(by_line[2]["error"])
    shown = json.loads(
        run_cli("threads", "show", by_line[1]["thread_id"], "--json", cwd=calc).stdout
    )
    assert shown["vars"] == {"who": "auditors"}


def test_batch_usage_errors(calc: Path) -> None:
    write_lines(calc / "inputs.jsonl", ['{"message": "add 2 and 3"}'])
    with_message = run_cli("run", "spine/agent.yaml", "hi", "--batch", "inputs.jsonl", cwd=calc)
    assert with_message.returncode == 2
    assert "--batch FILE takes its messages from FILE: give no MESSAGE" in with_message.stderr
    no_batch = run_cli("run", "spine/agent.yaml", "hi", "--out", "x.jsonl", cwd=calc)
    assert no_batch.returncode == 2 and "--out and -j/--jobs go with --batch" in no_batch.stderr
    missing = run_cli("run", "spine/agent.yaml", "--batch", "none.jsonl", cwd=calc)
    assert missing.returncode == 2 and "none.jsonl" in missing.stderr
    write_lines(calc / "empty.jsonl", [""])
    empty = run_cli("run", "spine/agent.yaml", "--batch", "empty.jsonl", cwd=calc)
    assert empty.returncode == 1
    assert empty.stderr == "error: the batch file empty.jsonl has no lines\n"


def test_a_second_batch_on_the_same_results_is_refused(calc: Path) -> None:
    write_lines(calc / "inputs.jsonl", ['{"message": "add 2 and 3"}'])
    held = ResultsFile(calc / "results.jsonl")
    try:
        busy = run_cli(
            "run",
            "spine/agent.yaml",
            "--batch",
            "inputs.jsonl",
            "--out",
            "results.jsonl",
            cwd=calc,
        )
    finally:
        held.close()
    assert busy.returncode == 1
    assert busy.stderr == (
        "error: another batch is writing results.jsonl now; wait for it, or use another --out\n"
    )


def test_read_batch_problems(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    write_lines(
        path,
        [
            "[1, 2]",
            '{"message": ""}',
            '{"message": "hi", "vars": [1]}',
            '{"message": "hi", "id": true}',
            '{"message": "a", "id": 7}',
            '{"message": "b", "id": 7}',
            "",
            '{"message": "fine"}',
        ],
    )
    lines = read_batch(path)
    assert [line.number for line in lines] == [1, 2, 3, 4, 5, 6, 8]
    problems = [line.problem.split(": ", 1)[1] if line.problem else None for line in lines]
    assert problems == [
        'expected a JSON object like {"message": "..."}, found list',
        'message: expected a non-empty string ({"message": "..."})',
        'vars: expected an object ({"vars": {"topic": "..."}})',
        "id: expected a string or a number",
        None,
        "id 7 is also the id of line 5; ids must be unique",
        None,
    ]
    assert lines[0].problem is not None and lines[0].problem.startswith(f"{path}:1: ")


def test_a_required_input_given_by_each_line_needs_no_var(tmp_path: Path) -> None:
    """The base vars alone lack the required input; every line gives it, so every line runs
    (a line without it fails with the located reason, alone)."""
    shutil.copytree(ROOT / "workflows", tmp_path / "workflows")
    write_lines(
        tmp_path / "topics.jsonl",
        [
            json.dumps({"vars": {"topic": "SQLite or DuckDB"}}),
            json.dumps({"vars": {}}),
        ],
    )
    result = run_cli(
        "run",
        "workflows/research.yaml",
        "--model",
        "replay:workflows/research.cassette.yaml",
        "--batch",
        "topics.jsonl",
        "--out",
        "results.jsonl",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    done = {r["line"]: r for r in records(tmp_path / "results.jsonl")}
    assert done[1]["status"] == "ok", done[1]
    assert done[2]["status"] == "error"
    assert "required input 'topic' has no value" in str(done[2]["error"])
