"""JUnit XML for CI: one `<testsuite>` per test file, one `<testcase>` per case.

A failed case is a `<failure>` (its failed expectations in the message, the full report in the
text), a case that could not run an `<error>`, a skipped one `<skipped>`; a bad test file is a
suite with one `<error>` case, so CI shows it too. A live case that reached its pass rate but
regressed against a baseline (`regressions`) is a `<failure>` too: the run exits 1 for it.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from runner.testing.report import details
from runner.testing.suite import SuiteResult

__all__ = ["junit_xml", "write_junit"]


def junit_xml(suite: SuiteResult, regressions: dict[str, list[str]] | None = None) -> ET.Element:
    """`regressions`: per case id (`file::case`), the messages of its regressions."""
    root = ET.Element("testsuites", name="agentctl test")
    by_file: dict[str, list[ET.Element]] = {}
    counts: dict[str, dict[str, float]] = {}
    for result in suite.results:
        case = ET.Element(
            "testcase",
            classname=result.file,
            name=result.name,
            time=f"{result.duration:.3f}",
        )
        tally = counts.setdefault(
            result.file, {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
        )
        tally["tests"] += 1
        tally["time"] += result.duration
        text = "\n".join(details(result))
        regressed = [f"regression: {m}" for m in (regressions or {}).get(result.id, [])]
        if result.status == "failed" or (regressed and result.status == "passed"):
            tally["failures"] += 1
            failed = result.failures if result.status == "failed" else []
            message = "; ".join([f"{c.expectation}: {c.message}" for c in failed] + regressed)
            text = (
                "\n".join([text, *regressed]) if result.status == "failed" else "\n".join(regressed)
            )
            ET.SubElement(case, "failure", message=message, type="AssertionError").text = text
        elif result.status == "error":
            tally["errors"] += 1
            ET.SubElement(case, "error", message="; ".join(result.problems)).text = text
        elif result.status == "skipped":
            tally["skipped"] += 1
            reason = next((c.message for c in result.checks if c.status == "skipped"), "")
            ET.SubElement(case, "skipped", message=reason)
        by_file.setdefault(result.file, []).append(case)
    for problem in suite.problems:
        tally = counts.setdefault(
            problem.file, {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
        )
        tally["tests"] += 1
        tally["errors"] += 1
        case = ET.Element("testcase", classname=problem.file, name="(test file)", time="0")
        ET.SubElement(case, "error", message=str(problem)).text = str(problem)
        by_file.setdefault(problem.file, []).append(case)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for file, cases in by_file.items():
        tally = counts[file]
        element = ET.SubElement(
            root,
            "testsuite",
            name=file,
            tests=str(int(tally["tests"])),
            failures=str(int(tally["failures"])),
            errors=str(int(tally["errors"])),
            skipped=str(int(tally["skipped"])),
            time=f"{tally['time']:.3f}",
        )
        element.extend(cases)
        for key in totals:
            totals[key] += tally[key]
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(int(totals[key])))
    root.set("time", f"{totals['time']:.3f}")
    return root


def write_junit(
    suite: SuiteResult,
    path: str | os.PathLike[str],
    regressions: dict[str, list[str]] | None = None,
) -> None:
    tree = ET.ElementTree(junit_xml(suite, regressions))
    ET.indent(tree)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tree.write(target, encoding="utf-8", xml_declaration=True)
