"""How live evals read in the terminal (a line or two per case, then a summary) and as JSON lines.

```
PASS  notes.test.yaml::writes the notes  3/4 runs passed (75%, needs 70%)
      tokens 1,204/run  cost $0.0031/run  time 2.1s median, 3.4s p90
      failed: expect.tool_calls 1/4
```
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from runner.spec.budgets import human_cost
from runner.testing.compare import CaseComparison, describe_changes, format_call
from runner.testing.evals import CaseStats, EvalResult, stats_dict

__all__ = [
    "case_lines",
    "comparison_lines",
    "json_case",
    "json_comparison",
    "money",
    "summary",
    "summary_json",
]

_MARK = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "error": "ERROR"}


def money(usd: float | None) -> str:
    """Dollars, with enough digits for a cheap run's fraction of a cent."""
    if usd is None:
        return "-"
    if usd == 0 or usd >= 0.01:
        return human_cost(usd)
    return f"${usd:.8f}".rstrip("0")


def seconds(value: float) -> str:
    return f"{value:.2f}s" if value < 10 else f"{value:.1f}s"


def case_lines(stats: CaseStats, *, label: bool = False) -> list[str]:
    """A case's figures; `label` names the version (when more than one ran)."""
    version = f" [{stats.version}]" if label else ""
    runs = len(stats.runs)
    lines = [
        f"{_MARK[stats.status]:5} {stats.id}{version}  {stats.passes}/{runs} runs passed "
        f"({stats.rate:.0%}, needs {stats.threshold:.0%})"
    ]
    figures = (
        f"tokens {stats.tokens:,.0f}/run  cost {money(stats.cost)}/run  "
        f"time {seconds(stats.time_median)} median, {seconds(stats.time_p90)} p90"
    )
    if stats.judge_tokens or stats.judge_cost is not None:
        figures += f"  judge {stats.judge_tokens:,} tokens, {money(stats.judge_cost)}"
    lines.append(f"      {figures}")
    failed = stats.failed
    if failed:
        shown = ", ".join(f"{name} {count}/{runs}" for name, count in sorted(failed.items()))
        lines.append(f"      failed: {shown}")
    problems = sorted({p for r in stats.runs for p in r.problems})
    lines.extend(f"      {problem}" for problem in problems[:3])
    return lines


def summary(result: EvalResult, elapsed: float, *, regressions: int = 0) -> str:
    current = result.current
    counts = {s: sum(1 for c in current if c.status == s) for s in _MARK}
    parts = [
        f"{counts[status]} {word}"
        for status, word in (
            ("passed", "passed"),
            ("failed", "below their pass rate"),
            ("skipped", "skipped"),
            ("error", "errors"),
        )
        if counts[status]
    ]
    if regressions:
        parts.append(f"{regressions} regression{'s' if regressions != 1 else ''}")
    if result.problems:
        files = len({p.file for p in result.problems})
        parts.append(f"{files} bad test file{'s' if files != 1 else ''}")
    runs = sum(len(s.runs) for s in result.all_stats())
    costs = [s.cost * len(s.runs) for s in result.all_stats() if s.cost is not None]
    judge = [s.judge_cost for s in result.all_stats() if s.judge_cost is not None]
    spent = f", agent cost {money(sum(costs))}" if costs else ""  # a cheap run is not $0
    if judge:
        spent += f", judge cost {money(sum(judge))}"
    model = f" on {result.model}" if result.model else ""
    return f"{', '.join(parts) or 'no cases'} ({runs} runs{model}{spent}) in {elapsed:.1f}s"


def json_case(stats: CaseStats) -> str:
    data: dict[str, Any] = {"type": "case", **stats_dict(stats)}
    failing = next((r for r in stats.runs if r.status in ("failed", "error")), None)
    if failing is not None:
        data["thread_id"] = failing.thread_id
        if failing.db:
            data["db"] = failing.db
        data["transcript"] = failing.transcript
    return json.dumps(data, ensure_ascii=False)


def summary_json(
    result: EvalResult, elapsed: float, *, exit_code: int, regressions: int = 0
) -> str:
    current = result.current
    costs = [s.cost * len(s.runs) for s in result.all_stats() if s.cost is not None]
    judge = [s.judge_cost for s in result.all_stats() if s.judge_cost is not None]
    return json.dumps(
        {
            "type": "summary",
            "passed": sum(1 for c in current if c.status == "passed"),
            "failed": sum(1 for c in current if c.status == "failed"),
            "skipped": sum(1 for c in current if c.status == "skipped"),
            "errors": sum(1 for c in current if c.status == "error"),
            "regressions": regressions,
            "runs": sum(len(s.runs) for s in result.all_stats()),
            "repeat": result.repeat,
            "model": result.model,
            "cost": round(sum(costs), 8) if costs else None,
            "judge_cost": round(sum(judge), 8) if judge else None,
            "bad_files": [str(p) for p in result.problems],
            "exit_code": exit_code,
            "duration": round(elapsed, 3),
        }
    )


def _change(old: float | None, new: float | None, show: Callable[[float | None], str]) -> str:
    text = f"{show(old)} -> {show(new)}"
    if old and new is not None:
        text += f" ({new / old - 1:+.0%})"
    return text


_OP = {"same": " ", "added": "+", "removed": "-", "changed": "~"}


def comparison_lines(comparison: CaseComparison) -> list[str]:
    """Pass rates side by side, the trajectory diff, the answer diff, the deltas."""
    old, new = comparison.before, comparison.after
    lines = [f"COMPARE {comparison.id}: {old.version} -> {new.version}"]
    lines.append(
        f"  pass rate  {old.version} {old.passes}/{len(old.runs)} ({old.rate:.0%})"
        f"   {new.version} {new.passes}/{len(new.runs)} ({new.rate:.0%})"
    )
    lines.append(
        f"  tokens/run {_change(old.tokens, new.tokens, lambda v: f'{v or 0:,.0f}')}"
        f"   cost/run {_change(old.cost, new.cost, money)}"
        f"   time median {_change(old.time_median, new.time_median, lambda v: seconds(v or 0))}"
    )
    runs_old, runs_new = comparison.trajectory_runs
    lines.append(
        f"  tool calls (the most common: {old.version} {runs_old}/{len(old.runs)} runs, "
        f"{new.version} {runs_new}/{len(new.runs)} runs):"
    )
    for step in comparison.steps:
        line = f"    {_OP[step.op]} {format_call(step.tool, step.args)}"
        if step.before is not None:
            line += f"  ({describe_changes(step.before, step.args)})"
        lines.append(line)
    if not comparison.steps:
        lines.append("    (none in either)")
    if comparison.answer_diff:
        lines.append("  answer:")
        lines.extend(f"    {line}" for line in comparison.answer_diff)
    else:
        lines.append("  answer: the same")
    return lines


def json_comparison(comparison: CaseComparison) -> str:
    return json.dumps(comparison.as_dict(), ensure_ascii=False, default=str)
