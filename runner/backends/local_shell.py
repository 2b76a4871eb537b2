"""The `local_shell` backend: a filesystem backend that can also run shell commands in `root_dir`.

This is NOT a sandbox: commands run on the host with the runner's privileges, and only the file
tools are confined to `root_dir`. What it does guarantee:

- a clean environment: commands see only `ENV_ALLOWLIST` taken from the runner's environment plus
  the spec's `env`, so API keys in the runner's environment do not leak into commands unless the
  spec says `inherit_env: true`;
- a timeout: the command runs in its own session, and when the timeout passes the whole process
  group is killed (children and grandchildren too) and the output says so;
- an output cap: stdout and stderr are merged in the order written, at most `max_output_bytes` are
  kept (the rest is read and dropped so the command never blocks on a full pipe), and the result is
  flagged `truncated`.

The async twin uses asyncio subprocesses, so a long command never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from typing import IO, Any

from runner.backends.filesystem import DEFAULT_MAX_FILE_SIZE, FilesystemBackend
from runner.backends.protocol import BackendError, ExecuteResult

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT",
    "ENV_ALLOWLIST",
    "LocalShellBackend",
    "command_environment",
]

ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER", "SHELL", "TMPDIR")
"""The runner's variables a command sees by default (when they are set)."""
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_OUTPUT_BYTES = 100_000
SHELL = "/bin/sh"
_CHUNK = 65536


def command_environment(
    extra: Mapping[str, str], *, inherit: bool, parent: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a command: the allowlist (or all of `parent` with `inherit`) + `extra`."""
    parent = os.environ if parent is None else parent
    if inherit:
        base = dict(parent)
    else:
        base = {name: parent[name] for name in ENV_ALLOWLIST if name in parent}
        base.setdefault("PATH", os.defpath)
    return {**base, **extra}


class _Output:
    """Collects a command's output, keeping the first `cap` bytes and counting the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]

    def result(self, exit_code: int | None, timed_out: float | None) -> ExecuteResult:
        truncated = self.total > self.cap
        # A cut in the middle of a UTF-8 sequence drops the partial character, not garbles it.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        output = decoder.decode(bytes(self.kept), final=not truncated)
        if timed_out is not None:
            if output and not output.endswith("\n"):
                output += "\n"
            seconds = f"{timed_out:g} second" + ("" if timed_out == 1 else "s")
            output += (
                f"[Command timed out after {seconds}; it was killed together with every process "
                "it started]"
            )
            return ExecuteResult(output, None, truncated)
        if exit_code is not None and exit_code < 0:  # killed by a signal: report it as a shell does
            exit_code = 128 - exit_code
        return ExecuteResult(output, exit_code, truncated)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class LocalShellBackend(FilesystemBackend):
    """A `FilesystemBackend` plus `execute`: `/bin/sh -c COMMAND` in `root_dir`."""

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        *,
        virtual_mode: bool = True,
        max_file_size_bytes: int = DEFAULT_MAX_FILE_SIZE,
        timeout: float = DEFAULT_TIMEOUT,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        ripgrep: str | bool = True,
    ) -> None:
        super().__init__(
            root_dir,
            virtual_mode=virtual_mode,
            max_file_size_bytes=max_file_size_bytes,
            ripgrep=ripgrep,
        )
        self.timeout = timeout
        self.max_output_bytes = max_output_bytes
        self.env = dict(env or {})
        self.inherit_env = inherit_env

    def environment(self) -> dict[str, str]:
        """The environment commands run with (computed per command from the runner's)."""
        return command_environment(self.env, inherit=self.inherit_env)

    def _process_options(self) -> dict[str, Any]:
        """How every command starts: in the root, clean environment, its own session (so its
        process group can be killed), stdin closed, stderr merged into stdout."""
        return {
            "cwd": self.root,
            "env": self.environment(),
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.STDOUT,
            "start_new_session": True,
        }

    def _limit(self, timeout: float | None) -> float:
        if timeout is None:
            return self.timeout
        if not timeout > 0:
            raise BackendError(f"timeout must be a positive number of seconds, got {timeout}")
        return float(timeout)

    def execute(self, command: str, timeout: float | None = None) -> ExecuteResult:
        limit = self._limit(timeout)
        output = _Output(self.max_output_bytes)
        process = subprocess.Popen([SHELL, "-c", command], **self._process_options())
        deadline = time.monotonic() + limit
        finished = False
        try:
            assert process.stdout is not None
            finished = self._pump(process.stdout, output, deadline)
            if finished:
                try:
                    process.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    finished = False
        finally:
            if not finished:
                _kill_group(process.pid)
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
        return output.result(process.returncode, None if finished else limit)

    @staticmethod
    def _pump(stream: IO[bytes], output: _Output, deadline: float) -> bool:
        """Read `stream` into `output` until EOF (True) or the deadline (False)."""
        fd = stream.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                if not selector.select(remaining):
                    continue
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    return True
                output.add(chunk)

    async def aexecute(self, command: str, timeout: float | None = None) -> ExecuteResult:
        limit = self._limit(timeout)
        output = _Output(self.max_output_bytes)
        process = await asyncio.create_subprocess_exec(
            SHELL, "-c", command, **self._process_options()
        )

        async def pump() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(_CHUNK):
                output.add(chunk)
            await process.wait()

        finished = False
        try:
            await asyncio.wait_for(pump(), limit)
            finished = True
        except TimeoutError:
            pass
        finally:
            if not finished:
                _kill_group(process.pid)
                await asyncio.shield(process.wait())
        return output.result(process.returncode, None if finished else limit)
