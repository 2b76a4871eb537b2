"""The port a server listens on: refused when taken (an engine would quietly pick another), or
chosen free for `--port 0`."""

from __future__ import annotations

import socket

from runner.errors import RunError

__all__ = ["check_port", "free_port"]


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
