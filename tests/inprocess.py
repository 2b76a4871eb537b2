"""`agentctl ARGS` in the test's own process, as a child process would see it.

A child gets its own working directory, environment, standard streams, signal handlers, import
path and modules; here each is set for the call and put back after it, so no call sees what an
earlier one left (tests run in random order, several to a worker process). The streams are
pipes (not terminals), stdin holds the given text and then ends, and the output is read back as
`subprocess.run(..., text=True)` reads a child's: UTF-8, `\\r\\n` and `\\r` as `\\n`.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)


def run_main(
    argv: list[str], *, cwd: Path, env: dict[str, str], stdin: str = "", timeout: float = 120
) -> tuple[int, str, str]:
    """`runner.cli.main(argv)` as `python -m runner ARGV` runs it: its exit status, stdout and
    stderr. A call still running after `timeout` seconds gets Ctrl-C and then raises
    `subprocess.TimeoutExpired`, as `subprocess.run(timeout=...)` would for a child: a command
    that wrongly goes on (a server that starts instead of refusing) fails the test, not hangs it.
    """
    from runner.cli import main

    out, err = _pipe(), _pipe()
    try:
        with _as_a_child(cwd, env, stdin=stdin, stdout=out, stderr=err), _deadline(timeout):
            try:
                code = _exit_status(main(argv))
            except SystemExit as exc:
                code = _exit_status(exc.code)
    except _TimedOut:
        raise subprocess.TimeoutExpired(
            ["agentctl", *argv], timeout, _read(out), _read(err)
        ) from None
    return code, _read(out), _read(err)


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """After `seconds`, Ctrl-C for the call, again every few seconds until it returns (as a
    terminal's user would press it), then `_TimedOut`."""
    import _thread

    done = threading.Event()
    fired: list[bool] = []

    def watch() -> None:
        if done.wait(seconds):
            return
        fired.append(True)
        while not done.is_set():
            _thread.interrupt_main()
            done.wait(5)

    watchdog = threading.Thread(target=watch, name="agentctl-deadline", daemon=True)
    watchdog.start()
    try:
        yield
    except KeyboardInterrupt:
        if not fired:
            raise
    finally:
        done.set()
        watchdog.join()
    if fired:
        raise _TimedOut


class _TimedOut(Exception):
    """The call outlived its deadline."""


def _pipe(text: str = "") -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8", write_through=True)


def _read(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer.getvalue()  # type: ignore[attr-defined]
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _exit_status(code: Any) -> int:
    """What `sys.exit(code)` makes the process's exit status (a message is printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _as_a_child(
    cwd: Path,
    env: dict[str, str],
    *,
    stdin: str,
    stdout: io.TextIOWrapper,
    stderr: io.TextIOWrapper,
) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_path = list(sys.path)
    saved_modules = set(sys.modules)
    saved_signals = {number: signal.getsignal(number) for number in _SIGNALS}
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_tempdir = tempfile.tempdir
    os.environ.update(env)
    os.environ.pop("AGENTCTL_DEBUG", None)
    os.chdir(cwd)
    tempfile.tempdir = None  # found again from TMPDIR, as a new process finds it
    sys.stdin, sys.stdout, sys.stderr = _pipe(stdin), stdout, stderr
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for number, handler in saved_signals.items():
            if handler is not None:
                signal.signal(number, handler)
        # Modules imported from the call's own files (agent tools, their neighbours): a later
        # call with a file of the same name imports its own, as a new process would.
        added_paths = [entry for entry in sys.path if entry not in saved_path]
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            if name.startswith("agentctl_user_") or _under(sys.modules[name], added_paths):
                del sys.modules[name]
        os.chdir(saved_cwd)
        tempfile.tempdir = saved_tempdir
        os.environ.clear()
        os.environ.update(saved_env)


def _under(module: Any, folders: list[str]) -> bool:
    file = getattr(module, "__file__", None)
    return bool(file) and any(Path(file).is_relative_to(folder) for folder in folders if folder)
