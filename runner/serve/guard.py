"""What a served app refuses before any route sees the request: the one place where a web page
the user happens to visit is kept from driving their agents.

A browser lets any page send requests to any address, the user's own loopback server included;
what it withholds is the answer, unless the server allows the page's origin (CORS). A page can
still *send* a "simple" request (a form-like POST, `text/plain` or no content type, no preflight)
and the server acts on it unseen, and a page whose name the attacker re-points at 127.0.0.1 (DNS
rebinding) becomes same-origin with the server. So every request passes, in this order:

- **Host**: the `Host` header names the address served (`host:port`; on loopback also
  `localhost`, `127.0.0.1` and `[::1]` with that port; on a wildcard address any IP literal with
  that port, or this machine's name), or a name allowed by `--allow-host`. Refused: `421`. This is
  what defeats DNS rebinding: the attacker's page sends its own name.
- **Origin**: a request a browser marks with another origin (`Origin`, or `Sec-Fetch-Site` on a
  sub-resource without one) is refused unless that origin is listed (`--allow-origin`): `403`.
  The origin the page was served from (Origin's host equal to Host) is the same origin. Listed
  origins get CORS answers naming them (preflights included), never `*`; an engine's own CORS
  headers are dropped, so nothing else can widen that.
- **Content type**: a request that carries a body must declare JSON (`application/json` or
  `application/*+json`): `415` otherwise. A cross-origin page cannot send that without a
  preflight, which the origin rule answers.
- **Size**: a body over `max_body` bytes is `413`, decided from `Content-Length` before anything
  is read, or while reading a body sent without one (chunked), holding at most `max_body` bytes.

`GuardMiddleware` is a pure ASGI middleware (no buffering of answers, streams pass through); the
engines put it around their whole app, and `agentctl mcp serve` around its endpoint.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_MAX_BODY",
    "ENGINE_CORS_OFF",
    "Guard",
    "GuardMiddleware",
    "check_host",
    "check_origin",
    "parse_size",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY = 10 * 1024 * 1024
"""10 MB: far above any thread, run or store request a client makes."""

ENGINE_CORS_OFF: dict[str, Any] = {
    "allow_origins": [],
    "allow_credentials": False,
    "allow_methods": ["GET"],
    "allow_headers": [],
    "expose_headers": [],
}
"""An engine's own CORS setting (`http.cors`, both engines): no origin at all. Allowed origins
get their CORS answers from `GuardMiddleware`, in front of the engine."""

EXPOSED_HEADERS = ["content-location", "location", "x-pagination-total", "x-pagination-next"]
"""Answer headers a listed origin's scripts may read (what langgraph-sdk reads)."""

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")
DEFAULT_PORTS = {"http": 80, "https": 443}
_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$")
_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}

log = logging.getLogger("agentctl.serve.guard")


def parse_size(text: str) -> int:
    """Bytes from `10MB`, `512KB`, `1GB`, `1048576` (units are powers of 1024; `KiB`, `K` and
    lower case also read). ValueError, saying what is accepted, otherwise."""
    found = _SIZE.match(text)
    if found is None or int(found.group(1)) <= 0:
        raise ValueError(
            f"expected a positive size such as 10MB, 512KB or 1048576 (bytes), found {text!r}"
        )
    unit = (found.group(2) or "").lower()[:1]
    return int(found.group(1)) * _UNITS[unit]


def _split_host(value: str) -> tuple[str, int | None]:
    """(lower-case name or IP, port or None) of a `Host` header or `--allow-host` value;
    ValueError when it is not one. IPv6 keeps its brackets: `[::1]`."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            raise ValueError(f"unclosed '[' in {value!r}")
        name, rest = value[: end + 1], value[end + 1 :]
        ipaddress.IPv6Address(name[1:-1])  # ValueError when it is not an IPv6 address
    else:
        name, colon, port_text = value.partition(":")
        rest = colon + port_text
        if not _NAME.match(name):
            raise ValueError(f"not a host name or IP address: {value!r}")
    if not rest:
        return name, None
    if not rest.startswith(":") or not rest[1:].isdigit() or not 0 < int(rest[1:]) < 65536:
        raise ValueError(f"not a port: {rest!r} in {value!r}")
    return name, int(rest[1:])


def check_host(value: str) -> str:
    """`value` as `--allow-host` takes it (`name`, `name:port`, an IP, `[v6]:port`), or
    ValueError saying why not."""
    try:
        _split_host(value)
    except ValueError as exc:
        raise ValueError(
            f"expected a host name or IP address, optionally with :PORT ({exc})"
        ) from None
    return value


def check_origin(value: str) -> str:
    """`value` as `--allow-origin` takes it (`scheme://host[:port]`), or ValueError."""
    if value.strip() in ("*", "null"):
        raise ValueError(
            f"{value.strip()!r} is not accepted: list each origin (scheme://host[:port]) that "
            "may call the server"
        )
    _origin(value)
    return value


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None


def _origin(value: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an origin, default port filled in; ValueError otherwise."""
    parts = urlsplit(value.strip().lower())
    if parts.scheme not in DEFAULT_PORTS or not parts.netloc:
        raise ValueError(f"expected an origin such as http://localhost:5173, found {value!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"an origin is scheme://host[:port], without a path: found {value!r}")
    host, port = _split_host(parts.netloc)
    return parts.scheme, host, port or DEFAULT_PORTS[parts.scheme]


@dataclass(frozen=True)
class Guard:
    """Which requests a server on one address accepts (see the module docstring)."""

    port: int
    hosts: frozenset[tuple[str, int | None]]
    """Allowed (name, port) of `Host`; a port of None: any port (an `--allow-host NAME`)."""
    any_ip: bool = False
    """Serving on a wildcard address: any IP literal with `port` is the address served."""
    origins: frozenset[tuple[str, str, int]] = frozenset()
    """Cross-origin callers allowed: (scheme, host, port)."""
    max_body: int = DEFAULT_MAX_BODY

    @classmethod
    def serving(
        cls,
        host: str,
        port: int,
        *,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
        max_body: int = DEFAULT_MAX_BODY,
    ) -> Guard:
        """The guard of a server listening on `host:port` (the port it really has, not 0).
        ValueError (naming the bad value) for an `allow_hosts` or `allow_origins` entry that is
        not a host name or an origin."""
        address = host.strip("[]").lower()
        shown = f"[{address}]" if ":" in address else address
        hosts: set[tuple[str, int | None]] = {(shown, port)}
        ip = _ip(address)
        if address == "localhost" or (ip is not None and ip.is_loopback):
            hosts |= {(name, port) for name in LOOPBACK_NAMES}
        any_ip = address in WILDCARDS
        if any_ip:
            # Names only this machine's owner sets; a rebinding page brings a name of its own.
            hosts |= {(name, port) for name in LOOPBACK_NAMES}
            hosts.add((socket.gethostname().lower(), port))
        for value in allow_hosts:
            hosts.add(_split_host(check_host(value)))
        origins = {_origin(check_origin(value)) for value in allow_origins}
        return cls(port, frozenset(hosts), any_ip, frozenset(origins), max_body)

    def allows_host(self, value: str | None) -> bool:
        """Whether a request with this `Host` header is for the address served."""
        if not value:
            return False
        try:
            name, port = _split_host(value)
        except ValueError:
            return False
        port = port or DEFAULT_PORTS["http"]
        if (name, None) in self.hosts or (name, port) in self.hosts:
            return True
        return self.any_ip and port == self.port and _ip(name) is not None

    def allows_origin(self, origin: str, host: str) -> bool:
        """Whether a request from `origin`, sent to `host` (an allowed `Host`), is same-origin or
        from a listed origin."""
        try:
            scheme, name, port = _origin(origin)
        except ValueError:
            return False
        if (scheme, name, port) in self.origins:
            return True
        try:
            sent_name, sent_port = _split_host(host)
        except ValueError:
            return False
        return name == sent_name and port == (sent_port or DEFAULT_PORTS[scheme])

    def lists(self, origin: str | None) -> bool:
        """Whether `origin` is one of the listed (cross) origins."""
        if origin is None or not self.origins:
            return False
        try:
            return _origin(origin) in self.origins
        except ValueError:
            return False

    def origin_texts(self) -> list[str]:
        """The listed origins as browsers write them (default ports left out)."""
        return sorted(
            f"{scheme}://{host}" + ("" if DEFAULT_PORTS[scheme] == port else f":{port}")
            for scheme, host, port in self.origins
        )


class GuardMiddleware:
    """Refuses what `guard` refuses, answers CORS for its listed origins, and passes everything
    else to `app` untouched (answers stream through).

    `in_process_root_path`: requests an engine sends to itself, in its own process, through an
    ASGI client (LangGraph's in-memory server uses `/noauth` for its MCP and A2A endpoints). No
    network request can set an ASGI root path, so these pass unchecked."""

    def __init__(self, app: App, *, guard: Guard, in_process_root_path: str | None = None) -> None:
        from starlette.middleware.cors import CORSMiddleware

        self.app = app
        self.guard = guard
        self.in_process_root_path = in_process_root_path
        self.cors = CORSMiddleware(
            self._without_engine_cors,
            allow_origins=guard.origin_texts(),
            allow_methods=["*"],
            allow_headers=["*"],  # the listed origin is trusted: x-api-key, authorization, ...
            allow_credentials=True,
            expose_headers=EXPOSED_HEADERS,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or (
            self.in_process_root_path is not None
            and scope.get("root_path") == self.in_process_root_path
        ):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._refusal(scope, headers)
        body: list[Message] | None = None
        if refusal is None and kind == "http":
            refusal = self._body_refusal(headers)
            if refusal is None and "transfer-encoding" in headers:
                body = await _read_at_most(receive, self.guard.max_body)
                if body is None:
                    refusal = (413, f"the body is larger than {_size(self.guard.max_body)}")
        if refusal is not None:
            status, reason = refusal
            log.warning(
                "refused %s %s (Host %s, Origin %s): %s",
                scope.get("method", "WEBSOCKET"),
                scope.get("path"),
                headers.get("host"),
                headers.get("origin"),
                reason,
            )
            await _refuse(scope, receive, send, status, reason)
            return
        if body is not None:
            receive = _replay(body, receive)
        if kind == "http" and self.guard.lists(headers.get("origin")):
            await self.cors(scope, receive, send)  # a listed origin: its CORS answers
        else:
            await self._without_engine_cors(scope, receive, send)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        host = headers.get("host")
        if not self.guard.allows_host(host):
            return 421, (
                f"this server does not answer for the host {host!r} (a page of another site "
                "may be trying to reach it); serve with --allow-host NAME to add a name"
            )
        origin = headers.get("origin")
        if origin is not None:
            if not self.guard.allows_origin(origin, host or ""):
                return 403, (
                    f"requests from the origin {origin!r} are refused; serve with "
                    "--allow-origin ORIGIN to allow a front end served elsewhere"
                )
        elif headers.get("sec-fetch-site") in ("cross-site", "same-site") and (
            headers.get("sec-fetch-mode") != "navigate" or scope.get("method") != "GET"
        ):
            # a sub-resource (an image, a script) of another page: sent without an Origin
            return 403, "requests from pages of another origin are refused"
        return None

    def _body_refusal(self, headers: dict[str, str]) -> tuple[int, str] | None:
        length = headers.get("content-length", "")
        has_body = "transfer-encoding" in headers or (length.isdigit() and int(length) > 0)
        if not has_body:
            return None
        if length.isdigit() and int(length) > self.guard.max_body:
            return 413, f"the body is larger than {_size(self.guard.max_body)}"
        kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind != "application/json" and not (
            kind.startswith("application/") and kind.endswith("+json")
        ):
            found = f"{kind!r}" if kind else "no content type"
            return 415, f"the body must be JSON (Content-Type: application/json), found {found}"
        return None

    async def _without_engine_cors(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`app`, its CORS headers dropped: the answer's CORS is the guard's alone (websockets
        pass as they are)."""

        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_clean(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if not name.lower().startswith(b"access-control-")
                ]
            await send(message)

        await self.app(scope, receive, send_clean)


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; a repeated header keeps its first value, except
    Host and Origin, which must not be repeated (a second one would make a refusal ambiguous)."""
    found: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        if name in found:
            if name in ("host", "origin"):
                found[name] = ""  # refused: an empty Host, an origin that parses as nothing
            continue
        found[name] = value
    return found


async def _read_at_most(receive: Receive, limit: int) -> list[Message] | None:
    """The request's body messages, or None as soon as they hold more than `limit` bytes."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages  # the client left: the app sees it too
        size += len(message.get("body", b""))
        if size > limit:
            return None
        if not message.get("more_body", False):
            return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` that gives `messages` first, then the connection's own (disconnects)."""
    queued = list(messages)

    async def replay() -> Message:
        if queued:
            return queued.pop(0)
        return await receive()

    return replay


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, reason: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
        return
    from starlette.responses import JSONResponse

    # Close the connection: a refused body is never read, so the connection cannot be reused.
    response = JSONResponse({"detail": reason}, status_code=status, headers={"connection": "close"})
    await response(scope, receive, send)


def _size(count: int) -> str:
    for unit, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if count % factor == 0:
            return f"{count // factor} {unit}"
    return f"{count} bytes"
