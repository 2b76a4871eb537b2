"""Try it, record and test: the buttons beside the editor.

A try runs the editor's text (saved or not): the file is loaded with the buffer laid over the
disk, as the checks read it, and run in a `Session` of its own whose threads live in a
temporary folder, apart from the server's threads and from the agent's other runs. The model is
the file's: `replay:` plays its cassette offline, a provider runs live when its key is set. An
approval stops the turn; the page's answer resumes the same thread.

"Record" runs live with `record=` pointed at the agent's cassette (`NAME.cassette.yaml` beside
it), as `agentctl run --record` does; "test" runs the test file beside the agent (`NAME.test.yaml`)
on the saved files, as `agentctl test` does.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["TryError", "TryRuns", "cassette_of", "run_tests", "test_file_of"]

MAX_SESSIONS = 8
"""Tries kept open (a newer one closes the oldest): each holds a built agent."""


class TryError(ValueError):
    """The file cannot be tried as it is (its located problems, or a missing model)."""


def test_file_of(agent: Path) -> Path:
    return agent.with_name(agent.name.rsplit(".", 1)[0] + ".test.yaml")


def cassette_of(agent: Path) -> Path:
    return agent.with_name(agent.name.rsplit(".", 1)[0] + ".cassette.yaml")


class TryRuns:
    """The editor's tries: one `Session` per try, kept for its approvals' answers."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="agentctl-edit-"))
        self._sessions: dict[str, Any] = {}
        self._lock = threading.Lock()

    def start(
        self,
        path: Path,
        text: str,
        message: str,
        *,
        vars: dict[str, Any] | None = None,
        model: str | None = None,
        record: Path | None = None,
    ) -> dict[str, Any]:
        """Run `text` (the file at `path`) on `message`: its events, as `agentctl run --jsonl`
        writes them, and the thread to answer on. `model` instead of the file's (as
        `agentctl run --model`); `record`: the cassette to save the live replies in."""
        from runner.errors import RunnerError, SpecError
        from runner.load.any import load_any
        from runner.load.source import SOURCE_OVERLAY
        from runner.lsp.documents import Overlay
        from runner.run.options import RunOptions
        from runner.run.session import Session, WorkflowSession
        from runner.spec.workflow import WorkflowSpec

        token = SOURCE_OVERLAY.set(Overlay({str(path): text}))
        try:
            spec = load_any(path, vars=dict(vars or {}))  # an agent, or a workflow
        except SpecError as exc:
            raise TryError("\n".join(str(p) for p in exc.problems)) from None
        finally:
            SOURCE_OVERLAY.reset(token)
        declared = getattr(spec, "model", None)
        model_id = model or (
            declared if isinstance(declared, str) else getattr(declared, "id", None)
        )
        if record is not None and (not model_id or model_id.startswith("replay:")):
            raise TryError(
                "record runs a real model: give one for the try (such as openai:gpt-4.1), or "
                "set `model:` to it, with its API key in the server's environment"
            )
        options = RunOptions(db=self.home / "threads.db", record=record, model=model or None)
        try:
            if isinstance(spec, WorkflowSpec):
                session: Session = WorkflowSession(spec, options=options)
            else:
                session = Session(spec, options=options)
        except RunnerError as exc:
            raise TryError(str(exc)) from None
        return self._turn(session, message=message)

    def answer(self, thread_id: str, decisions: list[dict[str, Any]]) -> dict[str, Any]:
        """Answer the approvals the try on `thread_id` waits for, and run on."""
        from runner.run.answers import Decision

        with self._lock:
            session = self._sessions.get(thread_id)
        if session is None:
            raise LookupError(f"no try waits on thread {thread_id}: try it again")
        chosen = []
        for decision in decisions:
            kind = decision.get("type")
            if kind not in ("approve", "edit", "reject", "answer"):
                raise TryError(f"a decision is approve, edit, reject or answer, not {kind!r}")
            chosen.append(
                Decision(kind, args=decision.get("args"), message=decision.get("message"))
            )
        return self._turn(session, thread_id=thread_id, decisions=chosen)

    def _turn(self, session: Any, **turn: Any) -> dict[str, Any]:
        import json

        from runner.events import Interrupt
        from runner.run.session import to_json_line

        events = list(session.stream(turn.pop("message", None), **turn))
        thread = next(
            (getattr(e, "thread_id", None) for e in events if getattr(e, "thread_id", None)), None
        )
        waiting = bool(events) and isinstance(events[-1], Interrupt)
        with self._lock:
            if waiting and thread:
                self._sessions[thread] = session
                while len(self._sessions) > MAX_SESSIONS:
                    oldest = next(iter(self._sessions))
                    self._sessions.pop(oldest).close()
            else:
                if thread:
                    self._sessions.pop(thread, None)
                if session not in self._sessions.values():
                    session.close()
        return {
            "thread_id": thread,
            "waiting": waiting,
            "events": [json.loads(to_json_line(event)) for event in events],
        }

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()
        shutil.rmtree(self.home, ignore_errors=True)


def run_tests(agent: Path, root: Path) -> dict[str, Any]:
    """The cases of the agent's test file, run on the saved files: each case's status and lines
    of detail, and the problems of a bad test file (paths shown relative to `root`)."""
    from runner.testing import report
    from runner.testing.suite import run_suite

    test_file = test_file_of(agent)
    if not test_file.is_file():
        raise LookupError(f"no test file {test_file.name} beside {agent.name}")
    suite = run_suite([test_file])
    prefix = str(root) + os.sep

    def shown(text: str) -> str:
        return text.replace(prefix, "")

    return {
        "file": test_file.name,
        "problems": [shown(str(p)) for p in suite.problems],
        "cases": [
            {
                "name": shown(result.id),
                "status": result.status,
                "line": shown(report.case_line(result)),
                "details": [shown(line) for line in report.details(result)]
                if result.status in ("failed", "error")
                else [],
            }
            for result in suite.results
        ],
        "summary": {s: suite.count(s) for s in ("passed", "failed", "error", "skipped")},
    }
