"""How results read: a line per case, then every failure in full (text); or JSON lines.

A failure shows the case and where it is written, each failed expectation with what was expected
and what was found (a unified diff when both are texts), the last steps of the run, and the
command that shows the whole thread.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from runner.errors import Problem
from runner.testing.execution import CaseResult
from runner.testing.expectations import Check
from runner.testing.suite import SuiteResult

__all__ = [
    "CaseResult",
    "case_line",
    "details",
    "json_line",
    "json_problem",
    "summary",
    "summary_json",
]

_MARK = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "error": "ERROR"}


def case_line(result: CaseResult) -> str:
    line = f"{_MARK[result.status]:5} {result.id}"
    if result.runs > 1:
        rate = result.passes / result.runs
        line += f"  ({result.passes}/{result.runs} passed, {rate:.0%})"
    skipped = [c for c in result.checks if c.status == "skipped"]
    if result.status == "skipped" and skipped:
        line += f"  ({skipped[0].expectation} skipped: {skipped[0].message})"
    if result.recorded:
        line += f"  (recorded {result.recorded})"
    judged = [c for c in result.checks if c.expectation == "expect.judge" and c.status == "passed"]
    if judged and result.status == "passed":
        line += f"\n      judge: {judged[0].message}"
    return line


def _diff(expected: str, found: str) -> list[str]:
    lines = difflib.unified_diff(
        expected.splitlines(), found.splitlines(), "expected", "found", lineterm="", n=2
    )
    return list(lines)


def _indent(text: str, prefix: str = "      ") -> list[str]:
    return [prefix + line for line in (text.splitlines() or [""])]


def _check_lines(check: Check) -> list[str]:
    lines = [f"  x {check.expectation}: {check.message}"]
    if check.expected is None or check.found is None:
        return lines
    if check.text_diff:
        lines.extend("    " + line for line in _diff(check.expected, check.found))
        return lines
    one_line = "\n" not in check.expected + check.found
    if one_line and len(check.expected) + len(check.found) <= 90:
        lines.append(f"    expected: {check.expected}")
        lines.append(f"    found:    {check.found}")
        return lines
    lines.append("    expected:")
    lines.extend(_indent(check.expected))
    lines.append("    found:")
    lines.extend(_indent(check.found))
    return lines


def details(result: CaseResult) -> list[str]:
    """The full report of a failed (or errored) case."""
    lines = [f"{_MARK[result.status]} {result.id} ({result.location})"]
    for problem in result.problems:
        lines.append(f"  {problem}")
    for check in result.failures:
        lines.extend(_check_lines(check))
    for check in result.checks:
        if check.expectation == "expect.judge" and check.status == "passed":
            lines.append(f"  judge: {check.message}")
    if result.transcript:
        lines.append("  last steps:")
        lines.extend(f"    {line}" for line in result.transcript)
    if result.thread_id and result.db:
        lines.append(f"  thread: agentctl threads show {result.thread_id} --db {result.db}")
    return lines


def summary(suite: SuiteResult, seconds: float) -> str:
    parts = [
        f"{suite.count(status)} {word}"
        for status, word in (
            ("passed", "passed"),
            ("failed", "failed"),
            ("skipped", "skipped"),
            ("error", "errors"),
        )
        if suite.count(status)
    ]
    if suite.problems:
        files = len({p.file for p in suite.problems})
        parts.append(f"{files} bad test file{'s' if files != 1 else ''}")
    return f"{', '.join(parts) or 'no cases'} in {seconds:.1f}s"


def _check_dict(check: Check) -> dict[str, Any]:
    data: dict[str, Any] = {"expectation": check.expectation, "status": check.status}
    if check.message:
        data["message"] = check.message
    if check.expected is not None:
        data["expected"] = check.expected
    if check.found is not None:
        data["found"] = check.found
    return data


def json_line(result: CaseResult) -> str:
    data: dict[str, Any] = {
        "type": "case",
        "file": result.file,
        "case": result.name,
        "status": result.status,
        "location": result.location,
        "duration": round(result.duration, 3),
        "thread_id": result.thread_id,
        "checks": [_check_dict(c) for c in result.checks],
    }
    if result.db:
        data["db"] = result.db
    if result.problems:
        data["problems"] = result.problems
    if result.runs > 1:
        data["runs"], data["passes"] = result.runs, result.passes
    if result.recorded:
        data["recorded"] = result.recorded
    if result.status in ("failed", "error"):
        data["transcript"] = result.transcript
    return json.dumps(data, ensure_ascii=False)


def summary_json(suite: SuiteResult, seconds: float) -> str:
    return json.dumps(
        {
            "type": "summary",
            "passed": suite.count("passed"),
            "failed": suite.count("failed"),
            "skipped": suite.count("skipped"),
            "errors": suite.count("error"),
            "bad_files": [str(p) for p in suite.problems],
            "exit_code": suite.exit_code,
            "duration": round(seconds, 3),
        }
    )


def json_problem(problem: Problem) -> str:
    """A bad test file, as a JSON line like `agentctl validate --json`'s."""
    return json.dumps(
        {
            "type": "problem",
            "file": problem.file,
            "line": problem.line,
            "col": problem.col,
            "path": problem.path,
            "message": problem.message,
        },
        ensure_ascii=False,
    )
