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
- an output cap: stdout and stderr are merged in the order written; output over
  `max_output_bytes` is shown as its head and its tail (the end of a test log is usually what
  matters) and flagged `truncated`, with the whole output, up to `max_saved_output_bytes` (again
  head and tail beyond that), in `full_output` for the tool to save; the rest is read and dropped
  so the command never blocks on a full pipe.

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
    "DEFAULT_MAX_SAVED_OUTPUT_BYTES",
    "DEFAULT_MAX_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "ENV_ALLOWLIST",
    "LocalShellBackend",
    "command_environment",
    "cut_between",
]

ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER", "SHELL", "TMPDIR")
"""The runner's variables a command sees by default (when they are set)."""
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_TIMEOUT = 3600.0
DEFAULT_MAX_OUTPUT_BYTES = 100_000
DEFAULT_MAX_SAVED_OUTPUT_BYTES = 10_000_000
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
    """Collects a command's output: its first and last `saved_cap // 2` bytes and the count of all.

    What the model is shown (`cap` bytes: head and tail) and what is saved for it to read
    (`saved_cap` bytes, the whole output when it fits) are both cut from these two ends.
    """

    def __init__(self, cap: int, saved_cap: int | None = None) -> None:
        self.cap = cap
        self.saved_cap = max(saved_cap or cap, cap)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        half = self.saved_cap - self.saved_cap // 2
        room = self.saved_cap // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * half:  # trimmed now and then, not on every chunk
            del self.tail[:-half]

    def _ends(self, cap: int) -> str:
        """The output within `cap` bytes: all of it, or its head and tail around a note."""
        whole = bytes(self.head) + bytes(self.tail)
        if self.total <= cap and len(whole) == self.total:
            return _decode(whole)
        head = whole[: cap // 2]
        tail = whole[len(whole) - (cap - cap // 2) :]
        return cut_between(_decode(head, final=False), _decode(tail, start=True), self.total)

    def result(self, exit_code: int | None, timed_out: float | None) -> ExecuteResult:
        truncated = self.total > self.cap
        output = self._ends(self.cap)
        full = self._ends(self.saved_cap) if truncated else None
        if timed_out is not None:
            if output and not output.endswith("\n"):
                output += "\n"
            seconds = f"{timed_out:g} second" + ("" if timed_out == 1 else "s")
            output += (
                f"[Command timed out after {seconds}; it was killed together with every process "
                "it started]"
            )
            return ExecuteResult(output, None, truncated, full)
        if exit_code is not None and exit_code < 0:  # killed by a signal: report it as a shell does
            exit_code = 128 - exit_code
        return ExecuteResult(output, exit_code, truncated, full)


def _decode(data: bytes, *, final: bool = True, start: bool = False) -> str:
    """UTF-8 text of a piece of output: a cut in the middle of a character drops the partial
    character at the end (`final=False`) or at the start (`start`), rather than garbling it."""
    if start:
        skip = 0
        while skip < min(len(data), 3) and data[skip] & 0xC0 == 0x80:
            skip += 1
        data = data[skip:]
    return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=final)


def cut_between(head: str, tail: str, total: int) -> str:
    """`head` and `tail` of an output of `total` bytes around a note of how much is left out;
    each end is trimmed to whole lines when a line break is near (within its last or first
    half)."""
    newline = head.rfind("\n")
    if newline >= len(head) // 2:
        head = head[: newline + 1]
    newline = tail.find("\n")
    if 0 <= newline < len(tail) // 2:
        tail = tail[newline + 1 :]
    dropped = total - len(head.encode()) - len(tail.encode())
    if head and not head.endswith("\n"):
        head += "\n"
    unit = "byte" if dropped == 1 else "bytes"
    return f"{head}... [{dropped:,} {unit} of output not shown] ...\n{tail}"


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
        max_saved_output_bytes: int = DEFAULT_MAX_SAVED_OUTPUT_BYTES,
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
        self.max_saved_output_bytes = max(max_saved_output_bytes, max_output_bytes)
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
        output = _Output(self.max_output_bytes, self.max_saved_output_bytes)
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
        output = _Output(self.max_output_bytes, self.max_saved_output_bytes)
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
