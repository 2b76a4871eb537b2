"""`agentctl test --live`: repeated live runs on a scripted model, pass rates and thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.testing.evals import percentile
from tests.testing.evals_fixture import (
    PROMPT_A,
    PROMPT_B,
    Scripted,
    agentctl,
    write_agent,
)
from tests.testing.evals_fixture import write_test as write_eval_test


def lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_pass_rate_counts_the_scripted_failures(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_B)
    write_eval_test(tmp_path, case_extra="    pass_rate: 0.75\n")
    code, out, err = agentctl(
        "test",
        "--live",
        "--repeat",
        "8",
        "--output",
        "jsonl",
        cwd=tmp_path,
        monkeypatch=monkeypatch,
    )
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
    code, out, err = agentctl(
        "test", "--live", "--repeat", "4", cwd=tmp_path, monkeypatch=monkeypatch
    )
    assert code == 1, out + err
    assert out.startswith(
        "FAIL  notes.test.yaml::writes notes  3/4 runs passed (75%, needs 80%)\n"
        "      tokens 45/run  cost $0.0000625/run  time "
    )
    assert "      failed: expect.tool_calls 1/4\n" in out
    assert "  x expect.tool_calls: " in out
    assert "1 below their pass rate (4 runs on openai:scripted, agent cost $0.0003)" in out


def test_default_threshold_is_every_run_and_parallel_runs_count_alike(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    code, out, err = agentctl(
        "test",
        "--live",
        "--repeat",
        "3",
        "-j",
        "3",
        "--output",
        "jsonl",
        cwd=tmp_path,
        monkeypatch=monkeypatch,
    )
    assert code == 0, out + err
    case = lines(out)[0]
    assert (case["passes"], case["threshold"], case["tokens"]) == (3, 1.0, 36)


def test_the_offline_run_still_replays_the_cassette(
    tmp_path: Path, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path, head="pass_rate: 0.5\n")
    code, out, _ = agentctl("test", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 1
    assert out.startswith("FAIL  notes.test.yaml::writes notes\n")
    assert scripted.server.requests == []


def test_live_flags_need_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_agent(tmp_path, PROMPT_A)
    write_eval_test(tmp_path)
    code, _, err = agentctl("test", "--price", "1,2", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 2
    assert err.endswith("Error: --price needs --live\n")
    code, _, err = agentctl("test", "--live", "--price", "x", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 2
    assert "expected INPUT,OUTPUT in USD per million tokens (e.g. 0.4,1.6), found 'x'" in err


def test_percentile_is_the_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.9) == 9.0
    assert percentile([1.0, 2.0], 0.9) == 2.0
    assert percentile([], 0.9) == 0.0
