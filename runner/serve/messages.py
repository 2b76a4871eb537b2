"""A run that fails on the user's own mistake reaches the person who made it, on both engines.

agentctl raises a `RunnerError` on purpose, with a located message written for a person (an
input missing or of the wrong type, a budget reached, an answer the approval does not take, a
file with a problem); any other exception is a bug. The engines treat every exception alike:
they log it with its traceback and send the client a generic text (`An internal error
occurred` from the in-memory engine, `execution failed` from Aegra's stream). `install` makes
them tell the two apart:

- the client gets the message: in the run's error (`runs.join`, `runs.wait`) and in the
  stream's `error` event. The in-memory engine serialises an exception with `model_dump` when
  it has one (`RunnerError.model_dump`); Aegra stores `str(error)` as the run's error, and its
  stream's error event is sent through `streaming_service.signal_run_error`, which
  `speak_on_aegra_streams` wraps (the one patch of an engine);
- the server log gets one line for it (`run failed: MESSAGE`), no traceback: the engines' log
  records of the exception are rewritten, and a second record of the same exception dropped;
- a warning the engine logs about what serve does, not the user, is dropped (the in-memory
  engine's "you've set --allow-blocking": serve chooses that setting, there is no such flag;
  its "slow graph load").

A bug keeps the engines' behaviour: its traceback in the log, a generic text for the client.
"""

from __future__ import annotations

import collections
import logging
import re
import sys
import threading
import warnings
from typing import Any

from runner.errors import RunnerError

__all__ = [
    "ENGINE_LOGGERS",
    "UserMistakes",
    "install",
    "one_line",
    "speak_on_aegra_streams",
    "user_error",
]

ENGINE_LOGGERS = (
    "langgraph_api.worker",  # the in-memory engine's runs
    "langgraph_runtime_inmem.queue",  # its run queue (the --allow-blocking warning)
    "langgraph_api.graph",  # its graph loading (the slow factory warning)
    "aegra_api.services.run_executor",  # Aegra's runs
    "aegra_api.main",  # its start (the Redis warning)
    "aegra_api.core.auth_middleware",  # its authentication (the no-auth warning)
)
"""The loggers the engines report a failed run on, and warn on about serve's settings."""

NOT_ASKED_FOR = (
    "Heads up: You've set --allow-blocking",
    "Slow graph load.",
    "Running without Redis broker.",
    "No auth file configured",
)
"""The start of engine warnings about what serve does, not the user: the blocking calls it lets
through (there is no such flag), the time its factory takes to build an agent's graph (it
builds it from the file, and keeps it for the runs that follow); Aegra's advice, in its own
settings (`REDIS_BROKER_ENABLED`, `aegra.json`), on a server without `--redis` or without
authentication, which serve's banner already states in its own terms ("no run queue", "no
authentication: anyone who reaches this address may use it")."""

NOT_ASKED_FOR_WARNINGS = (
    "Remove `format_exc_info`",  # structlog's advice to whoever configured the engine's logs
    "`durability` has no effect when no checkpointer",  # a run without a thread
)
"""Python warnings the engines cause, whoever runs on them."""

GRAPH_NOTES = ("During task with name ",)
"""How the notes LangGraph adds to an exception raised in a graph's step begin."""

REMEMBERED = 256
"""Failed runs whose line was logged, remembered to drop the engine's second record of one."""


def user_error(error: BaseException | None) -> RunnerError | None:
    """`error` when it is one agentctl raised on purpose for a person to act on, else None."""
    return error if isinstance(error, RunnerError) else None


def one_line(text: object) -> str:
    """A message on one line (a `SpecError` lists a problem a line)."""
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _exception_of(record: logging.LogRecord) -> BaseException | None:
    """The exception a record carries: stdlib's `exc_info`, or structlog's in its event dict
    (`True` for the one being handled, as `logger.exception` leaves it)."""
    found: Any = record.exc_info
    if not found and isinstance(record.msg, dict):
        found = record.msg.get("exc_info")
    if found is True:
        found = sys.exc_info()
    if isinstance(found, tuple) and len(found) == 3:
        found = found[1]
    return found if isinstance(found, BaseException) else None


_RAISED = re.compile(r"(?P<type>[A-Za-z_][\w.]*): (?P<message>.*)", re.DOTALL)


def _mistake_in_traceback(text: str) -> str | None:
    """The message of the user's mistake a formatted traceback ends with, or None. The
    engines' structlog chains format the exception into the record before a filter sees it
    (`format_exc_info`); the exception's type is found again by its qualified name."""
    lines = text.rstrip().splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith((" ", "Traceback"))]
    raised = "\n".join(lines[frames[-1] + 1 :] if frames else lines)
    match = _RAISED.fullmatch(raised)
    if match is None:
        return None
    module, _, name = match["type"].rpartition(".")
    found = getattr(sys.modules.get(module), name, None)
    if isinstance(found, type) and issubclass(found, RunnerError):
        # without the notes LangGraph adds to an exception raised in a graph's step
        message = match["message"].splitlines()
        return "\n".join(line for line in message if not line.startswith(GRAPH_NOTES))
    return None


def _mistake(record: logging.LogRecord) -> str | None:
    """The message of the user's mistake `record` reports the failure of a run on, or None."""
    error = _exception_of(record)
    if error is not None:
        return str(error) if user_error(error) else None
    text = record.msg.get("exception") if isinstance(record.msg, dict) else None
    return _mistake_in_traceback(text) if isinstance(text, str) else None


class UserMistakes(logging.Filter):
    """On an engine's loggers: one line, without traceback, for a run that failed on a
    `RunnerError`; nothing for warnings about settings the user did not make."""

    def __init__(self) -> None:
        super().__init__()
        self._logged: collections.OrderedDict[tuple[str, str], None] = collections.OrderedDict()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        fields = record.msg if isinstance(record.msg, dict) else None
        event = fields.get("event") if fields is not None else record.msg
        if isinstance(event, str) and event.startswith(NOT_ASKED_FOR):
            return False
        message = _mistake(record)
        if message is None:
            return True
        # Keyed by the message's first line: a traceback's text ends with the exception's notes
        run = str((fields or {}).get("run_id", ""))
        if not self._first((run, message.strip().partition("\n")[0])):
            return False
        line = f"run failed: {one_line(message)}"
        record.exc_info = record.exc_text = None
        if fields is not None:
            fields = {k: v for k, v in fields.items() if k not in ("exc_info", "exception")}
            fields["event"] = line
            if "level" in fields:  # structlog's, already added
                fields["level"] = "warning"
            record.msg = fields
        else:
            record.msg, record.args = line, ()
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True

    def _first(self, key: tuple[str, str]) -> bool:
        """Whether this run's failure is reported for the first time."""
        with self._lock:
            if key in self._logged:
                return False
            self._logged[key] = None
            if len(self._logged) > REMEMBERED:
                self._logged.popitem(last=False)
            return True


_FILTER = UserMistakes()


def install() -> None:
    """Make the engine about to serve (either) log user mistakes as the module says; Aegra
    also needs `speak_on_aegra_streams`. Call it before the engine serves."""
    for name in ENGINE_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    for text in NOT_ASKED_FOR_WARNINGS:
        warnings.filterwarnings("ignore", message=re.escape(text), category=UserWarning)


def speak_on_aegra_streams() -> None:
    """Aegra sends a failed run's stream `error` event with the text `TYPE: execution failed`
    (`run_executor` calls `streaming_service.signal_run_error` in the `except` block that caught
    the run's exception). Wrapped: when the exception being handled is a user's mistake, the
    event carries its message."""
    from aegra_api.services.streaming_service import streaming_service

    signal = streaming_service.signal_run_error
    if getattr(signal, "_agentctl", False):
        return

    async def signal_run_error(run_id: str, error_message: str, error_type: str = "Error") -> None:
        error = user_error(sys.exc_info()[1])
        if error is not None:
            error_message = str(error)
        await signal(run_id, error_message, error_type)

    signal_run_error._agentctl = True  # type: ignore[attr-defined]
    streaming_service.signal_run_error = signal_run_error
