"""The `local_shell` backend: a filesystem backend that can also run shell commands in `root_dir`.

What `execute` guarantees:

- an OS sandbox (`sandbox: auto`, the default, when bubblewrap works here; see `sandbox.py`):
  only `root_dir` is writable, agentctl's process and environment are out of sight, no network.
  Without one (`sandbox: none`, or `auto` on a machine without bubblewrap) commands run on the
  host with the runner's privileges and only the file tools are confined to `root_dir`;
- a clean environment: commands see only `ENV_ALLOWLIST` taken from the runner's environment plus
  the spec's `env`, so API keys in the runner's environment do not leak into commands unless the
  spec says `inherit_env: true`;
- no process outlives its call: the call ends when the shell exits or the timeout passes, and then
  whatever the command started and is still running is killed (the sandbox's PID namespace; without
  a sandbox, the command's process group, which a process leaving its session escapes). A call may
  ask for its own timeout; one longer than `max_timeout` is cut to it (the operator's ceiling,
  which the agent cannot raise);
- an output cap: stdout and stderr are merged in the order written, at most `max_output_bytes` are
  kept (the rest is read and dropped so the command never blocks on a full pipe), and the result is
  flagged `truncated`.

The output is read from a pipe agentctl owns, by a reader that never stops (sync: a selector;
async: an event-loop reader), and the call waits for the shell's exit, not for the pipe's end: a
background process holding the pipe open cannot stretch a call, and neither path can block on a
reader that was paused or cancelled.
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
from collections.abc import Mapping, Sequence
from typing import Any

from runner.backends.filesystem import DEFAULT_MAX_FILE_SIZE, FilesystemBackend
from runner.backends.protocol import BackendError, ExecuteResult
from runner.backends.sandbox import (
    SandboxMode,
    SandboxUnavailable,
    bubblewrap_command,
    choose_sandbox,
    find_bubblewrap,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_MAX_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "ENV_ALLOWLIST",
    "LocalShellBackend",
    "command_environment",
]

ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER", "SHELL", "TMPDIR")
"""The runner's variables a command sees by default (when they are set)."""
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_TIMEOUT = 3600.0
DEFAULT_MAX_OUTPUT_BYTES = 100_000
SHELL = "/bin/sh"
_CHUNK = 65536
_PIPE_MAX = 1 << 20
"""The most a pipe holds on Linux (`/proc/sys/fs/pipe-max-size`)."""
_POLL = 0.05
"""Seconds between checks whether the shell exited, where no pidfd can signal it (macOS)."""


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


def _exit_signal(pid: int) -> int | None:
    """A descriptor that becomes readable when `pid` exits (Linux pidfd), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _drain(fd: int, output: _Output) -> None:
    """Read what the (non-blocking) pipe holds now: the last words of a finished command. At most
    a full pipe's worth, so a writer that escaped the kill cannot keep the call going."""
    for _ in range(_PIPE_MAX // _CHUNK + 1):
        try:
            chunk = os.read(fd, _CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        if not chunk:
            return
        output.add(chunk)


def _pump_until_exit(
    process: subprocess.Popen[bytes], fd: int, output: _Output, deadline: float
) -> bool:
    """Read the pipe into `output` until the shell exits (True) or the deadline passes (False)."""
    exit_fd = _exit_signal(process.pid)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            if exit_fd is not None:
                selector.register(exit_fd, selectors.EVENT_READ)
            while process.poll() is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                wait = remaining if exit_fd is not None else min(remaining, _POLL)
                for key, _ in selector.select(wait):
                    if key.fd != fd:
                        continue
                    try:
                        chunk = os.read(fd, _CHUNK)
                    except (BlockingIOError, InterruptedError):
                        continue
                    if chunk:
                        output.add(chunk)
                    else:  # every writer closed the pipe: only the exit is left to wait for
                        selector.unregister(fd)
            return True
    finally:
        if exit_fd is not None:
            os.close(exit_fd)


class LocalShellBackend(FilesystemBackend):
    """A `FilesystemBackend` plus `execute`: `/bin/sh -c COMMAND` in `root_dir`, sandboxed when
    the machine can (`sandbox`), with a timeout, an output cap and a clean environment."""

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        *,
        virtual_mode: bool = True,
        max_file_size_bytes: int = DEFAULT_MAX_FILE_SIZE,
        timeout: float = DEFAULT_TIMEOUT,
        max_timeout: float = DEFAULT_MAX_TIMEOUT,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        ripgrep: str | bool = True,
        sandbox: SandboxMode = "auto",
        network: bool = False,
        read_only_paths: Sequence[str | os.PathLike[str]] = (),
        writable_paths: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        super().__init__(
            root_dir,
            virtual_mode=virtual_mode,
            max_file_size_bytes=max_file_size_bytes,
            ripgrep=ripgrep,
        )
        self.timeout = timeout
        self.max_timeout = max(max_timeout, timeout)
        self.max_output_bytes = max_output_bytes
        self.env = dict(env or {})
        self.inherit_env = inherit_env
        self.network = network
        self.read_only_paths = tuple(os.path.realpath(p) for p in read_only_paths)
        self.writable_paths = tuple(os.path.realpath(p) for p in writable_paths)
        try:
            self.sandbox, self.unsandboxed_because = choose_sandbox(sandbox)
        except SandboxUnavailable as exc:
            raise BackendError(str(exc)) from None

    def environment(self) -> dict[str, str]:
        """The environment commands run with (computed per command from the runner's)."""
        env = command_environment(self.env, inherit=self.inherit_env)
        if self.sandbox == "bubblewrap" and "TMPDIR" in env and "TMPDIR" not in self.env:
            env["TMPDIR"] = "/tmp"  # the host's TMPDIR is not there; the private /tmp is
        return env

    def command_line(self, command: str) -> list[str]:
        """The program and arguments that run `command`: the shell, inside the sandbox if any."""
        return self.argv_line([SHELL, "-c", command])

    def argv_line(self, argv: Sequence[str]) -> list[str]:
        """The program and arguments that run `argv` as it is (no shell reads it), inside the
        sandbox if any: bubblewrap gets it after `--`, so it too takes no element as an option."""
        if not argv or not argv[0]:
            raise BackendError("no program to run: the command is empty")
        if any("\0" in arg for arg in argv):
            raise BackendError("a command argument contains a NUL character")
        if self.sandbox == "none":
            return list(argv)
        bwrap = find_bubblewrap()
        if bwrap is None:  # it was there when the backend was made
            raise BackendError("the sandbox program `bwrap` is gone from PATH; cannot run commands")
        return bubblewrap_command(
            bwrap,
            argv,
            root=self.root,
            network=self.network,
            read_only_paths=self.read_only_paths,
            writable_paths=self.writable_paths,
        )

    def _process_options(self, output: int, env: Mapping[str, str] | None = None) -> dict[str, Any]:
        """How every command starts: in the root, clean environment (plus `env`), its own
        session (so its process group can be killed), stdin closed, stdout and stderr both into
        `output`."""
        return {
            "cwd": self.root,
            "env": {**self.environment(), **(env or {})},
            "stdin": subprocess.DEVNULL,
            "stdout": output,
            "stderr": output,
            "start_new_session": True,
        }

    def _limit(self, timeout: float | None) -> float:
        if timeout is None:
            return self.timeout
        if not timeout > 0:
            raise BackendError(f"timeout must be a positive number of seconds, got {timeout:g}")
        return min(float(timeout), self.max_timeout)

    def execute(self, command: str, timeout: float | None = None) -> ExecuteResult:
        return self._run(self.command_line(command), self._limit(timeout), None)

    async def aexecute(self, command: str, timeout: float | None = None) -> ExecuteResult:
        return await self._arun(self.command_line(command), self._limit(timeout), None)

    def execute_argv(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecuteResult:
        """`execute` for an argument list: `argv[0]` runs with exactly these arguments (no shell
        splits, expands or reads them), with `env` added to the command's environment. The
        same sandbox, timeout, output cap and clean-up as `execute`."""
        return self._run(self.argv_line(argv), self._limit(timeout), env)

    async def aexecute_argv(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecuteResult:
        return await self._arun(self.argv_line(argv), self._limit(timeout), env)

    def _run(self, argv: list[str], limit: float, env: Mapping[str, str] | None) -> ExecuteResult:
        output = _Output(self.max_output_bytes)
        read_end, write_end = os.pipe()
        try:
            try:
                process = subprocess.Popen(argv, **self._process_options(write_end, env))
            finally:
                os.close(write_end)
            deadline = time.monotonic() + limit
            exited = False
            try:
                exited = _pump_until_exit(process, read_end, output, deadline)
            finally:
                _kill_group(process.pid)  # what the command started and left running dies now
                process.wait()
            os.set_blocking(read_end, False)
            _drain(read_end, output)
        finally:
            os.close(read_end)
        return output.result(process.returncode, None if exited else limit)

    async def _arun(
        self, argv: list[str], limit: float, env: Mapping[str, str] | None
    ) -> ExecuteResult:
        output = _Output(self.max_output_bytes)
        loop = asyncio.get_running_loop()
        read_end, write_end = os.pipe()
        try:
            try:
                process = await asyncio.create_subprocess_exec(
                    *argv, **self._process_options(write_end, env)
                )
            finally:
                os.close(write_end)
            os.set_blocking(read_end, False)

            def read() -> None:  # called by the loop whenever the pipe has data (or its end)
                try:
                    chunk = os.read(read_end, _CHUNK)
                except (BlockingIOError, InterruptedError):
                    return
                if chunk:
                    output.add(chunk)
                else:
                    loop.remove_reader(read_end)

            loop.add_reader(read_end, read)
            exited = False
            try:
                # No asyncio pipe: process.wait() returns at the exit, whoever holds the pipe.
                await asyncio.wait_for(process.wait(), limit)
                exited = True
            except TimeoutError:
                pass
            finally:
                loop.remove_reader(read_end)
                _kill_group(process.pid)  # what the command started and left running dies now
                await asyncio.shield(process.wait())
            _drain(read_end, output)
        finally:
            os.close(read_end)
        return output.result(process.returncode, None if exited else limit)
