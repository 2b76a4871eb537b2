"""`agentctl test --live`: repeated live runs on a scripted model, pass rates and thresholds."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from runner.testing.baseline import fisher_one_sided
from runner.testing.compare import diff_calls
from runner.testing.evals import percentile
from tests.testing.evals_fixture import (
    PROMPT_A,
    PROMPT_B,
    Scripted,
    agentctl,
    write_agent,
)
from tests.testing.evals_fixture import write_test as write_eval_test


def cli(cwd: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> tuple[int, str, str]:
    """`agentctl COMMAND` (split on spaces) in `cwd`."""
    return agentctl(*command.split(), cwd=cwd, monkeypatch=monkeypatch)


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_pass_rate_counts_the_scripted_failures(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_B)
    write_eval_test(tmp_path, case_extra="    pass_rate: 0.75\n")
    code, out, err = cli(tmp_path, monkeypatch, "test --live --repeat 8 --output jsonl")
    assert code == 0, out + err
    case, summary = lines(out)
    # Runs 4 and 8 of version B answer without a tool call: 6 of 8 pass.
    assert (case["runs"], case["passes"], case["pass_rate"], case["status"]) == (
        8,
        6,
        0.75,
        "passed",
    )
    assert case["expectations"] == {
        "expect.final.contains": {"runs": 8, "failed": 0},
        "expect.tool_calls": {"runs": 8, "failed": 2},
    }
    # 6 runs of 3 requests and 2 of 1, 18 tokens and $0.000025 (11 x $1 + 7 x $2 per M) each.
    assert case["tokens"] == (6 * 54 + 2 * 18) / 8
    assert case["cost"] == pytest.approx((6 * 3 + 2) * 0.000025 / 8)
    assert summary["cost"] == pytest.approx(20 * 0.000025)
    assert (summary["passed"], summary["failed"], summary["exit_code"]) == (1, 0, 0)
    assert scripted.first_requests["B"] == 8
    # The case's cassette was neither replayed nor overwritten.
    assert "From the cassette" in (tmp_path / "notes.cassette.yaml").read_text()


def test_below_the_threshold_fails_and_names_the_expectation(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_B)
    write_eval_test(tmp_path, head="pass_rate: 0.8\n")
    code, out, err = cli(tmp_path, monkeypatch, "test --live --repeat 4 --junit j.xml")
    assert code == 1, out + err
    assert out.startswith(
        "FAIL  notes.test.yaml::writes notes  3/4 runs passed (75%, needs 80%)\n"
        "      tokens 45/run  cost $0.0000625/run  time "
    )
    assert "      failed: expect.tool_calls 1/4\n" in out
    assert "  x expect.tool_calls: " in out
    junit = (tmp_path / "j.xml").read_text()
    assert 'tests="1" failures="1"' in junit
    assert "3/4 runs passed (75%), needs 80%" in junit
    assert "1 below their pass rate (4 runs on openai:scripted, agent cost $0.00025)" in out


def test_default_threshold_is_every_run_and_parallel_runs_count_alike(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    code, out, err = cli(tmp_path, monkeypatch, "test --live --repeat 3 -j 3 --output jsonl")
    assert code == 0, out + err
    case = lines(out)[0]
    assert (case["passes"], case["threshold"], case["tokens"]) == (3, 1.0, 36)


def test_the_offline_run_still_replays_the_cassette(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path, head="pass_rate: 0.5\n")
    code, out, _ = cli(tmp_path, monkeypatch, "test")
    assert code == 1
    assert out.startswith("FAIL  notes.test.yaml::writes notes\n")
    assert scripted.server.requests == []


def test_live_flags_need_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    code, _, err = cli(tmp_path, monkeypatch, "test --price 1,2")
    assert code == 2
    assert err.endswith("Error: --price needs --live\n")
    code, _, err = cli(tmp_path, monkeypatch, "test --live --price x")
    assert code == 2
    assert "expected INPUT,OUTPUT in USD per million tokens (e.g. 0.4,1.6), found 'x'" in err


def test_percentile_is_the_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.9) == 9.0
    assert percentile([1.0, 2.0], 0.9) == 2.0
    assert percentile([], 0.9) == 0.0


def test_baseline_flags_a_significant_drop_and_nothing_else(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path, head="pass_rate: 0.5\n")
    code, out, err = cli(tmp_path, monkeypatch, "test --live --repeat 8 --save-baseline base.json")
    assert code == 0, out + err
    saved = json.loads((tmp_path / "base.json").read_text())
    assert saved["agents"] == {"notes.test.yaml": hashlib.sha256(agent.read_bytes()).hexdigest()}
    assert (saved["model"], saved["repeat"]) == ("openai:scripted", 8)
    (case,) = saved["cases"]
    assert (case["case"], case["runs"], case["passes"], case["tokens"]) == (
        "writes notes",
        8,
        8,
        36,
    )
    assert case["expectations"]["expect.tool_calls"] == {"runs": 8, "failed": 0}
    assert case["agent_sha256"] == saved["agents"]["notes.test.yaml"]
    assert saved["date"].endswith("+00:00")

    # Version B fails every 2nd run: 4/8 against 8/8 is p = C(12,4)/C(16,8) = 0.0385.
    # Its mean tokens and cost match A's (4 runs of 54 tokens, 4 of 18), so they are no regression.
    write_agent(tmp_path, PROMPT_B)
    scripted.fail_every = 2
    code, out, err = cli(
        tmp_path,
        monkeypatch,
        "test --live --repeat 8 --baseline base.json --output jsonl --report r.html",
    )
    assert code == 1, out + err
    found = [line for line in lines(out) if line["type"] == "regression"]
    assert [(r["kind"], r.get("expectation"), r["before"], r["after"]) for r in found] == [
        ("pass_rate", None, 1.0, 0.5),
        ("expectation", "expect.tool_calls", 1.0, 0.5),
    ]
    assert found[0]["p_value"] == round(495 / 12870, 6)
    assert lines(out)[-1]["regressions"] == 2
    page = (tmp_path / "r.html").read_text()
    assert "Regressions against the baseline base.json" in page
    assert "expect.tool_calls passed 8/8 -&gt; 4/8 (one-sided Fisher p = 0.038 &lt; 0.05)" in page
    assert lines(out)[0]["status"] == "passed"  # above its own threshold, still a regression


def test_a_regression_above_the_threshold_is_a_junit_failure(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run exits 1 for a regression: the JUnit report CI shows says which case, and why."""
    import xml.etree.ElementTree as ET

    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path, head="pass_rate: 0.5\n")
    assert cli(tmp_path, monkeypatch, "test --live --repeat 6 --save-baseline b.json")[0] == 0
    write_agent(tmp_path, PROMPT_B)
    scripted.fail_every = 2  # 3/6 against 6/6: p = C(9,3)/C(12,6) = 0.0909, no regression
    code, out, err = cli(
        tmp_path, monkeypatch, "test --live --repeat 6 --baseline b.json --junit j.xml"
    )
    assert code == 0, out + err
    assert ET.parse(tmp_path / "j.xml").getroot().get("failures") == "0"
    scripted.fail_every = 100  # 6/6, 54 tokens a run against 36: +50%
    code, out, err = cli(
        tmp_path, monkeypatch, "test --live --repeat 6 --baseline b.json --junit j.xml"
    )
    root = ET.parse(tmp_path / "j.xml").getroot()
    (failure,) = root.iter("failure")
    assert code == 1 and root.get("failures") == "1", out + err
    assert failure.get("message") == (
        "regression: cost per run $0.00005 -> $0.000075 (+50%, more than +20%); "
        "regression: tokens per run 36 -> 54 (+50%, more than +20%)"
    )
    assert "expect.tool_calls" not in failure.get("message", "")  # the case reached its rate


def test_baseline_cost_and_tokens_growth(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path, head="pass_rate: 0.5\n")
    cli(tmp_path, monkeypatch, "test --live --repeat 4 --save-baseline base.json")
    write_agent(tmp_path, PROMPT_B)
    # B: 3 of 4 runs pass (not a significant drop: p = 0.5), 45 tokens a run against 36 (+25%).
    code, out, err = cli(tmp_path, monkeypatch, "test --live --repeat 4 --baseline base.json")
    assert code == 1, out + err
    assert "against the baseline base.json:\n" in out
    assert (
        "REGRESSION notes.test.yaml::writes notes: cost per run $0.00005 -> $0.0000625 "
        "(+25%, more than +20%)\n"
        "REGRESSION notes.test.yaml::writes notes: tokens per run 36 -> 45 (+25%, more than +20%)\n"
    ) in out
    code, out, err = cli(
        tmp_path,
        monkeypatch,
        "test --live --repeat 4 --baseline base.json --max-cost-increase 0.25 --max-token-increase 0.3",
    )
    assert code == 0, out + err
    assert "no regressions\n" in out


def test_a_bad_baseline_is_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    (tmp_path / "base.json").write_text('{"version": 1,\n  "cases": 3}')
    code, out, err = cli(tmp_path, monkeypatch, "test --live --baseline base.json")
    assert (code, out) == (2, "")
    assert (
        err == "base.json:1:1: cases: `cases` must list objects with file, case, runs and passes\n"
    )


def test_fisher_one_sided() -> None:
    assert fisher_one_sided(10, 10, 7, 10) == pytest.approx(19448 / 184756)
    assert fisher_one_sided(10, 10, 6, 10) == pytest.approx((8008 + 0) / 184756)
    assert fisher_one_sided(5, 10, 5, 10) > 0.5
    assert fisher_one_sided(0, 4, 0, 4) == 1.0


def comparison(out: str) -> dict[str, Any]:
    (found,) = [line for line in lines(out) if line["type"] == "comparison"]
    return found


EXPECTED_STEPS = [
    {"op": "added", "tool": "ls", "args": {"path": "/"}},
    {
        "op": "changed",
        "tool": "write_file",
        "args": {"file_path": "/notes.md", "content": "B"},
        "before": {"file_path": "/notes.md", "content": "A"},
        "changes": {"content": ["A", "B"]},
    },
]


def test_compare_with_a_file_diffs_trajectories_answers_and_figures(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_B)
    write_agent(tmp_path, PROMPT_A, name="old.yaml")
    write_eval_test(tmp_path, head="pass_rate: 0.75\n")
    code, out, err = cli(
        tmp_path,
        monkeypatch,
        "test --compare old.yaml --repeat 4 --output jsonl --report report.html",
    )
    assert code == 0, out + err
    cases = [line for line in lines(out) if line["type"] == "case"]
    assert [(c["version"], c["passes"], c["runs"]) for c in cases] == [
        ("old.yaml", 4, 4),
        ("current", 3, 4),
    ]
    found = comparison(out)
    assert (found["before"], found["after"]) == ("old.yaml", "current")
    assert found["pass_rates"] == {
        "old.yaml": {"runs": 4, "passes": 4, "pass_rate": 1.0},
        "current": {"runs": 4, "passes": 3, "pass_rate": 0.75},
    }
    assert found["trajectory"] == EXPECTED_STEPS
    assert found["trajectory_runs"] == {"old.yaml": 4, "current": 3}
    assert found["answers"] == {"old.yaml": "Done A.", "current": "Done B, notes written."}
    assert found["answer_diff"] == [
        "@@ -1 +1 @@",
        "-Done A.",
        "+Done B, notes written.",
    ]
    deltas = found["deltas"]
    assert (deltas["tokens"]["before"], deltas["tokens"]["after"]) == (36, 45)
    assert deltas["tokens"]["change"] == pytest.approx(0.25)
    assert deltas["cost"]["change"] == pytest.approx(0.25)
    assert deltas["pass_rate"]["change"] == -0.25

    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") == 4
    assert "<script" not in page and "src=" not in page and "href=" not in page
    assert "+ ls(path=&#x27;/&#x27;)" in page
    assert "~ write_file(file_path=&#x27;/notes.md&#x27;, content=&#x27;B&#x27;)" in page


def test_a_tie_of_trajectories_is_the_passing_runs_whichever_ran_first(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With -j the failing run of a flaky version may come first: the diff shows what the
    version does when it works, not what the scheduler happened to run first."""
    write_agent(tmp_path, PROMPT_B)
    write_agent(tmp_path, PROMPT_A, name="old.yaml")
    write_eval_test(tmp_path, head="pass_rate: 0.5\n")
    scripted.fail_every = 2
    scripted.first_requests["B"] = 1  # B's first run is its 2nd first request: no tool call
    code, out, err = cli(
        tmp_path, monkeypatch, "test --compare old.yaml --repeat 2 -j 1 --output jsonl"
    )
    assert code == 0, out + err
    found = comparison(out)
    assert found["trajectory_runs"] == {"old.yaml": 2, "current": 1}
    assert found["trajectory"] == EXPECTED_STEPS
    assert found["answers"]["current"] == "Done B, notes written."
    assert [t["runs"] for t in found["trajectories"]["current"]] == [1, 1]
    assert found["trajectories"]["current"][1]["calls"] == []


def test_compare_with_a_git_ref(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "A"], check=True)
    write_agent(tmp_path, PROMPT_B)
    code, out, err = cli(tmp_path, monkeypatch, "test --compare HEAD --repeat 4")
    assert code == 1, out + err  # B passes 3 of 4, the file's default threshold is 1.0
    assert (
        "COMPARE notes.test.yaml::writes notes: HEAD -> current\n"
        "  pass rate  HEAD 4/4 (100%)   current 3/4 (75%)\n"
        "  tokens/run 36 -> 45 (+25%)   cost/run $0.00005 -> $0.0000625 (+25%)   time median "
    ) in out
    assert (
        "  tool calls (the most common: HEAD 4/4 runs, current 3/4 runs):\n"
        "    + ls(path='/')\n"
        "    ~ write_file(file_path='/notes.md', content='B')  (content: 'A' -> 'B')\n"
        "  answer:\n"
    ) in out
    assert "PASS  notes.test.yaml::writes notes [HEAD]  4/4 runs passed (100%, needs 100%)" in out
    assert not list(Path(tempfile.gettempdir()).glob("agentctl-compare-*"))


def test_compare_with_an_unknown_ref(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    code, _, err = cli(tmp_path, monkeypatch, "test --compare v9")
    assert code == 2
    assert err == "error: --compare v9: no such file, and no such git commit\n"


def test_diff_calls_aligns_on_tool_names() -> None:
    before = [("read", {"p": 1}), ("write", {"p": 1}), ("run", {})]
    after = [("read", {"p": 1}), ("search", {"q": "x"}), ("write", {"p": 2})]
    assert [(s.op, s.tool) for s in diff_calls(before, after)] == [
        ("same", "read"),
        ("added", "search"),
        ("changed", "write"),
        ("removed", "run"),
    ]
    # A call made alike stays `same`; the new call before it is added, not a change of it.
    twice = diff_calls([("write", {"p": 1})], [("write", {"p": 2}), ("write", {"p": 1})])
    assert [(s.op, s.args) for s in twice] == [("added", {"p": 2}), ("same", {"p": 1})]


def test_the_judge_runs_live_and_its_cost_is_apart(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path, expect_extra="      judge: {rubric: Says it wrote notes}\n")
    command = "test --live --repeat 2 --judge-model openai:judge --judge-price 1,2 --output jsonl"
    code, out, err = cli(tmp_path, monkeypatch, command)
    assert code == 0, out + err
    case, summary = lines(out)
    assert case["expectations"]["expect.judge"] == {"runs": 2, "failed": 0}
    assert (case["tokens"], case["judge_tokens"]) == (36, 2 * 18)
    assert case["cost"] == pytest.approx(0.00005)
    assert case["judge_cost"] == pytest.approx(2 * 0.000025)
    assert (summary["cost"], summary["judge_cost"]) == (pytest.approx(0.0001), 5e-05)
    judged = [r for r in scripted.server.requests if "response_format" in r]
    assert [r["model"] for r in judged] == ["judge", "judge"]


def test_record_takes_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    code, _, err = cli(tmp_path, monkeypatch, "test --live --record --repeat 2")
    assert code == 2
    assert "--record writes one cassette per case" in err


def test_live_on_another_model_priced_on_the_command_line(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    command = "test --live --model openai:other --price 2,4 --output jsonl"
    code, out, err = cli(tmp_path, monkeypatch, command)
    assert code == 0, out + err
    case, summary = lines(out)
    assert case["cost"] == pytest.approx(2 * (11 * 2 + 7 * 4) / 1_000_000)
    assert summary["model"] == "openai:other"
    assert {r["model"] for r in scripted.server.requests} == {"other"}


def test_a_pass_rate_above_one_is_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path, case_extra="    pass_rate: 1.5\n")
    code, _, err = cli(tmp_path, monkeypatch, "validate notes.test.yaml")
    assert code == 2
    assert (
        err == "notes.test.yaml:7:16: cases[0].pass_rate: must be at most 1, found the number 1.5\n"
    )


def test_a_cheap_run_costs_what_it_costs_and_an_unwritten_report_is_not_announced(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    (tmp_path / "file").write_text("")
    code, out, err = cli(tmp_path, monkeypatch, "test --live --report file/r.html")
    assert code == 2, out + err
    assert "cannot write the report" in err and "report: file/r.html" not in out
    # one run of 36 tokens: 22 in at $1/M, 14 out at $2/M
    assert "1 passed (1 runs on openai:scripted, agent cost $0.00005)" in out
