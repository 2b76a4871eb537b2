"""Budgets (`limits.tokens`, `limits.time`, `limits.cost`): each stops the run with a located
error and a non-zero exit, subagents' calls count, the thread can be continued once the budget is
raised; prices put a cost on `usage` events and the last line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.errors import ResolutionError
from runner.events import Error, Final, Usage
from runner.middleware import budgets
from runner.run import Session
from runner.spec.budgets import human_cost, human_duration, parse_duration
from tests.conftest import run_cli
from tests.spec.files import write_files as write

AGENT = """
name: bud
model:
  id: openai:gpt-4.1-mini
  price: {input: 0.4, output: 1.6}
prompt: You count.
limits: {LIMITS}
todos: false
general_purpose_agent: false
subagents:
  - name: helper
    description: Helps
    prompt: You help.
"""
# replay counts tokens: the main agent's first call 518 + 20, the helper's 644 + 4
CASSETTE = """
version: 1
agents:
  bud:
    - content: Asking the helper.
      tool_calls:
        - {name: task, args: {description: count to three, subagent_type: helper}}
    - content: Done.
  helper:
    - content: one two three
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def agent(tmp_path: Path, limits: str) -> Path:
    return write(
        tmp_path,
        {"bud.yaml": AGENT.replace("{LIMITS}", limits), "bud.cassette.yaml": CASSETTE},
    )


def run_events(path: Path, tmp_path: Path, **kwargs: Any) -> list[Any]:
    with Session(path, model="replay:bud.cassette.yaml", db=tmp_path / "db.sqlite") as session:
        return list(session.stream("go", **kwargs))


def test_the_token_budget_counts_subagents_and_stops_with_a_located_error(tmp_path: Path) -> None:
    path = agent(tmp_path, "{tokens: 1000}")
    done = run_cli("run", "bud.yaml", "go", "--model", "replay:bud.cassette.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert (
        "error: bud.yaml:6:18: limits.tokens: budget of 1,000 tokens reached (1,186 used); the "
        "run stopped (raise `limits.tokens` and continue the thread to let it go on)"
    ) in done.stderr
    assert "✓ one two three" in done.stdout  # the helper ran; the main agent's next call did not
    thread = done.stderr.split("thread ", 1)[1].split()[0]

    # the thread is kept: with the budget raised, the run goes on where it stopped
    path.write_text(path.read_text().replace("tokens: 1000", "tokens: 100000"))
    more = run_cli("run", "bud.yaml", "--thread", thread, cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert more.stdout.rstrip().endswith("Done.")


def test_the_cost_budget(tmp_path: Path) -> None:
    path = agent(tmp_path, "{cost: 0.0003}")
    events = run_events(path, tmp_path)
    error = events[-1]
    assert isinstance(error, Error) and error.kind == "BudgetExceeded"
    assert error.message.startswith(
        "bud.yaml:6:16: limits.cost: budget of $0.0003 reached ($0.0005 spent)"
    )
    usage = [e for e in events if isinstance(e, Usage)]
    assert [u.agent for u in usage] == ["bud", "helper"]
    for u in usage:  # USD 0.4 per million tokens in, 1.6 out
        assert u.cost == round((u.input_tokens * 0.4 + u.output_tokens * 1.6) / 1e6, 10)


def test_the_time_budget_leaves_out_no_working_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter(range(0, 10_000, 100))  # every look at the clock: 100 s later
    monkeypatch.setattr(budgets, "_now", lambda: float(next(clock)))
    path = agent(tmp_path, "{time: 2m}")
    error = run_events(path, tmp_path)[-1]
    assert isinstance(error, Error) and error.kind == "BudgetExceeded"
    assert "bud.yaml:6:16: limits.time: budget of 2m reached (" in error.message


def test_within_budget_the_run_finishes_and_usage_carries_the_cost(tmp_path: Path) -> None:
    path = agent(tmp_path, "{tokens: 100000, time: 1h, cost: 1}")
    events = run_events(path, tmp_path)
    assert isinstance(events[-1], Final)
    usage = [e.to_dict() for e in events if isinstance(e, Usage)]
    assert len(usage) == 3 and all(u["cost"] > 0 for u in usage)
    done = run_cli("run", "bud.yaml", "go", "--model", "replay:bud.cassette.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"  cost: \$0\.000\d+\n", done.stderr)  # the plain renderer's last line


def test_without_prices_usage_has_no_cost(tmp_path: Path) -> None:
    path = agent(tmp_path, "{}")
    path.write_text(path.read_text().replace("  price: {input: 0.4, output: 1.6}\n", ""))
    done = run_cli(
        *("run", "bud.yaml", "go", "--model", "replay:bud.cassette.yaml", "--output", "jsonl"),
        cwd=tmp_path,
    )
    usage = [json.loads(line) for line in done.stdout.splitlines() if '"usage"' in line]
    assert usage and all("cost" not in u for u in usage)


def test_a_cost_budget_needs_prices(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "b.yaml": """
            name: b
            model:
              id: openai:gpt-4.1-mini
              fallbacks: [anthropic:claude-haiku-4-5]
              price: {input: 0.4, output: 1.6}
            limits: {cost: 0.5}
            subagents:
              - name: helper
                description: Helps
                model: openai:gpt-4.1
                limits: {tokens: 100}
            """
        },
    )
    from runner.check.validate import validate_file

    assert [str(p) for p in validate_file(path)] == [
        "b.yaml:4:15: model.fallbacks[0]: anthropic:claude-haiku-4-5 has no `price`; "
        "`limits.cost` (b.yaml:6:16) needs its price",
        "b.yaml:10:12: subagents[0].model: openai:gpt-4.1 has no `price`; `limits.cost` "
        "(b.yaml:6:16) needs its price",
        "b.yaml:11:22: subagents[0].limits.tokens: a budget counts the whole run, subagents "
        "included: set `limits.tokens` on the main agent",
    ]


def test_a_model_override_without_a_price_cannot_keep_a_cost_budget(tmp_path: Path) -> None:
    path = agent(tmp_path, "{cost: 1}")
    from runner.agent.resolve import Resolver

    spec = runner.load_spec(path)
    with pytest.raises(ResolutionError, match=r"the price of openai:gpt-4\.1 .* is not known"):
        Resolver(model="openai:gpt-4.1", with_models=False).resolve(spec)


def test_spec_values_are_checked_and_located(tmp_path: Path) -> None:
    path = agent(tmp_path, "{time: 10x, tokens: 0, cost: -1}")
    with pytest.raises(runner.SpecError) as info:
        runner.load_spec(path)
    assert [str(p) for p in info.value.problems] == [
        "bud.yaml:6:16: limits.time: expected a duration like 10m, 90s or 1h30m (or a number "
        "of seconds), found text '10x'",
        "bud.yaml:6:29: limits.tokens: must be greater than 0, found the number 0",
        "bud.yaml:6:38: limits.cost: must be greater than 0, found the number -1",
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("10m", 600), ("1h30m", 5400), ("1.5h", 5400), (45, 45), ("2.5", 2.5)],
)
def test_durations(text: Any, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_how_budgets_are_shown() -> None:
    assert [human_duration(s) for s in (45, 125, 600, 5400, 3600, 2.25)] == [
        "45s",
        "2m 05s",
        "10m",
        "1h 30m",
        "1h",
        "2.2s",
    ]
    assert [human_cost(c) for c in (0.05, 0.0003, 1.5, 0)] == ["$0.05", "$0.0003", "$1.50", "$0"]
