"""Run one case: build the agent in isolation, play its turns on `runner.run.Session`, observe.

A case's folder (under the run's work folder) holds its database (thread, checkpoints, store)
and the copies of the agent's directories (`isolation.py`). Model calls and the tokens they
report are counted by a LangChain callback handler injected through a context variable, so the
subagents' calls count too, and nothing in the run loop knows about tests.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runner.errors import RunError, RunnerError, SpecError
from runner.events import (
    Error,
    Final,
    Interrupt,
    RunEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from runner.spec.budgets import PriceSpec
from runner.testing.expectations import Call, Check, Observed, check_expectations
from runner.testing.judge import Judge
from runner.testing.loader import LoadedTestFile
from runner.testing.spec import CaseSpec, UserTurn

__all__ = ["CaseResult", "RunOptions", "run_case"]

CaseStatus = Literal["passed", "failed", "skipped", "error"]


@dataclass(frozen=True)
class RunOptions:
    """What `agentctl test` passes to every case."""

    workdir: Path
    model: str | None = None
    """Run every case live on this model instead of its own."""
    record: bool = False
    """With `model`: write each case's replies to a cassette."""
    judge_model: str | None = None
    live: bool = False
    """Run on the agent's own model (or `model`), not on the case's `replay:` cassette."""
    price: PriceSpec | None = None
    """The price of `model` (an override has none of its own), for the cost of live runs."""
    judge_price: PriceSpec | None = None
    """The price of the judge model, for the judge's cost (counted apart from the agent's)."""


@dataclass
class CaseResult:
    """One run of one case."""

    file: str
    name: str
    status: CaseStatus
    checks: list[Check] = field(default_factory=list)
    thread_id: str | None = None
    db: str | None = None
    transcript: list[str] = field(default_factory=list)
    duration: float = 0.0
    problems: list[str] = field(default_factory=list)
    """For `error`: why the case could not run (a bad agent file, a model that cannot be made)."""
    location: str = ""
    """Where the case is written: `file:line`."""
    recorded: str | None = None
    """The cassette written (with --record)."""
    runs: int = 1
    passes: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens: int = 0
    """The agent's tokens (subagents included) as the model reports them."""
    cost: float | None = None
    """The agent's cost in US dollars; None when no price is known (`model.price`, `--price`)."""
    judge_tokens: int = 0
    judge_cost: float | None = None
    """The judge's tokens and cost: grading is not the agent's spending."""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """The tool-call trajectory: (tool, arguments) in the order the calls were made."""
    final: str | None = None
    """The final answer (or the error's message when the run failed)."""

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.status == "failed"]


def _status(checks: list[Check]) -> CaseStatus:
    if any(c.status == "failed" for c in checks):
        return "failed"
    if any(c.status == "skipped" for c in checks):
        return "skipped"
    return "passed"


def run_case(
    loaded: LoadedTestFile, index: int, options: RunOptions, *, judge: Judge, folder: Path
) -> CaseResult:
    """Run case `index` of `loaded` in `folder` (created; the caller removes it) and check it."""
    from runner.load.loader import load_spec
    from runner.run import Session, new_thread_id
    from runner.threads import open_home

    case = loaded.spec.cases[index]
    where = loaded.case_location(index)
    result = CaseResult(
        file=loaded.shown, name=case.name, status="error", location=f"{where.file}:{where.line}"
    )
    started = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    model = options.model or case.model
    if options.live and model is not None and model.startswith("replay:"):
        model = None  # live: the agent's own model, not the case's cassette
    live = options.live or options.model is not None
    record = _cassette_for(loaded, case) if options.record and live else None
    session = None
    try:
        from runner.load.loader import is_workflow_file
        from runner.testing.isolation import fixture_files, isolate_roots

        workflow = is_workflow_file(loaded.agent_path)
        if workflow:
            spec: Any = _workflow_spec(loaded, case)
        else:
            if (why := case.needs_message()) is not None:
                raise RunError(f"case {case.name!r}: {why}")
            spec = load_spec(loaded.agent_path, vars=case.vars)
            isolate_roots(spec, folder / "files", copy=loaded.spec.workspace == "copy")
        db = folder / "agentctl.db"
        if record is not None:
            record.unlink(missing_ok=True)
        session = Session(spec, model=model, home=open_home(db), record=record)
        thread_id = new_thread_id()
        result.thread_id, result.db = thread_id, str(db)
        first = case.input if case.input is not None else _first_message(case)
        session.home.register(thread_id, agent=session.name, spec=spec.source, first_message=first)
        if not workflow:
            _seed(session, thread_id, {**fixture_files(loaded.spec.fixtures), **case.files})
        with _counting() as counter:
            events, inputs = _play(session, case, thread_id)
        seen = _observe(session, thread_id, events, inputs, counter)
        with _counting() as judged:
            result.checks = check_expectations(case.expect, seen, judge)
        _spending(result, events, counter, judged, options)
        result.calls = [(c.name, c.args) for c in seen.calls]
        result.final = seen.final if seen.final is not None else seen.error
        result.transcript = transcript(events)
        result.status = _status(result.checks)
        result.recorded = str(record) if record is not None else None
    except SpecError as exc:
        result.problems = [str(p) for p in exc.problems]
    except RunnerError as exc:
        result.problems = [str(exc)]
    finally:
        if session is not None:
            session.close()
        result.duration = time.monotonic() - started
    result.passes = int(result.status in ("passed", "skipped"))
    return result


def _spending(
    result: CaseResult,
    events: list[RunEvent],
    counter: _Counter,
    judged: _Counter,
    options: RunOptions,
) -> None:
    """Tokens and cost of the agent (its `usage` events' cost when the spec prices its model,
    else `options.price`) and, apart, of the judge."""
    result.input_tokens, result.output_tokens = counter.input_tokens, counter.output_tokens
    result.tokens = counter.tokens
    costs = [e.cost for e in events if isinstance(e, Usage) and e.cost is not None]
    if costs:
        result.cost = round(sum(costs), 10)
    elif options.price is not None:
        result.cost = options.price.cost(counter.input_tokens, counter.output_tokens)
    result.judge_tokens = judged.tokens
    if options.judge_price is not None and judged.calls:
        result.judge_cost = options.judge_price.cost(judged.input_tokens, judged.output_tokens)


def _workflow_spec(loaded: LoadedTestFile, case: CaseSpec) -> Any:
    """The workflow under test, loaded with the case's vars (a workflow has no files to seed)."""
    from runner.check.workflow import load_checked_workflow

    if case.files or loaded.spec.fixtures:
        raise RunError(
            f"case {case.name!r}: `files:` and `fixtures:` seed an agent's backend; a workflow "
            "has none (give its agents' files through their own backends)"
        )
    return load_checked_workflow(loaded.agent_path, vars=case.vars)


def _first_message(case: CaseSpec) -> str:
    return next((t.user for t in case.turns or () if isinstance(t, UserTurn)), "")


def _cassette_for(loaded: LoadedTestFile, case: CaseSpec) -> Path:
    """Where --record writes a case's replies: the case's own `replay:` cassette when it names
    one, else `cassettes/<test file>/<case>.yaml` next to the test file."""
    if case.model and case.model.startswith("replay:"):
        return Path(case.model.partition(":")[2])
    slug = re.sub(r"[^a-z0-9]+", "-", case.name.lower()).strip("-") or "case"
    stem = loaded.path.name.removesuffix(".yaml").removesuffix(".yml").removesuffix(".test")
    target = loaded.path.resolve().parent / "cassettes" / stem / f"{slug}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


# --------------------------------------------------------------------------- files


def _seed(session: Any, thread_id: str, files: dict[str, str]) -> None:
    """Put the case's files into the agent's backend: on disk in its directory copies, through
    the backend for the store, into the thread's first state for the state backend."""
    from runner.backends import BackendError
    from runner.testing.isolation import directory_for

    if not files:
        return
    if session.resolved.backend is None:
        raise SpecError("`files:` needs an agent with file tools; this one has no backend")
    state_files: dict[str, Any] = {}
    backend = session.resolved.backend.get({}, session.home.store)
    for path, text in files.items():
        on_disk = directory_for(session.spec, path)
        if on_disk is not None:
            on_disk.parent.mkdir(parents=True, exist_ok=True)
            on_disk.write_text(text, encoding="utf-8")
            continue
        try:
            written = backend.write(path, text)
        except BackendError as exc:
            raise SpecError(f"files: {path}: {exc}") from None
        state_files.update(written.files_update or {})
    if state_files:
        config = {"configurable": {"thread_id": thread_id}}
        session.graph.update_state(config, {"files": state_files}, as_node="__start__")


def _reader(session: Any, thread_id: str) -> Any:
    from runner.backends import BackendError

    def read(path: str) -> str | None:
        if session.resolved.backend is None:
            return None
        backend = session.resolved.backend.get(session.values(thread_id), session.home.store)
        try:
            result = backend.read(path, 0, 1_000_000_000)
        except (BackendError, OSError, ValueError):
            return None
        return str(result.content)

    return read


# --------------------------------------------------------------------------- turns


def _play(session: Any, case: CaseSpec, thread_id: str) -> tuple[list[RunEvent], list[str]]:
    from runner.run import Decision

    turns: list[Any] = list(case.turns) if case.turns is not None else []
    if case.input is not None:
        turns = [UserTurn(user=case.input)]
    events: list[RunEvent] = []
    inputs: list[str] = []
    if not turns or not isinstance(turns[0], UserTurn):  # a workflow's run starts by itself
        run = session.run(thread_id=thread_id)
        events.extend(run.events)
        if isinstance(run.events[-1] if run.events else None, Error):
            return events, inputs
    for turn in turns:
        if isinstance(turn, UserTurn):
            inputs.append(turn.user)
            run = session.run(turn.user, thread_id=thread_id)
        else:
            decisions = [Decision(d.type, d.args, d.message) for d in turn.decisions]
            run = session.run(thread_id=thread_id, decisions=decisions)
        events.extend(run.events)
        if isinstance(run.events[-1] if run.events else None, Error):
            break  # a failed turn: the later ones would only repeat it
    return events, inputs


def _observe(
    session: Any, thread_id: str, events: list[RunEvent], inputs: list[str], counter: _Counter
) -> Observed:
    last = events[-1] if events else None
    final = last if isinstance(last, Final) else None
    error = next((e for e in events if isinstance(e, Error)), None)
    values = session.values(thread_id)
    from runner.events import StepEnd

    return Observed(
        steps=[e.step for e in events if isinstance(e, StepEnd) and e.status == "done"],
        state=values.get("state") if "trail" in values else None,
        main_agent=session.name,
        inputs=inputs,
        final=final.content if final is not None else None,
        structured=final.structured_response if final is not None else None,
        error=error.message if error is not None else None,
        waiting=list(last.actions) if isinstance(last, Interrupt) else [],
        calls=[Call(e.agent, e.name, e.args) for e in events if isinstance(e, ToolCall)],
        interrupts=[a for e in events if isinstance(e, Interrupt) for a in e.actions],
        todos=values.get("todos"),
        model_calls=counter.calls,
        tokens=counter.tokens,
        calls_without_usage=counter.without_usage,
        read_file=_reader(session, thread_id),
    )


def transcript(events: list[RunEvent], limit: int = 8) -> list[str]:
    """The last steps of a run, one short line each."""
    lines: list[str] = []
    text: dict[str, str] = {}
    for event in events:
        if isinstance(event, TextDelta):
            text[event.agent] = text.get(event.agent, "") + event.text
            continue
        said = text.pop(event.agent, "").strip()
        if said and not isinstance(event, Final):
            lines.append(f"{event.agent}: {_one_line(said)}")
        if isinstance(event, ToolCall):
            lines.append(f"{event.agent} -> {event.name}({_one_line(_args(event.args), 80)})")
        elif isinstance(event, ToolResult):
            mark = "error" if event.status == "error" else "result"
            lines.append(f"{event.agent} <- {event.name} {mark}: {_one_line(event.content)}")
        elif isinstance(event, Interrupt):
            names = ", ".join(a.name for a in event.actions)
            lines.append(f"waiting for approval: {names}")
        elif isinstance(event, Final):
            lines.append(f"final: {_one_line(event.content)}")
        elif isinstance(event, Error):
            lines.append(f"error: {_one_line(event.message)}")
    return lines[-limit:]


def _args(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _one_line(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- counting


class _Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.tokens = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.without_usage = 0


_COUNTER: ContextVar[Any] = ContextVar("agentctl_test_model_calls", default=None)
_HOOK = threading.Lock()
_hooked = False


def _handler(counter: _Counter) -> Any:
    from langchain_core.callbacks import BaseCallbackHandler

    class CountModelCalls(BaseCallbackHandler):
        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            with counter.lock:
                counter.calls += 1

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            usage = None
            for generations in response.generations:
                for generation in generations:
                    message = getattr(generation, "message", None)
                    usage = getattr(message, "usage_metadata", None) or usage
            with counter.lock:
                if usage:
                    self_total = usage.get("total_tokens") or (
                        usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
                    )
                    counter.tokens += int(self_total)
                    counter.input_tokens += int(usage.get("input_tokens", 0))
                    counter.output_tokens += int(usage.get("output_tokens", 0))
                else:
                    counter.without_usage += 1

    return CountModelCalls()


@contextmanager
def _counting() -> Iterator[_Counter]:
    """Count the model calls of everything run inside (threads started by LangGraph copy the
    context, so subagents' calls count)."""
    global _hooked
    from langchain_core.tracers.context import register_configure_hook

    with _HOOK:
        if not _hooked:
            register_configure_hook(_COUNTER, inheritable=True)
            _hooked = True
    counter = _Counter()
    token = _COUNTER.set(_handler(counter))
    try:
        yield counter
    finally:
        _COUNTER.reset(token)


def remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
