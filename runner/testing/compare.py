"""What changed between two versions of an agent file: `agentctl test FILE --compare REF`.

The other version is a file, or a git ref: the agent file's folder as it is at REF (`git archive`
into a temporary folder), so the `include:`s, prompt files, cassettes and tool modules it names
by relative paths are REF's too. Both versions run the same cases (live, repeated); per case this
compares their pass rates, their tool-call trajectories, their final answers and their cost,
tokens and time.

A version's trajectory is its most common sequence of `(tool, arguments)` over its runs (ties:
one made by a passing run, then the one seen first); its answer is the answer of the first
(passing) run with that trajectory. The two
sequences are aligned on the tools' names with `difflib.SequenceMatcher`: a call in both with
other arguments is `changed`, one only in the new version `added`, only in the old `removed`
(calls made alike are matched first, on tool and arguments together).
"""

from __future__ import annotations

import difflib
import io
import json
import subprocess
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import ResolutionError
from runner.testing.evals import CaseStats, EvalResult, Version
from runner.testing.execution import CaseResult
from runner.testing.loader import LoadedTestFile

__all__ = [
    "CaseComparison",
    "OtherVersion",
    "Step",
    "compare_versions",
    "describe_changes",
    "diff_calls",
    "format_call",
    "trajectory",
]

ToolCall = tuple[str, dict[str, Any]]


class OtherVersion:
    """The version `--compare` names: a path to an agent file, or a git ref. `agent_for` gives,
    per test file, the agent file of that version; `close` removes the folders made for refs."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        self._folders: list[Path] = []
        self._made: dict[Path, Path] = {}

    def version(self) -> Version:
        return Version(self.ref, self.agent_for)

    def agent_for(self, loaded: LoadedTestFile) -> Path:
        given = Path(self.ref)
        if given.is_file():
            return given
        agent = loaded.agent_path.resolve()
        if agent not in self._made:
            self._made[agent] = self._at_ref(agent)
        return self._made[agent]

    def _at_ref(self, agent: Path) -> Path:
        top = Path(_git(agent.parent, "rev-parse", "--show-toplevel", why=self.ref).strip())
        folder = agent.parent.relative_to(top.resolve())
        inside = (folder / agent.name).as_posix()
        _git(top, "rev-parse", "--verify", "--quiet", f"{self.ref}^{{commit}}", why=self.ref)
        try:
            _git(top, "cat-file", "-e", f"{self.ref}:{inside}", why=self.ref)
        except ResolutionError:
            raise ResolutionError(
                f"--compare {self.ref}: {inside} is not in {self.ref} (a path to the other "
                "version of the agent file works too)"
            ) from None
        archive = subprocess.run(
            ["git", "archive", "--format=tar", self.ref, "--", folder.as_posix() or "."],
            cwd=top,
            capture_output=True,
            check=False,
        )
        if archive.returncode != 0:
            raise ResolutionError(
                f"--compare {self.ref}: git archive failed: {archive.stderr.decode().strip()}"
            )
        target = Path(tempfile.mkdtemp(prefix="agentctl-compare-"))
        self._folders.append(target)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(target, filter="data")
        return target / inside

    def close(self) -> None:
        import shutil

        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)


def _git(cwd: Path, *args: str, why: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise ResolutionError(f"--compare {why}: not a file, and git is not installed") from None
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()
        reason = detail[-1] if detail else f"git {args[0]} failed"
        if args[0] == "rev-parse" and "--verify" in args:
            reason = "no such file, and no such git commit"
        raise ResolutionError(f"--compare {why}: {reason}")
    return done.stdout


# --------------------------------------------------------------------------- trajectories


def _key(calls: list[ToolCall]) -> tuple[tuple[str, str], ...]:
    return tuple((name, json.dumps(args, sort_keys=True, default=str)) for name, args in calls)


def _ranked(stats: CaseStats) -> list[tuple[CaseResult, int]]:
    """Each tool-call sequence the runs that ran made (as its first run, or its first passing
    run), with how many runs made it: most common first; ties: one made by a passing run first
    (parallel runs finish in any order, so a scripted or flaky failure can land on any run),
    then the one seen first."""
    ran = [r for r in stats.runs if r.status != "error"]
    counts = Counter(_key(r.calls) for r in ran)
    firsts: dict[tuple[tuple[str, str], ...], CaseResult] = {}
    for run in ran:
        key = _key(run.calls)
        if key not in firsts or (run.status == "passed" and firsts[key].status != "passed"):
            firsts[key] = run
    order = {key: index for index, key in enumerate(dict.fromkeys(_key(r.calls) for r in ran))}
    keys = sorted(counts, key=lambda k: (-counts[k], firsts[k].status != "passed", order[k]))
    return [(firsts[key], counts[key]) for key in keys]


def trajectories(stats: CaseStats) -> list[dict[str, Any]]:
    """Every tool-call sequence the runs made, most common first, with how many runs made it."""
    return [
        {"calls": [{"tool": name, "args": args} for name, args in run.calls], "runs": count}
        for run, count in _ranked(stats)
    ]


def trajectory(stats: CaseStats) -> tuple[CaseResult | None, int]:
    """The run whose tool-call sequence is the most common among the runs that ran (ties: one
    of a passing run, then the first seen), and how many runs made that sequence."""
    ranked = _ranked(stats)
    return ranked[0] if ranked else (None, 0)


@dataclass(frozen=True)
class Step:
    """One call of the aligned trajectories."""

    op: str
    """`same`, `added`, `removed` or `changed`."""
    tool: str
    args: dict[str, Any]
    """The call's arguments (the new version's, for `changed`)."""
    before: dict[str, Any] | None = None
    """For `changed`: the old version's arguments."""

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"op": self.op, "tool": self.tool, "args": self.args}
        if self.before is not None:
            data["before"] = self.before
            data["changes"] = arg_changes(self.before, self.args)
        return data


def diff_calls(before: list[ToolCall], after: list[ToolCall]) -> list[Step]:
    """Align two call sequences: first on whole calls (tool and arguments), so a call both
    versions make alike stays `same`; then, between those, on the tools' names, so a call of
    one tool with other arguments is `changed` rather than one `removed` and one `added`."""
    whole = difflib.SequenceMatcher(None, _key(before), _key(after), autojunk=False)
    steps: list[Step] = []
    for op, i1, i2, j1, j2 in whole.get_opcodes():
        if op == "equal":
            steps.extend(Step("same", name, args) for name, args in after[j1:j2])
        else:
            steps.extend(_by_name(before[i1:i2], after[j1:j2]))
    return steps


def _by_name(before: list[ToolCall], after: list[ToolCall]) -> list[Step]:
    names = difflib.SequenceMatcher(
        None, [name for name, _ in before], [name for name, _ in after], autojunk=False
    )
    steps: list[Step] = []
    for op, i1, i2, j1, j2 in names.get_opcodes():
        if op == "equal":
            for (name, old), (_, new) in zip(before[i1:i2], after[j1:j2], strict=True):
                alike = _key([(name, old)]) == _key([(name, new)])
                steps.append(Step("same", name, new) if alike else Step("changed", name, new, old))
            continue
        steps.extend(Step("removed", name, args) for name, args in before[i1:i2])
        steps.extend(Step("added", name, args) for name, args in after[j1:j2])
    return steps


def arg_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """Argument -> [old, new] for the arguments that differ (None: absent)."""
    return {
        key: [before.get(key), after.get(key)]
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key) or (key in before) != (key in after)
    }


def describe_changes(before: dict[str, Any], after: dict[str, Any]) -> str:
    """`content: 'A' -> 'B'; mode: None -> 'w'`: what a changed call's arguments became."""
    changes = arg_changes(before, after)
    return "; ".join(f"{key}: {old!r} -> {new!r}" for key, (old, new) in changes.items())


def format_call(name: str, args: dict[str, Any], limit: int = 100) -> str:
    text = ", ".join(f"{key}={value!r}" for key, value in args.items())
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{name}({text})"


# --------------------------------------------------------------------------- cases


@dataclass
class CaseComparison:
    """One case on both versions."""

    before: CaseStats
    after: CaseStats
    steps: list[Step] = field(default_factory=list)
    trajectory_runs: tuple[int, int] = (0, 0)
    """How many runs of each version made the trajectory compared."""
    answers: tuple[str | None, str | None] = (None, None)
    answer_diff: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.after.id

    @property
    def changed(self) -> bool:
        return any(s.op != "same" for s in self.steps) or bool(self.answer_diff)

    def deltas(self) -> dict[str, dict[str, float | None]]:
        """Per figure: before, after and the change: relative (0.25: 25% more; None when
        before is 0 or unknown), but for the pass rate the difference (-0.25: 25 points less)."""
        figures = {
            "pass_rate": (self.before.rate, self.after.rate),
            "tokens": (self.before.tokens, self.after.tokens),
            "cost": (self.before.cost, self.after.cost),
            "time_median": (self.before.time_median, self.after.time_median),
            "time_p90": (self.before.time_p90, self.after.time_p90),
        }
        found: dict[str, dict[str, float | None]] = {}
        for name, (old, new) in figures.items():
            change = (new / old - 1) if old and new is not None else None
            if name == "pass_rate":
                change = round(self.after.rate - self.before.rate, 4)
            found[name] = {"before": old, "after": new, "change": change}
        return found

    def as_dict(self) -> dict[str, Any]:
        def rates(stats: CaseStats) -> dict[str, Any]:
            return {
                "runs": len(stats.runs),
                "passes": stats.passes,
                "pass_rate": round(stats.rate, 4),
            }

        return {
            "type": "comparison",
            "file": self.after.file,
            "case": self.after.name,
            "before": self.before.version,
            "after": self.after.version,
            "pass_rates": {
                self.before.version: rates(self.before),
                self.after.version: rates(self.after),
            },
            "trajectory_runs": {
                self.before.version: self.trajectory_runs[0],
                self.after.version: self.trajectory_runs[1],
            },
            "trajectory": [s.as_dict() for s in self.steps],
            "trajectories": {
                self.before.version: trajectories(self.before),
                self.after.version: trajectories(self.after),
            },
            "answers": {self.before.version: self.answers[0], self.after.version: self.answers[1]},
            "answer_diff": self.answer_diff,
            "deltas": self.deltas(),
        }


def compare_versions(result: EvalResult, before: str, after: str) -> list[CaseComparison]:
    """Each case of `result` on version `before` against version `after`."""
    found: list[CaseComparison] = []
    for old, new in zip(result.stats[before], result.stats[after], strict=True):
        run_before, count_before = trajectory(old)
        run_after, count_after = trajectory(new)
        calls_before = run_before.calls if run_before is not None else []
        calls_after = run_after.calls if run_after is not None else []
        answer_before = _answer(run_before)
        answer_after = _answer(run_after)
        found.append(
            CaseComparison(
                before=old,
                after=new,
                steps=diff_calls(calls_before, calls_after),
                trajectory_runs=(count_before, count_after),
                answers=(answer_before, answer_after),
                answer_diff=_text_diff(answer_before, answer_after, before, after),
            )
        )
    return found


def _answer(run: CaseResult | None) -> str | None:
    """The run's answer, whitespace around it left out (as `final.equals` does)."""
    if run is None or run.final is None:
        return None
    return run.final.strip()


def _text_diff(old: str | None, new: str | None, before: str, after: str) -> list[str]:
    if (old or "") == (new or ""):
        return []
    lines = difflib.unified_diff(
        (old or "").splitlines(), (new or "").splitlines(), before, after, lineterm="", n=2
    )
    return list(lines)[2:]  # the ---/+++ header only repeats the versions' names
