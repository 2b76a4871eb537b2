"""Baselines: the figures of a live eval saved as JSON, and a later run compared against them.

A regression is one of:

- **pass rate**: the case (or one of its expectations) passes less often than in the baseline,
  and a one-sided Fisher exact test says the drop is unlikely to be chance: p < `alpha`
  (default 0.05). Fisher's test is exact for the small run counts evals use (5, 10, 20 runs per
  case), where a normal approximation is wrong, and it stays valid at 0% and 100%, the rates a
  good case has. With 10 runs each, 10/10 -> 7/10 is not flagged (p = 0.105: three failures in
  ten happen by chance), 10/10 -> 6/10 is (p = 0.043).
- **cost** or **tokens**: the mean per run grew by more than the allowed share (default 0.2:
  20%), when the baseline's is above zero.

The file holds, per case, its runs, passes and each expectation's runs and failures, its mean
tokens and cost per run, its times and the sha256 of its agent file; and the model, the date
(UTC) and the number of runs per case (`repeat`).
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import Problem, SpecError
from runner.testing.evals import CURRENT, CaseStats, EvalResult, stats_dict

__all__ = [
    "BASELINE_VERSION",
    "Limits",
    "Regression",
    "compare_baseline",
    "fisher_one_sided",
    "load_baseline",
    "save_baseline",
]

BASELINE_VERSION = 1


@dataclass(frozen=True)
class Limits:
    """What counts as a regression."""

    alpha: float = 0.05
    """The significance level of the pass-rate test."""
    max_cost_increase: float = 0.2
    """The mean cost per run may grow by this share."""
    max_token_increase: float = 0.2
    """The mean tokens per run may grow by this share."""


@dataclass(frozen=True)
class Regression:
    file: str
    case: str
    kind: str
    """`pass_rate`, `expectation`, `cost` or `tokens`."""
    message: str
    before: float
    after: float
    expectation: str | None = None
    p_value: float | None = None

    @property
    def id(self) -> str:
        return f"{self.file}::{self.case}"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "regression",
            "file": self.file,
            "case": self.case,
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
            "message": self.message,
        }
        if self.expectation is not None:
            data["expectation"] = self.expectation
        if self.p_value is not None:
            data["p_value"] = round(self.p_value, 6)
        return data


def fisher_one_sided(passes_before: int, runs_before: int, passes_now: int, runs_now: int) -> float:
    """The p-value of "the pass rate is now lower": the chance, with both samples drawn from one
    pass rate (the 2x2 table's margins fixed), that the new runs pass `passes_now` times or fewer
    (the hypergeometric lower tail)."""
    total = runs_before + runs_now
    passes = passes_before + passes_now
    fails = total - passes
    ways = math.comb(total, runs_now)
    lowest = max(0, runs_now - fails)
    tail = sum(
        math.comb(passes, k) * math.comb(fails, runs_now - k) for k in range(lowest, passes_now + 1)
    )
    return min(1.0, tail / ways)


def save_baseline(result: EvalResult, path: str | Path) -> None:
    """Write the current version's figures to `path`."""
    data = {
        "version": BASELINE_VERSION,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "model": result.model,
        "repeat": result.repeat,
        "agents": result.agents.get(CURRENT, {}),
        "cases": [
            {**_case_entry(stats), "agent_sha256": result.agents.get(CURRENT, {}).get(stats.file)}
            for stats in result.current
        ],
    }
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _case_entry(stats: CaseStats) -> dict[str, Any]:
    entry = stats_dict(stats)
    for key in ("version", "status", "location"):
        entry.pop(key)
    return entry


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read a baseline file; a file that is not one is a located `SpecError`."""
    shown = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(Problem(shown, 0, 0, "", "baseline file not found")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(Problem(shown, 0, 0, "", f"cannot read the baseline: {exc}")) from None
    except json.JSONDecodeError as exc:
        message = f"not JSON: {exc.msg}"
        raise SpecError(Problem(shown, exc.lineno, exc.colno, "", message)) from None
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION:
        message = (
            f"not an agentctl baseline (version {BASELINE_VERSION}); write one with --save-baseline"
        )
        raise SpecError(Problem(shown, 1, 1, "version", message))
    cases = data.get("cases")
    if not isinstance(cases, list) or not all(
        isinstance(c, dict) and {"file", "case", "runs", "passes"} <= set(c) for c in cases
    ):
        message = "`cases` must list objects with file, case, runs and passes"
        raise SpecError(Problem(shown, 1, 1, "cases", message))
    return data


def compare_baseline(
    baseline: dict[str, Any], result: EvalResult, limits: Limits
) -> tuple[list[Regression], list[str]]:
    """The regressions of the current version against `baseline`, and notes (cases that are
    new or gone, another model, another number of runs)."""
    before = {(c["file"], c["case"]): c for c in baseline["cases"]}
    regressions: list[Regression] = []
    notes: list[str] = []
    if baseline.get("model") != result.model:
        notes.append(f"the baseline ran on {baseline.get('model')}, this run on {result.model}")
    for stats in result.current:
        old = before.pop((stats.file, stats.name), None)
        if old is None:
            notes.append(f"{stats.id}: not in the baseline")
            continue
        if stats.status == "error":
            continue  # an error is reported (exit code 2) as it is
        regressions.extend(_regressions(stats, old, limits))
    notes.extend(f"{file}::{case}: in the baseline, not run" for file, case in before)
    return regressions, notes


def _regressions(stats: CaseStats, old: dict[str, Any], limits: Limits) -> list[Regression]:
    found: list[Regression] = []
    runs = len(stats.runs)

    def rate_drop(passes_before: int, runs_before: int, passes_now: int) -> float | None:
        if runs_before <= 0 or passes_now * runs_before >= passes_before * runs:
            return None
        p = fisher_one_sided(passes_before, runs_before, passes_now, runs)
        return p if p < limits.alpha else None

    p = rate_drop(int(old["passes"]), int(old["runs"]), stats.passes)
    if p is not None:
        found.append(
            Regression(
                stats.file,
                stats.name,
                "pass_rate",
                f"pass rate {old['passes']}/{old['runs']} -> {stats.passes}/{runs} "
                f"(one-sided Fisher p = {p:.3f} < {limits.alpha})",
                old["passes"] / old["runs"],
                stats.rate,
                p_value=p,
            )
        )
    checked, failed = stats.checked, stats.failed
    for name, counts in sorted((old.get("expectations") or {}).items()):
        if name not in checked or not isinstance(counts, dict):
            continue
        old_runs = int(counts.get("runs", 0))
        old_passes = old_runs - int(counts.get("failed", 0))
        now_runs = checked[name]
        now_passes = now_runs - failed.get(name, 0)
        if now_runs != runs:
            continue  # an expectation not checked on every run has no rate to compare
        p = rate_drop(old_passes, old_runs, now_passes)
        if p is not None:
            found.append(
                Regression(
                    stats.file,
                    stats.name,
                    "expectation",
                    f"{name} passed {old_passes}/{old_runs} -> {now_passes}/{now_runs} "
                    f"(one-sided Fisher p = {p:.3f} < {limits.alpha})",
                    old_passes / old_runs if old_runs else 0.0,
                    now_passes / now_runs,
                    expectation=name,
                    p_value=p,
                )
            )
    from runner.testing.live_report import money

    for kind, now, allowed, show in (
        ("cost", stats.cost, limits.max_cost_increase, money),
        ("tokens", stats.tokens, limits.max_token_increase, "{:,.0f}".format),
    ):
        was = old.get(kind)
        if now is None or not isinstance(was, int | float) or was <= 0:
            continue
        growth = now / was - 1
        if growth > allowed + 1e-9:
            found.append(
                Regression(
                    stats.file,
                    stats.name,
                    kind,
                    f"{kind} per run {show(was)} -> {show(now)} "
                    f"(+{growth:.0%}, more than +{allowed:.0%})",
                    float(was),
                    float(now),
                )
            )
    return found
