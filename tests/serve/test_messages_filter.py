"""The log filter on the engines' run loggers (`runner.serve.messages.UserMistakes`), on records
as the engines make them: a stdlib record with `exc_info`, and structlog's event dict whose
exception is already formatted into text. The served behaviour is tested through the API in
`test_serve_messages.py`."""

from __future__ import annotations

import logging
import sys
import traceback

from runner.errors import BuildError, Problem, SpecError
from runner.serve.messages import UserMistakes


def _raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as exc:
        return exc


def _record(msg: object, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("langgraph_api.worker", logging.ERROR, __file__, 1, msg, (), info)


def _structlog(event: str, exc: BaseException, run_id: str = "r1") -> logging.LogRecord:
    """A record as structlog hands it to logging after `format_exc_info`: no `exc_info`, the
    traceback as text, and the notes LangGraph adds to an error raised in a step."""
    text = "".join(traceback.format_exception(exc))
    fields = {"event": event, "run_id": run_id, "level": "error", "exception": text}
    return _record(fields)


def test_a_users_mistake_is_one_line_without_traceback() -> None:
    problems = [
        Problem("a.yaml", 3, 1, "promt", "unknown key"),
        Problem("a.yaml", 4, 1, "modle", "unknown key"),
    ]
    error = _raised(SpecError(problems))
    record = _record("Background run failed", error)
    assert UserMistakes().filter(record)
    assert record.exc_info is None
    assert record.getMessage() == (
        "run failed: a.yaml:3:1: promt: unknown key; a.yaml:4:1: modle: unknown key"
    )
    assert record.levelname == "WARNING"


def test_the_engines_second_record_of_one_failure_is_dropped() -> None:
    error = _raised(BuildError("a.yaml:2:1: tools: cannot be built"))
    error.add_note("During task with name 'model' and id '1234'")
    mistakes = UserMistakes()
    first = _structlog("Run encountered an error in graph", error)
    assert mistakes.filter(first)
    assert first.msg == {
        "event": "run failed: a.yaml:2:1: tools: cannot be built",
        "run_id": "r1",
        "level": "warning",
    }
    assert not mistakes.filter(_structlog("Background run failed", error))
    # the same mistake in another run is another line
    assert mistakes.filter(_structlog("Background run failed", error, run_id="r2"))


def test_a_bug_keeps_its_traceback() -> None:
    error = _raised(KeyError("oops"))
    record = _record("Background run failed", error)
    assert UserMistakes().filter(record)
    assert record.exc_info is not None and record.getMessage() == "Background run failed"
    structured = _structlog("Run failed", error)
    assert UserMistakes().filter(structured)
    assert isinstance(structured.msg, dict) and "exception" in structured.msg


def test_an_engine_warning_about_a_setting_serve_makes_is_dropped() -> None:
    warning = {"event": "Heads up: You've set --allow-blocking, which allows ...", "level": "w"}
    assert not UserMistakes().filter(_record(warning))
    assert UserMistakes().filter(_record({"event": "Queue stats", "level": "info"}))


def test_aegras_advice_in_its_own_settings_is_dropped() -> None:
    # serve's banner says it in agentctl's terms: "no run queue", "no authentication"
    for event in (
        "Running without Redis broker. Background runs have no crash recovery ... Set "
        "REDIS_BROKER_ENABLED=true and configure REDIS_URL for production use.",
        "No auth file configured — all requests share a single 'anonymous' identity. ...",
    ):
        assert not UserMistakes().filter(_record({"event": event, "level": "warning"}))


def test_the_exception_being_handled_counts_when_the_record_says_so() -> None:
    try:
        raise SpecError(Problem("a.yaml", 1, 1, "name", "missing"))
    except SpecError:
        record = _record({"event": "Run failed", "exc_info": True})
        assert sys.exc_info()[1] is not None
        assert UserMistakes().filter(record)
    assert record.msg == {"event": "run failed: a.yaml:1:1: name: missing"}
