"""The port a server listens on: refused when taken (an engine would quietly pick another),
chosen free for `--port 0`, and waited for before the server says where it serves."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from runner.errors import RunError

__all__ = ["check_port", "free_port", "when_listening"]


def free_port(host: str) -> int:
    """A port on `host` that nothing listens on now."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def check_port(host: str, port: int) -> None:
    """Refuse a port already taken."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise RunError(
                f"cannot serve on {host}:{port}: {exc.strerror or exc}; choose another --port "
                "(0 picks a free one)"
            ) from None


WAIT_STEP = 0.05
"""Seconds between two attempts to connect while the server starts."""


def _reachable(host: str) -> str:
    """The address a client on this machine connects to for a server on `host`."""
    return {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)


def accepts(host: str, port: int) -> bool:
    """Whether a connection to the server on `host`:`port` is accepted now."""
    try:
        with socket.create_connection((_reachable(host), port), timeout=1):
            return True
    except OSError:
        return False


def when_listening(host: str, port: int, then: Callable[[], None]) -> threading.Thread:
    """Call `then()` (once, from a daemon thread) as soon as the port accepts connections: an
    engine binds it only when it is ready to answer, so a client told then is not refused. The
    thread ends with the process if the port never opens."""

    def wait() -> None:
        while not accepts(host, port):
            time.sleep(WAIT_STEP)
        then()

    thread = threading.Thread(target=wait, name="agentctl-serving-at", daemon=True)
    thread.start()
    return thread
