"""Batch runs: one agent run per line of a JSON lines file, N at a time, results as JSON lines.

An input line is `{"message": "...", "vars": {...}, "id": "..."}` (`vars` and `id` optional).
Each runs on a new thread of the thread database; its result line names the input (`line`, `id`,
`input_hash`), the thread, the final answer, the token usage and the error. A malformed line or
a failed run is a result with an `error`; the batch goes on.

Results appended to a file (`--out`) make the batch resumable: a rerun skips every line that
already has a successful result for the same input (matched by its `id`, else its line number,
and the hash of its content), and runs the rest. The file ends with one result per input line:
results that a rerun replaces (a failure, or a line whose content changed) are dropped first, by
writing the kept ones to a new file that atomically replaces the old one. Each result is one
`write` of a whole line to a file opened for appending, flushed to the disk before the next; a
lock file keeps a second batch from writing the same results at once.

Runs share one `Home` and one built agent per distinct set of vars, run in a thread pool
(LangGraph runs each graph's steps in threads anyway; the model calls overlap).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import RunError, RunnerError

if TYPE_CHECKING:
    from runner.run import RunResult, Session

__all__ = ["BatchLine", "BatchSummary", "ResultsFile", "read_batch", "run_batch"]

LINE_KEYS = ("message", "vars", "id")


@dataclass(frozen=True)
class BatchLine:
    """One input line: its number (1-based), what it asks, or why it cannot run."""

    number: int
    id: str | int | None
    input_hash: str
    message: str | None = None
    vars: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None
    no_message: str | None = None
    """Why the line cannot run an agent (it has no message); a workflow runs without one."""

    @property
    def key(self) -> tuple[str, Any]:
        """What matches a result to this line: its `id`, else its line number."""
        return ("id", self.id) if self.id is not None else ("line", self.number)


def _hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _parse_line(number: int, text: str, where: str) -> BatchLine:
    """A line as the batch runs it; a problem (with the file and line) when it cannot run."""
    from runner.load.problems import did_you_mean

    raw_hash = _hash(text.strip())
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return BatchLine(
            number, None, raw_hash, problem=f"{where}: not JSON: {exc.msg} at column {exc.colno}"
        )
    if not isinstance(value, dict):
        found = type(value).__name__
        return BatchLine(
            number,
            None,
            raw_hash,
            problem=f'{where}: expected a JSON object like {{"message": "..."}}, found {found}',
        )
    content_hash = _hash(json.dumps(value, sort_keys=True, ensure_ascii=False))
    line_id = value.get("id")
    if line_id is not None and (not isinstance(line_id, str | int) or isinstance(line_id, bool)):
        return BatchLine(
            number, None, content_hash, problem=f"{where}: id: expected a string or a number"
        )

    def bad(problem: str) -> BatchLine:
        return BatchLine(number, line_id, content_hash, problem=f"{where}: {problem}")

    for key in value:
        if key not in LINE_KEYS:
            hint = did_you_mean(key, LINE_KEYS)
            return bad(
                f"unknown key {key!r}"
                + (f"; did you mean {hint!r}?" if hint else f"; expected {', '.join(LINE_KEYS)}")
            )
    message = value.get("message")
    no_message = f'{where}: message: expected a non-empty string ({{"message": "..."}})'
    if message is not None and (not isinstance(message, str) or not message.strip()):
        return BatchLine(number, line_id, content_hash, problem=no_message)
    line_vars = value.get("vars", {})
    if not isinstance(line_vars, dict):
        return bad('vars: expected an object ({"vars": {"topic": "..."}})')
    return BatchLine(
        number,
        line_id,
        content_hash,
        message=message,
        vars=line_vars,
        no_message=no_message if message is None else None,
    )


def read_batch(path: Path) -> list[BatchLine]:
    """The lines of a batch file (blank lines skipped). A line that cannot run carries its
    problem; the file itself unreadable is a `RunError`."""
    from runner.errors import display_path

    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RunError(f"cannot read the batch file {shown}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise RunError(f"{shown}: not UTF-8 text ({exc.reason})") from None
    lines: list[BatchLine] = []
    seen: dict[Any, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parsed = _parse_line(number, line, f"{shown}:{number}")
        if parsed.id is not None and parsed.problem is None:
            if parsed.id in seen:
                parsed = BatchLine(
                    number,
                    None,
                    parsed.input_hash,
                    problem=f"{shown}:{number}: id {parsed.id!r} is also the id of line "
                    f"{seen[parsed.id]}; ids must be unique",
                )
            else:
                seen[parsed.id] = number
        lines.append(parsed)
    if not lines:
        raise RunError(f"the batch file {shown} has no lines")
    return lines


# --------------------------------------------------------------------------- results


def _key_of(record: Mapping[str, Any]) -> tuple[str, Any]:
    return ("id", record["id"]) if record.get("id") is not None else ("line", record.get("line"))


class ResultsFile:
    """The `--out` file: the results already there, and appending new ones safely."""

    def __init__(self, path: Path) -> None:
        import fcntl

        from runner.errors import display_path

        self.path = path
        self.shown = display_path(path)
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(
                path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644
            )
        except OSError as exc:
            raise RunError(f"cannot write {self.shown}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock_fd)
            raise RunError(
                f"another batch is writing {self.shown} now; wait for it, or use another --out"
            ) from None
        self.records, self._partial = self._read()
        self._fd: int | None = None

    def _read(self) -> tuple[list[dict[str, Any]], bool]:
        """The results in the file, and whether it ends with a partial line (a crash while
        writing: that line is dropped)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return [], False
        except OSError as exc:
            raise RunError(f"cannot read {self.shown}: {exc.strerror or exc}") from None
        lines = data.decode("utf-8", errors="replace").split("\n")
        partial = lines[-1] != ""
        records = []
        for number, line in enumerate(lines[:-1], start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            if not isinstance(record, dict) or "input_hash" not in record:
                raise RunError(
                    f"{self.shown}:{number}: not a batch result line; is --out the right file? "
                    "(fix or remove that line to go on)"
                )
            records.append(record)
        return records, partial

    def done(self, lines: list[BatchLine]) -> set[int]:
        """The numbers of the lines with a successful result for the same input."""
        ok = {(_key_of(r), r["input_hash"]) for r in self.records if r.get("status") == "ok"}
        return {line.number for line in lines if (line.key, line.input_hash) in ok}

    def keep_only(self, lines: list[BatchLine], done: set[int]) -> None:
        """Drop the results that this run replaces (every result of a line about to run again),
        by replacing the file atomically; nothing is written when nothing is dropped."""
        rerun = [line for line in lines if line.number not in done]
        keys = {line.key for line in rerun}
        # a result without an id is the result of its line number, whatever the line holds now
        # (a line too broken to read its id from, fixed since)
        numbers = {("line", line.number) for line in rerun}
        kept = [r for r in self.records if _key_of(r) not in keys | numbers]
        if len(kept) == len(self.records) and not self._partial:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.writelines(result_line(r) for r in kept)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise RunError(f"cannot write {self.shown}: {exc.strerror or exc}") from None
        self.records, self._partial = kept, False

    def append(self, record: dict[str, Any]) -> None:
        """One result as one write of a whole line, on the disk before this returns."""
        data = result_line(record).encode("utf-8")
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            written = os.write(self._fd, data)
            while written < len(data):  # a short write (a full disk raises instead)
                written += os.write(self._fd, data[written:])
            os.fsync(self._fd)
            self.records.append(record)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        lock = self.path.with_name(self.path.name + ".lock")
        lock.unlink(missing_ok=True)
        os.close(self._lock_fd)


def result_line(record: Mapping[str, Any]) -> str:
    """A result as one JSON line."""
    return json.dumps(record, ensure_ascii=False, default=str) + "\n"


# --------------------------------------------------------------------------- running


@dataclass
class BatchSummary:
    total: int = 0
    skipped: int = 0
    ok: int = 0
    failed: int = 0


def result_record(
    line: BatchLine,
    *,
    thread_id: str | None = None,
    answer: str | None = None,
    structured: Any = None,
    usage: dict[str, int] | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """A result line: `line`, `id`, `input_hash`, `status` (ok, error), `thread_id`, `answer`,
    `structured_response` (when the spec asks for one), `usage` (input, output and total
    tokens, model calls), `error`."""
    record: dict[str, Any] = {
        "line": line.number,
        "id": line.id,
        "input_hash": line.input_hash,
        "status": "error" if error is not None else "ok",
        "thread_id": thread_id,
        "answer": answer,
        "usage": usage
        or {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "model_calls": 0},
        "error": error,
    }
    if structured is not None:
        record["structured_response"] = structured
    return record


def _usage(result: RunResult) -> dict[str, int]:
    from runner.events import ModelCall, Usage

    usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "model_calls": 0}
    for event in result.events:
        if isinstance(event, Usage):
            usage["input_tokens"] += event.input_tokens
            usage["output_tokens"] += event.output_tokens
            usage["total_tokens"] += event.total_tokens
        elif isinstance(event, ModelCall):
            usage["model_calls"] += 1
    return usage


def _merge(total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    return {key: total.get(key, 0) + value for key, value in more.items()}


def _run_line(
    session_for: Callable[[dict[str, Any]], Session],
    line: BatchLine,
    base_vars: dict[str, Any],
    *,
    auto_approve: bool,
    spec_shown: str,
) -> dict[str, Any]:
    from runner.run import Decision

    if line.problem is not None:
        return result_record(line, error=line.problem)
    try:
        session = session_for({**base_vars, **line.vars})
    except RunnerError as exc:
        return result_record(line, error=str(exc))
    from runner.run.session import WorkflowSession

    if line.message is None and not isinstance(session, WorkflowSession):
        return result_record(line, error=line.no_message)
    result = session.run(line.message)
    usage = _usage(result)
    while result.interrupt is not None:
        names = ", ".join(a.name for a in result.interrupt.actions)
        if not auto_approve:
            return result_record(
                line,
                thread_id=result.thread_id,
                usage=usage,
                error=f"the agent asked for approval of {names}, and a batch run cannot ask: "
                "run the batch with --auto-approve, or answer this thread with "
                f"`agentctl run {spec_shown} --thread {result.thread_id} --approve`",
            )
        result = session.run(thread_id=result.thread_id, decisions=[Decision("approve")])
        usage = _merge(usage, _usage(result))
    if result.error is not None:
        return result_record(
            line, thread_id=result.thread_id, usage=usage, error=result.error.message
        )
    final = result.final
    return result_record(
        line,
        thread_id=result.thread_id,
        answer=final.content if final else None,
        structured=final.structured_response if final else None,
        usage=usage,
    )


def run_batch(
    lines: list[BatchLine],
    *,
    make_session: Callable[[dict[str, Any]], Session],
    base_vars: dict[str, Any],
    jobs: int,
    emit: Callable[[dict[str, Any]], None],
    skip: set[int] | None = None,
    auto_approve: bool = False,
    spec_shown: str = "SPEC",
    on_start: Callable[[BatchLine], None] | None = None,
) -> BatchSummary:
    """Run every line not in `skip` (line numbers), `jobs` at a time, calling `emit` with each
    result as it comes (from one thread at a time). `make_session(vars)` builds the agent for a
    set of vars; the agent of `base_vars` is built first, so a spec that does not build fails
    the batch before any line runs (as a `RunnerError`), unless lines give vars of their own
    (then each line that cannot build fails with the reason)."""
    skip = skip or set()
    summary = BatchSummary(total=len(lines), skipped=sum(1 for x in lines if x.number in skip))
    from runner.agent.cache import AgentCache, vars_key

    # a set of vars whose agent cannot be built fails every line that asks for it, built once;
    # the shared Home is closed by its owner, each session's own MCP servers here
    agents: AgentCache[Session] = AgentCache(
        lambda session: session.close_agent(), remember=(RunnerError,)
    )

    def session_for(variables: dict[str, Any]) -> Session:
        return agents.get(vars_key(variables), lambda: make_session(variables))

    emitting = threading.Lock()

    def work(line: BatchLine) -> dict[str, Any]:
        if on_start is not None:
            on_start(line)
        try:
            return _run_line(
                session_for, line, base_vars, auto_approve=auto_approve, spec_shown=spec_shown
            )
        except Exception as exc:  # a bug in a tool or in agentctl: this line fails, not all
            return result_record(line, error=f"{type(exc).__name__}: {exc}")

    try:
        todo = [line for line in lines if line.number not in skip]
        try:
            session_for(dict(base_vars))
        except RunnerError:
            # Lines that bring vars of their own (a required input, say) may build where the
            # base vars alone do not: each line's agent is built, and fails, on its own.
            if not any(line.vars for line in todo):
                raise
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="batch") as pool:
            futures = [pool.submit(work, line) for line in todo]
            try:
                for future in as_completed(futures):
                    record = future.result()
                    with emitting:
                        if record["status"] == "ok":
                            summary.ok += 1
                        else:
                            summary.failed += 1
                        emit(record)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    finally:
        agents.close()
    return summary


def iter_status(summary: BatchSummary) -> Iterator[str]:
    yield f"{summary.total} line{'s' if summary.total != 1 else ''}"
    if summary.skipped:
        yield f"{summary.skipped} already done"
    yield f"{summary.ok} ok"
    if summary.failed:
        yield f"{summary.failed} failed"
