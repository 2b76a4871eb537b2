"""The checks of `expect:`: each turns what a case's run left (`Observed`) into `Check`s.

Every expectation written runs, whatever the others found, so one report lists all that is wrong
with a case. A check that cannot be decided (a judge without a model) is `skipped`, never
`passed`.

Trajectory matching is ours rather than `agentevals`'s: its modes (strict, unordered, subset,
superset) have no "these calls in this order, others may come between" (our default), and it
answers with a score, where a failing test must say which expected call is missing and what was
called instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from runner.events import Action
from runner.testing.spec import (
    ExpectSpec,
    FileExpect,
    FinalExpect,
    InterruptExpect,
    JudgeExpect,
    LimitsExpect,
    StepsExpect,
    TodosExpect,
    ToolCallExpect,
)

__all__ = ["Call", "Check", "Observed", "args_match", "check_expectations"]

Status = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class Check:
    """The outcome of one expectation. For a failure: what was expected and what was found."""

    expectation: str
    """Its key path in the case, e.g. `expect.files["/report.md"].contains`."""
    status: Status
    message: str = ""
    expected: str | None = None
    found: str | None = None
    text_diff: bool = False
    """Expected and found are texts that read best as a diff."""


@dataclass(frozen=True)
class Call:
    agent: str
    name: str
    args: dict[str, Any]


@dataclass
class Observed:
    """What a case's run left, as far as the expectations look."""

    main_agent: str
    inputs: list[str]
    final: str | None
    structured: Any = None
    error: str | None = None
    waiting: list[Action] = field(default_factory=list)
    """Calls the run still waits to have approved when it ended."""
    calls: list[Call] = field(default_factory=list)
    interrupts: list[Action] = field(default_factory=list)
    todos: list[dict[str, Any]] | None = None
    model_calls: int = 0
    tokens: int = 0
    calls_without_usage: int = 0
    read_file: Callable[[str], str | None] = lambda path: None
    steps: list[str] = field(default_factory=list)
    """A workflow's steps that finished, in order."""
    state: dict[str, Any] | None = None
    """A workflow's state when the run ended."""


JudgeFn = Callable[[JudgeExpect, Observed], Check]


def check_expectations(expect: ExpectSpec, seen: Observed, judge: JudgeFn) -> list[Check]:
    checks: list[Check] = []
    at = "expect"
    if expect.error:
        checks.append(
            _check(
                seen.error is not None,
                f"{at}.error",
                "the run was expected to fail",
                "an error",
                _outcome(seen),
            )
        )
    elif seen.error is not None:
        checks.append(Check("run", "failed", f"the run failed: {seen.error}"))
    if expect.final is not None:
        checks.extend(_final(expect.final, seen, f"{at}.final", expecting_error=expect.error))
    for path, file_expect in expect.files.items():
        checks.extend(_file(path, file_expect, seen, f'{at}.files["{path}"]'))
    if expect.tool_calls:
        checks.append(_trajectory(expect.tool_calls, expect.tool_order, seen.calls, at))
    for name in expect.not_called:
        made = [c for c in seen.calls if c.name == name]
        where = f"{at}.not_called"
        if made:
            checks.append(
                _fail(
                    where,
                    f"{name} was called {_times(len(made))}",
                    f"no call of {name}",
                    "; ".join(_call_text(c) for c in made),
                )
            )
        else:
            checks.append(_pass(f"{where}[{name}]"))
    if expect.subagents:
        started = [str(c.args.get("subagent_type")) for c in seen.calls if c.name == "task"]
        for name in expect.subagents:
            if name in started:
                checks.append(_pass(f"{at}.subagents[{name}]"))
            else:
                checks.append(
                    _fail(
                        f"{at}.subagents",
                        f"subagent {name} was never started",
                        name,
                        ", ".join(started) or "no subagent started",
                    )
                )
    for index, wanted in enumerate(expect.interrupts):
        checks.append(_interrupt(wanted, seen.interrupts, f"{at}.interrupts[{index}]"))
    if expect.todos is not None:
        checks.extend(_todos(expect.todos, seen.todos, f"{at}.todos"))
    if expect.limits is not None:
        checks.extend(_limits(expect.limits, seen, f"{at}.limits"))
    if expect.steps is not None:
        checks.extend(_steps(expect.steps, seen, f"{at}.steps"))
    if expect.judge is not None:
        checks.append(judge(expect.judge, seen))
    return checks


def _steps(expect: StepsExpect, seen: Observed, at: str) -> list[Check]:
    """A workflow's steps: which finished, in which order, and the state they left."""
    checks: list[Check] = []
    ran = ", ".join(seen.steps) or "no step"
    if expect.ran:
        if expect.order == "exact":
            passed = seen.steps == expect.ran
        else:
            remaining = iter(seen.steps)
            passed = all(any(step == wanted for step in remaining) for wanted in expect.ran)
        checks.append(
            _check(
                passed,
                f"{at}.ran",
                "the steps did not run as expected"
                + (" (exactly these)" if expect.order == "exact" else " (in this order)"),
                ", ".join(expect.ran),
                ran,
            )
        )
    for step in expect.not_ran:
        checks.append(
            _check(step not in seen.steps, f"{at}.not_ran[{step}]", f"step {step} ran", "", ran)
        )
    state = seen.state or {}
    for name, wanted in expect.state.items():
        found = state.get(name)
        checks.append(
            _check(
                found == wanted,
                f"{at}.state.{name}",
                f"state.{name} is not as expected",
                json.dumps(wanted, ensure_ascii=False, default=str),
                json.dumps(found, ensure_ascii=False, default=str),
            )
        )
    return checks


def _pass(expectation: str) -> Check:
    return Check(expectation, "passed")


def _fail(
    expectation: str,
    message: str,
    expected: str | None = None,
    found: str | None = None,
    *,
    text_diff: bool = False,
) -> Check:
    return Check(expectation, "failed", message, expected, found, text_diff)


def _check(passed: bool, expectation: str, *failure: str, text_diff: bool = False) -> Check:
    """`expectation` passed, or failed: `failure` is `_fail`'s message, expected and found."""
    if passed:
        return _pass(expectation)
    return _fail(expectation, *failure, text_diff=text_diff)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _outcome(seen: Observed) -> str:
    if seen.error is not None:
        return f"an error: {seen.error}"
    if seen.waiting:
        return "the run waiting for approval of " + ", ".join(a.name for a in seen.waiting)
    return f"the answer {_short(seen.final or '')!r}"


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- text


def _answer(seen: Observed, expecting_error: bool) -> str | None:
    if expecting_error:
        return seen.error
    if seen.structured is not None:
        return json.dumps(seen.structured, ensure_ascii=False)
    return seen.final


def _final(expect: FinalExpect, seen: Observed, at: str, *, expecting_error: bool) -> list[Check]:
    answer = _answer(seen, expecting_error)
    if answer is None:
        if seen.waiting:
            names = ", ".join(a.name for a in seen.waiting)
            why = (
                f"there is no final answer: the run ended waiting for approval of {names}; "
                "answer it with a `decisions:` turn"
            )
        elif seen.error is not None:
            why = f"there is no final answer: the run failed ({seen.error})"
        else:
            why = "there is no final answer"
        return [_fail(at, why)]
    checks = _text_checks(expect, answer, at, what="the answer")
    if expect.equals is not None:
        checks.append(
            _check(
                answer.strip() == expect.equals.strip(),
                f"{at}.equals",
                "the answer differs",
                expect.equals.strip(),
                answer.strip(),
                text_diff=True,
            )
        )
    if expect.json_schema is not None:
        checks.append(_json_schema(expect.json_schema, seen, answer, f"{at}.json_schema"))
    return checks


def _text_checks(expect: FinalExpect | FileExpect, text: str, at: str, *, what: str) -> list[Check]:
    checks = []
    for wanted in expect.contains:
        checks.append(
            _check(
                wanted in text,
                f"{at}.contains",
                f"{what} does not contain {wanted!r}",
                wanted,
                text,
            )
        )
    for unwanted in expect.not_contains:
        if unwanted in text:
            line = next(line for line in text.splitlines() or [text] if unwanted in line)
            checks.append(
                _fail(
                    f"{at}.not_contains",
                    f"{what} contains {unwanted!r}",
                    f"no {unwanted!r}",
                    _short(line),
                )
            )
        else:
            checks.append(_pass(f"{at}.not_contains"))
    if expect.regex is not None:
        checks.append(
            _check(
                re.search(expect.regex, text) is not None,
                f"{at}.regex",
                f"{what} does not match /{expect.regex}/",
                expect.regex,
                text,
            )
        )
    return checks


def _json_schema(schema: dict[str, Any], seen: Observed, answer: str, at: str) -> Check:
    import jsonschema

    value, as_text = seen.structured, ""
    if value is None:
        try:
            value = json.loads(answer)
        except ValueError:
            value, as_text = answer, " (it is not JSON, so it is checked as a JSON string)"
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.path)
    )
    if not errors:
        return _pass(at)
    first = errors[0]
    where = "".join(f"[{p!r}]" for p in first.path) or "the answer"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return _fail(
        at,
        f"the answer does not fit the schema{as_text}: {where}: {_short(first.message)}{more}",
        json.dumps(schema, ensure_ascii=False),
        json.dumps(value, ensure_ascii=False),
    )


def _file(path: str, expect: FileExpect, seen: Observed, at: str) -> list[Check]:
    text = seen.read_file(path)
    if not expect.exists:
        if text is None:
            return [_pass(f"{at}.exists")]
        return [_fail(f"{at}.exists", f"{path} exists", "no such file", _short(text))]
    if text is None:
        return [_fail(f"{at}.exists", f"{path} does not exist", "a file", "no such file")]
    return [_pass(f"{at}.exists"), *_text_checks(expect, text, at, what=path)]


# --------------------------------------------------------------------------- trajectory


def args_match(expected: Any, found: Any) -> bool:
    """`expected` is contained in `found`: mappings key by key (recursively), the rest equal."""
    if isinstance(expected, dict):
        return isinstance(found, dict) and all(
            key in found and args_match(value, found[key]) for key, value in expected.items()
        )
    return bool(expected == found)


def _matches(wanted: ToolCallExpect, call: Call) -> bool:
    return (
        call.name == wanted.name
        and (wanted.agent is None or wanted.agent == call.agent)
        and args_match(wanted.args, call.args)
    )


def _wanted_text(wanted: ToolCallExpect | InterruptExpect) -> str:
    args = json.dumps(wanted.args, ensure_ascii=False) if wanted.args else ""
    agent = getattr(wanted, "agent", None)
    return f"{wanted.name}({args})" + (f" by {agent}" if agent else "")


def _call_text(call: Call | Action, limit: int = 60) -> str:
    shown = []
    for key, value in call.args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        shown.append(f"{key}={_short(str(text), 40)}")
    args = _short(", ".join(shown), limit)
    agent = getattr(call, "agent", None)
    return f"{call.name}({args})" + (f" [{agent}]" if agent else "")


def _calls_text(calls: Sequence[Call]) -> str:
    return "\n".join(f"{i + 1}. {_call_text(c)}" for i, c in enumerate(calls)) or "no tool calls"


def _trajectory(wanted: list[ToolCallExpect], order: str, calls: list[Call], at: str) -> Check:
    where = f"{at}.tool_calls"
    expected = "\n".join(f"{i + 1}. {_wanted_text(w)}" for i, w in enumerate(wanted))
    if order == "exact":
        if len(calls) == len(wanted) and all(
            _matches(w, c) for w, c in zip(wanted, calls, strict=True)
        ):
            return _pass(where)
        for index, (w, c) in enumerate(zip(wanted, calls, strict=False)):
            if not _matches(w, c):
                message = f"call {index + 1} is {_call_text(c)}, expected {_wanted_text(w)}"
                break
        else:
            message = f"{len(calls)} calls were made, expected exactly {len(wanted)}"
        return _fail(where, message, expected, _calls_text(calls))
    if order == "any_order":
        free = list(range(len(calls)))
        missing = []
        for w in wanted:
            hit = next((i for i in free if _matches(w, calls[i])), None)
            if hit is None:
                missing.append(w)
            else:
                free.remove(hit)
        if not missing:
            return _pass(where)
        names = "; ".join(_wanted_text(w) for w in missing)
        return _fail(where, f"no call matches {names}", expected, _calls_text(calls))
    position = 0
    for index, w in enumerate(wanted):
        hit = next((i for i in range(position, len(calls)) if _matches(w, calls[i])), None)
        if hit is None:
            earlier = any(_matches(w, c) for c in calls[:position])
            after = f" after call {position}" if position else ""
            message = f"expected call {index + 1}, {_wanted_text(w)}, was not made{after}"
            if earlier:
                message += " (it was made before: the order differs)"
            return _fail(where, message, expected, _calls_text(calls))
        position = hit + 1
    return _pass(where)


def _interrupt(wanted: InterruptExpect, interrupts: list[Action], at: str) -> Check:
    if any(a.name == wanted.name and args_match(wanted.args, a.args) for a in interrupts):
        return _pass(at)
    found = ", ".join(_call_text(a) for a in interrupts) or "no call waited for approval"
    return _fail(
        at, f"{_wanted_text(wanted)} never waited for approval", _wanted_text(wanted), found
    )


def _todos(expect: TodosExpect, todos: list[dict[str, Any]] | None, at: str) -> list[Check]:
    items = todos or []
    shown = "\n".join(f"[{t.get('status')}] {t.get('content')}" for t in items) or "no todos"
    checks = []
    if expect.all_completed is not None:
        open_items = [t for t in items if t.get("status") != "completed"]
        done = bool(items) and not open_items
        if done == expect.all_completed:
            checks.append(_pass(f"{at}.all_completed"))
        elif expect.all_completed:
            message = (
                "the agent wrote no todos"
                if not items
                else f"{len(open_items)} of {len(items)} todos are not completed"
            )
            checks.append(_fail(f"{at}.all_completed", message, "every todo completed", shown))
        else:
            checks.append(
                _fail(f"{at}.all_completed", "every todo is completed", "an open todo", shown)
            )
    if expect.min_count is not None:
        checks.append(
            _check(
                len(items) >= expect.min_count,
                f"{at}.min_count",
                f"{len(items)} todos, expected at least {expect.min_count}",
                f"at least {expect.min_count}",
                shown,
            )
        )
    return checks


def _limits(expect: LimitsExpect, seen: Observed, at: str) -> list[Check]:
    checks = []
    measured = [
        ("model_calls", expect.model_calls, seen.model_calls, "model calls"),
        ("tool_calls", expect.tool_calls, len(seen.calls), "tool calls"),
    ]
    if expect.tokens is not None:
        if seen.calls_without_usage:
            checks.append(
                _fail(
                    f"{at}.tokens",
                    f"cannot count tokens: {seen.calls_without_usage} of {seen.model_calls} model "
                    "calls reported no token usage",
                    f"at most {expect.tokens}",
                    "unknown",
                )
            )
        else:
            measured.append(("tokens", expect.tokens, seen.tokens, "tokens"))
    for key, limit, used, what in measured:
        if limit is None:
            continue
        checks.append(
            _check(
                used <= limit,
                f"{at}.{key}",
                f"{used} {what}, more than {limit}",
                f"at most {limit}",
                str(used),
            )
        )
    return checks
