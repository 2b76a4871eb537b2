"""`agentctl serve` processes for the tests: started on a free port of 127.0.0.1, waited for,
stopped with SIGINT (checking it stops cleanly and leaves no process behind), or killed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

AGENTCTL = str(Path(sys.executable).with_name("agentctl"))

ENGINES = [
    "inmem",
    pytest.param(
        "aegra",
        marks=pytest.mark.skipif(
            sys.version_info < (3, 12), reason="Aegra needs Python 3.12 or newer"
        ),
    ),
]
"""The engines a test of both runs on (Aegra needs Python 3.12 and a Postgres server)."""

START_LIMIT = 180
"""Seconds a server may take to answer (a wait limit for a loaded machine, not a measurement)."""


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


_GIVEN: set[int] = set()
PORT_BLOCK = 1000


def free_port() -> int:
    """A port for a test server on 127.0.0.1, nothing listening on it now: never one this
    process handed out before, and outside the kernel's ephemeral range (32768 and up), in a
    block of its own for each pytest-xdist worker. Ports that `bind(("", 0))` gives can come
    back to another process at once: two servers started together were given one port, the
    second failed to bind while the first answered its readiness check, and a test talked to
    the wrong server (seen once in the whole suite as "connection refused" after a kill)."""
    import random
    import socket

    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    base = 20000 + (index % 12) * PORT_BLOCK
    for _ in range(PORT_BLOCK):
        port = base + random.randrange(PORT_BLOCK)
        if port in _GIVEN:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    from runner.serve.ports import free_port as any_free_port

    return any_free_port("127.0.0.1")


def launch(
    paths: Sequence[str | Path],
    *,
    cwd: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    log: Path,
) -> Server:
    """`agentctl serve PATHS --port P ARGS` in its own session, its output in `log`; returns at
    once (see `wait_ready`)."""
    return launch_command(
        lambda port: [AGENTCTL, "serve", *map(str, paths), "--port", str(port), *args],
        cwd=cwd,
        env=env,
        log=log,
    )


def launch_command(
    command: Callable[[int], Sequence[str]],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    log: Path,
) -> Server:
    """The server `command(port)` starts, in its own session (see `launch`)."""
    port = free_port()
    full_env = {
        **os.environ,
        "LANGSMITH_TRACING": "false",
        "DATABASE_URL": "",
        "REDIS_URL": "",
        **(env or {}),
    }
    full_env.pop("LOG_LEVEL", None)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(command(port)),
            cwd=cwd,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Server(f"http://127.0.0.1:{port}", proc, log)


def wait_ready(server: Server) -> Server:
    """Wait until `server` answers; it is killed, and the test fails, if it exits first."""
    deadline = time.monotonic() + START_LIMIT
    while True:
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{server.url}/info", timeout=2) as reply,
        ):
            if reply.status == 200:
                return server
        if server.proc.poll() is not None or time.monotonic() > deadline:
            kill(server)
            raise AssertionError(f"agentctl serve did not start:\n{server.output()}")
        time.sleep(0.2)


def start(
    paths: Sequence[str | Path],
    *,
    cwd: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    log: Path,
) -> Server:
    """`launch`, then `wait_ready`."""
    return wait_ready(launch(paths, cwd=cwd, args=args, env=env, log=log))


def stop(server: Server, how: signal.Signals = signal.SIGINT) -> str:
    """Ctrl-C (or another signal): the server must exit 0, say "stopped" and leave no process
    of its group behind. Returns its output."""
    server.proc.send_signal(how)
    try:
        code = server.proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        kill(server)
        raise AssertionError(
            f"agentctl serve did not stop on {how.name}:\n{server.output()}"
        ) from None
    out = server.output()
    assert code == 0, out
    assert "stopped" in out, out
    assert not group_alive(server.proc.pid), "a process serve started outlived it"
    return out


def kill(server: Server, *, group: bool = True) -> None:
    """SIGKILL, as a crash: the server gets no chance to clean up. `group=False` kills the
    server's process alone (anything it started would be left behind: see `group_alive`)."""
    with contextlib.suppress(ProcessLookupError):
        if group:
            os.killpg(server.proc.pid, signal.SIGKILL)
        else:
            server.proc.kill()
    server.proc.wait(timeout=30)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@contextlib.contextmanager
def serving(
    paths: Sequence[str | Path],
    *,
    cwd: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    log: Path,
) -> Iterator[Server]:
    """A server for the block, stopped with SIGINT after it (see `stop`)."""
    server = start(paths, cwd=cwd, args=args, env=env, log=log)
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            stop(server)


@contextlib.contextmanager
def two_instances(
    agents: Path, postgres_server: str, redis_server: str
) -> Iterator[tuple[Server, Server]]:
    """Two servers of `agents` on one fresh database and one Redis (keys of their own), with
    short leases so a crashed server's run is taken over within seconds (Aegra's defaults: 30 s
    leases, a reaper every 15 s); stopped with SIGTERM after the block, as a service manager
    stops them."""
    import uuid

    from tests.services import fresh_database

    prefix = f"agentctl-test:{uuid.uuid4().hex[:8]}:"
    env = {
        "LEASE_DURATION_SECONDS": "5",
        "HEARTBEAT_INTERVAL_SECONDS": "2",
        "REAPER_INTERVAL_SECONDS": "1",
        "WORKER_QUEUE_KEY": f"{prefix}jobs",
        "REDIS_CHANNEL_PREFIX": f"{prefix}run:",
    }
    with fresh_database(postgres_server) as database:
        args = ["--db", database, "--redis", redis_server]
        launched = [
            launch([agents], cwd=agents, args=args, env=env, log=agents / f"serve-{i}.log")
            for i in (1, 2)
        ]
        try:
            yield wait_ready(launched[0]), wait_ready(launched[1])
        finally:
            for server in launched:
                if server.proc.poll() is None:
                    stop(server, signal.SIGTERM)
