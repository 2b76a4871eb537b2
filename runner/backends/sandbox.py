"""The OS sandbox `execute` runs its commands in: bubblewrap (`bwrap`) on Linux.

The file tools confine paths themselves; a shell command can do anything its process can, so it
is confined by the kernel instead. `bubblewrap_command` builds the whole sandbox, flag by flag:
that one function IS the promise, and `tests/backends/test_sandbox.py` attacks it.

What a sandboxed command gets: `root_dir` as its working directory, writable; the rest of the
host file system read-only (so system programs work) with a private, empty `/tmp` and `/run`;
its own PID namespace (agentctl's process and its `/proc` entry, environment included, are not
visible); no network unless `network: true`; no capabilities; and the clean environment
`local_shell` gives every command. When the shell exits or the call times out, the namespace's
first process dies and the kernel kills every process left in it, background ones included.

`sandbox: auto` uses bubblewrap when it works on this machine. Whether it works is found out
once per process (`bubblewrap_problem`) by running the real command line on `true`: `bwrap`
may be installed and still unusable, e.g. where user namespaces are disabled.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from runner.spec.backend import BackendSpec

__all__ = [
    "SANDBOX_MODES",
    "SandboxPolicy",
    "SandboxUnavailable",
    "bubblewrap_command",
    "bubblewrap_problem",
    "choose_sandbox",
    "sandbox_problems",
]

SandboxMode = Literal["auto", "bubblewrap", "none"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("auto", "bubblewrap", "none")
INSTALL_HINT = "install the `bubblewrap` package (Debian/Ubuntu: apt-get install bubblewrap)"


class SandboxUnavailable(Exception):
    """`sandbox: bubblewrap` was asked for and cannot work on this machine."""


@dataclass(frozen=True, kw_only=True)
class SandboxPolicy:
    """What a `local_shell` spec asks of the sandbox (host paths already absolute)."""

    mode: SandboxMode = "auto"
    network: bool = False
    read_only_paths: tuple[str, ...] = ()
    writable_paths: tuple[str, ...] = ()


def bubblewrap_command(
    bwrap: str,
    command: Sequence[str],
    *,
    root: str,
    network: bool = False,
    read_only_paths: Sequence[str] = (),
    writable_paths: Sequence[str] = (),
) -> list[str]:
    """The `bwrap` command line that runs `command` confined to `root` (see the module doc).

    Mounts are applied in order and a later one covers an earlier one, so the paths given are
    mounted parents first: `root` under `/tmp` is bound into the private `/tmp`, and a read-only
    path inside `root` stays read-only.
    """
    args = [
        bwrap,
        # New user, IPC, PID, network, UTS and cgroup namespaces. The PID namespace hides every
        # host process (agentctl and its /proc/PID/environ included), and when its first process
        # exits the kernel kills everything left in it, so no background process outlives a call.
        # The network namespace has only a loopback of its own: no route out, and the host's
        # 127.0.0.1 services and abstract Unix sockets are out of reach.
        "--unshare-all",
    ]
    if network:
        args.append("--share-net")  # `network: true`: keep the host's network namespace
    args += [
        "--die-with-parent",  # if agentctl dies, the sandbox dies with it (SIGKILL)
        "--new-session",  # setsid: no keystrokes pushed into agentctl's terminal (TIOCSTI)
        "--cap-drop", "ALL",  # no capabilities inside, even when agentctl runs as root
        "--ro-bind", "/", "/",  # the host file system, read-only: programs and libraries work
        "--dev", "/dev",  # a minimal /dev (null, zero, urandom, tty, shm), no host devices
        "--proc", "/proc",  # the /proc of the new PID namespace only
        "--tmpfs", "/tmp",  # a private, empty /tmp, gone when the call ends
        "--tmpfs", "/run",  # hide host sockets (docker, dbus, systemd) that a read-only mount
        #                     would still let a process connect to
    ]  # fmt: skip
    mounts: list[tuple[str, str]] = []
    if network:
        resolv = os.path.realpath("/etc/resolv.conf")
        if resolv.startswith("/run/"):  # systemd-resolved: DNS config lives under the hidden /run
            mounts.append(("--ro-bind-try", resolv))
    mounts += [("--ro-bind", path) for path in read_only_paths]  # `read_only_paths`: visible
    mounts.append(("--bind", root))  # root_dir: the one place writable by default
    mounts += [("--bind", path) for path in writable_paths]  # `writable_paths`: writable too
    for flag, path in sorted(mounts, key=lambda mount: _depth(mount[1])):  # parents first
        args += [flag, path, path]
    args += [
        "--chdir", root,  # the command starts in root_dir
        "--",
        *command,
    ]  # fmt: skip
    return args


def _depth(path: str) -> int:
    return len([part for part in path.split("/") if part])


def find_bubblewrap() -> str | None:
    """The `bwrap` program on PATH (Linux only), or None."""
    if not sys.platform.startswith("linux"):
        return None
    return shutil.which("bwrap")


@functools.cache
def bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox commands on this machine, or None when it can.

    Asked once per process: runs `true` under the real command line (see `bubblewrap_command`)
    in a scratch root, so "installed but unusable" (no user namespaces, a seccomp policy that
    forbids them) is found before any command relies on it.
    """
    import subprocess  # (here: `agentctl validate` asks this module about sandboxes only)
    import tempfile

    bwrap = find_bubblewrap()
    if bwrap is None:
        if not sys.platform.startswith("linux"):
            return f"bubblewrap needs Linux (this is {sys.platform})"
        return f"`bwrap` not found on PATH; {INSTALL_HINT}"
    with tempfile.TemporaryDirectory(prefix="agentctl-sandbox-probe-") as scratch:
        root = os.path.realpath(scratch)
        try:
            done = subprocess.run(
                bubblewrap_command(bwrap, ["/bin/sh", "-c", "true"], root=root),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=30,
                env={"PATH": os.defpath},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{bwrap} does not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"{bwrap} cannot create a sandbox here: {said[-1] if said else done.returncode}"
    return None


def choose_sandbox(mode: SandboxMode) -> tuple[Literal["bubblewrap", "none"], str | None]:
    """The sandbox `mode` gives on this machine, and why there is none when `auto` found none.

    `bubblewrap` that cannot work raises `SandboxUnavailable`; `none` is the user's choice and
    needs no reason.
    """
    if mode == "none":
        return "none", None
    problem = bubblewrap_problem()
    if problem is None:
        return "bubblewrap", None
    if mode == "bubblewrap":
        raise SandboxUnavailable(f"sandbox: bubblewrap is not available: {problem}")
    return "none", problem


def sandbox_problems(
    backend: BackendSpec, at: tuple[str | int, ...]
) -> list[tuple[tuple[str | int, ...], str]]:
    """What this machine lacks for the sandboxes `backend` asks for, as (key path, message):
    `sandbox: bubblewrap` without a working bubblewrap, and `read_only_paths` / `writable_paths`
    that do not exist (bwrap would refuse every command). `at` is the key path of `backend`."""
    from runner.spec.backend import LocalShellBackendSpec, backend_leaves

    problems: list[tuple[tuple[str | int, ...], str]] = []
    for leaf, leaf_at in backend_leaves(backend, at):
        if not isinstance(leaf, LocalShellBackendSpec) or leaf.sandbox == "none":
            continue
        if leaf.sandbox == "bubblewrap" and (problem := bubblewrap_problem()) is not None:
            problems.append(
                (
                    (*leaf_at, "sandbox"),
                    f"bubblewrap is not available: {problem}; or choose `sandbox: auto` "
                    "(unsandboxed with a warning when missing) or `sandbox: none`",
                )
            )
        for key in ("read_only_paths", "writable_paths"):
            paths: list[Any] = getattr(leaf, key)
            for index, path in enumerate(paths):
                if not os.path.exists(path):
                    problems.append(((*leaf_at, key, index), f"no such file or folder: {path}"))
    return problems
