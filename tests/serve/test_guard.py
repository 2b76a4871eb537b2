"""`runner.serve.guard`, the middleware every served app sits behind, attacked at the ASGI level
where each byte the client sends is under the test's control. Threat list: a foreign Host, a
DNS-rebinding Host (the attacker's name, the server's port), a repeated Host, a cross-origin
page (with and without an Origin), a JSON body sent as `text/plain` or without a content type,
a body too large (announced, or chunked without a length), an engine that answers CORS with `*`.
The same rules against real servers of both engines: test_serve_browser_safety.py."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from runner.serve.guard import (
    DEFAULT_MAX_BODY,
    Guard,
    GuardMiddleware,
    check_host,
    check_origin,
    parse_size,
)

PORT = 2024
SERVED = f"127.0.0.1:{PORT}"


@dataclass
class Exchange:
    """One request through the middleware: what the app saw and what the client got."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    app_called: bool = False
    app_body: bytes = b""
    chunks_read: int = 0


class EngineApp:
    """Stands for an engine: reads the whole body, answers 200 with CORS `*` (as both engines
    do by default)."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.exchange.app_called = True
        if scope["type"] == "http":
            while True:
                message = await receive()
                self.exchange.app_body += message.get("body", b"")
                if not message.get("more_body"):
                    break
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"access-control-allow-origin", b"*"),
                    (b"access-control-allow-credentials", b"true"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b"{}"})


async def request(
    method: str,
    path: str = "/threads",
    headers: dict[str, str] | None = None,
    chunks: Iterator[bytes] | list[bytes] = (),  # type: ignore[assignment]
    *,
    guard: Guard | None = None,
    scope_extra: dict[str, Any] | None = None,
) -> Exchange:
    exchange = Exchange()
    sent = {"host": SERVED, **(headers or {})}
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in sent.items() if v is not None],
        **(scope_extra or {}),
    }
    pending = iter(chunks)
    later = object()

    async def receive() -> dict[str, Any]:
        chunk = next(pending, later)
        if chunk is later:
            return {"type": "http.request", "body": b"", "more_body": False}
        exchange.chunks_read += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            exchange.status = message["status"]
            exchange.headers = {k.decode().lower(): v.decode() for k, v in message["headers"]}
        else:
            exchange.body += message.get("body", b"")

    middleware = GuardMiddleware(
        EngineApp(exchange), guard=guard or Guard.serving("127.0.0.1", PORT)
    )
    await middleware(scope, receive, send)
    return exchange


JSON = {"content-type": "application/json", "content-length": "2"}


# ----------------------------------------------------------------------------- Host


async def test_the_address_served_and_its_loopback_names_pass() -> None:
    for host in (SERVED, f"localhost:{PORT}", f"[::1]:{PORT}", f"LOCALHOST:{PORT}"):
        exchange = await request("GET", "/ok", {"host": host})
        assert exchange.status == 200 and exchange.app_called, host


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        f"evil.example:{PORT}",  # DNS rebinding: the attacker's name, re-pointed at 127.0.0.1
        "127.0.0.1",  # port 80, not the one served
        "127.0.0.1:2025",
        f"localhost.:{PORT}",
        f"127.0.0.1.evil.example:{PORT}",
        f"127.0.0.1:{PORT}@evil.example",
        "",
    ],
)
async def test_a_host_that_is_not_the_address_served_is_refused(host: str) -> None:
    exchange = await request("POST", headers={"host": host, **JSON}, chunks=[b"{}"])
    assert exchange.status == 421
    assert not exchange.app_called and exchange.chunks_read == 0
    assert b"--allow-host" in exchange.body


async def test_a_missing_or_repeated_host_is_refused() -> None:
    exchange = Exchange()
    scope = {"type": "http", "method": "GET", "path": "/ok", "headers": []}
    statuses: list[int] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def receive() -> dict[str, Any]:
        raise AssertionError("a refused request is not read")

    middleware = GuardMiddleware(EngineApp(exchange), guard=Guard.serving("127.0.0.1", PORT))
    await middleware(scope, receive, send)
    scope["headers"] = [(b"host", SERVED.encode()), (b"host", b"evil.example")]
    await middleware(scope, receive, send)
    assert statuses == [421, 421] and not exchange.app_called


async def test_allow_host_adds_a_name_for_any_port_or_one_port() -> None:
    guard = Guard.serving("127.0.0.1", PORT, allow_hosts=["agents.example.com", "proxy.local:8443"])
    for host, status in (
        ("agents.example.com", 200),
        ("agents.example.com:443", 200),
        ("proxy.local:8443", 200),
        ("proxy.local:8444", 421),
        ("example.com", 421),
    ):
        assert (await request("GET", "/ok", {"host": host}, guard=guard)).status == status, host


def test_which_hosts_an_address_answers_for() -> None:
    specific = Guard.serving("192.168.1.5", 80)
    assert specific.allows_host("192.168.1.5") and specific.allows_host("192.168.1.5:80")
    assert not specific.allows_host("localhost") and not specific.allows_host("192.168.1.6")
    everywhere = Guard.serving("0.0.0.0", PORT)
    assert everywhere.allows_host(f"10.0.0.7:{PORT}") and everywhere.allows_host(
        f"[fe80::1]:{PORT}"
    )
    assert everywhere.allows_host(f"localhost:{PORT}")
    assert not everywhere.allows_host("10.0.0.7:9999")
    assert not everywhere.allows_host(f"evil.example:{PORT}")
    v6 = Guard.serving("::1", PORT)
    assert v6.allows_host(f"[::1]:{PORT}") and v6.allows_host(f"localhost:{PORT}")


# ----------------------------------------------------------------------------- Origin


async def test_the_same_origin_passes_and_gets_no_cors_headers() -> None:
    for origin, host in (
        (f"http://{SERVED}", SERVED),
        (f"http://localhost:{PORT}", f"localhost:{PORT}"),
    ):
        exchange = await request(
            "POST", headers={"host": host, "origin": origin, **JSON}, chunks=[b"{}"]
        )
        assert exchange.status == 200 and exchange.app_body == b"{}"
        assert not [h for h in exchange.headers if h.startswith("access-control-")], (
            exchange.headers
        )


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        f"http://localhost:{PORT + 1}",  # another server on this machine is another origin
        "http://127.0.0.1",  # port 80: another origin
        "null",  # a sandboxed page, a file
        f"http://{SERVED}.evil.example",
        "garbage",
    ],
)
async def test_another_origin_is_refused_before_anything_is_read(origin: str) -> None:
    exchange = await request("POST", headers={"origin": origin, **JSON}, chunks=[b"{}"])
    assert exchange.status == 403
    assert not exchange.app_called and exchange.chunks_read == 0
    assert "access-control-allow-origin" not in exchange.headers


async def test_a_sub_resource_of_another_page_without_an_origin_is_refused() -> None:
    # <img src>, <script src>, a `no-cors` GET: browsers send no Origin, but Sec-Fetch-Site
    for site in ("cross-site", "same-site"):
        exchange = await request(
            "GET", "/threads/x/state", {"sec-fetch-site": site, "sec-fetch-mode": "no-cors"}
        )
        assert exchange.status == 403 and not exchange.app_called
    # a link followed to the page is a navigation: the page opens
    navigation = await request(
        "GET", "/", {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
    )
    assert navigation.status == 200


async def test_a_listed_origin_gets_cors_naming_it_and_never_a_star() -> None:
    guard = Guard.serving("127.0.0.1", PORT, allow_origins=["http://localhost:5173"])
    preflight = await request(
        "OPTIONS",
        headers={
            "origin": "http://localhost:5173",
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, x-api-key, authorization",
        },
        guard=guard,
    )
    assert preflight.status == 200 and not preflight.app_called
    assert preflight.headers["access-control-allow-origin"] == "http://localhost:5173"
    allowed = preflight.headers["access-control-allow-headers"].lower()
    assert {"x-api-key", "authorization", "content-type"} <= {h.strip() for h in allowed.split(",")}
    assert "POST" in preflight.headers["access-control-allow-methods"]
    exchange = await request(
        "POST", headers={"origin": "http://localhost:5173", **JSON}, chunks=[b"{}"], guard=guard
    )
    assert exchange.status == 200
    assert exchange.headers["access-control-allow-origin"] == "http://localhost:5173"
    assert "x-pagination-total" in exchange.headers["access-control-expose-headers"]
    # an origin not listed still gets nothing, the preflight included
    other = await request(
        "OPTIONS",
        headers={"origin": "http://localhost:5174", "access-control-request-method": "POST"},
        guard=guard,
    )
    assert other.status == 403 and "access-control-allow-origin" not in other.headers


async def test_the_engines_own_cors_headers_never_reach_the_client() -> None:
    exchange = await request("GET", "/ok")
    assert exchange.status == 200
    assert "access-control-allow-origin" not in exchange.headers
    assert "access-control-allow-credentials" not in exchange.headers


# ----------------------------------------------------------------------------- body


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",  # what a cross-origin page may send with no preflight
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonp",
        None,  # a Blob body without a type: no Content-Type at all
    ],
)
async def test_a_body_that_is_not_declared_json_is_refused(content_type: str | None) -> None:
    headers = {"content-length": "2"}
    if content_type is not None:
        headers["content-type"] = content_type
    exchange = await request("POST", headers=headers, chunks=[b"{}"])
    assert exchange.status == 415
    assert not exchange.app_called and exchange.chunks_read == 0


async def test_json_declared_in_its_forms_passes() -> None:
    for kind in (
        "application/json",
        "application/json; charset=utf-8",
        "application/merge-patch+json",
    ):
        exchange = await request(
            "PATCH", headers={"content-type": kind, "content-length": "2"}, chunks=[b"{}"]
        )
        assert exchange.status == 200 and exchange.app_body == b"{}", kind


async def test_a_request_without_a_body_needs_no_content_type() -> None:
    for headers in ({}, {"content-length": "0"}):
        exchange = await request("POST", "/threads/t/runs/r/cancel", headers)
        assert exchange.status == 200, headers


async def test_a_body_announced_too_large_is_refused_unread() -> None:
    guard = Guard.serving("127.0.0.1", PORT, max_body=1024)
    exchange = await request(
        "POST",
        headers={"content-type": "application/json", "content-length": "1025"},
        chunks=[b"x" * 1025],
        guard=guard,
    )
    assert exchange.status == 413 and exchange.chunks_read == 0 and not exchange.app_called
    assert exchange.headers["connection"] == "close"
    assert b"1 KB" in exchange.body


async def test_a_chunked_body_is_counted_and_refused_past_the_limit() -> None:
    guard = Guard.serving("127.0.0.1", PORT, max_body=1024)

    def endless() -> Iterator[bytes]:
        while True:
            yield b"x" * 100

    exchange = await request(
        "POST",
        headers={"content-type": "application/json", "transfer-encoding": "chunked"},
        chunks=endless(),
        guard=guard,
    )
    assert exchange.status == 413 and not exchange.app_called
    assert exchange.chunks_read == 11  # stops at the first chunk past 1024 bytes


async def test_a_chunked_body_within_the_limit_reaches_the_app_intact() -> None:
    guard = Guard.serving("127.0.0.1", PORT, max_body=1024)
    exchange = await request(
        "POST",
        headers={"content-type": "application/json", "transfer-encoding": "chunked"},
        chunks=[b'{"a": ', b"1", b"}"],
        guard=guard,
    )
    assert exchange.status == 200 and exchange.app_body == b'{"a": 1}'


# ----------------------------------------------------------------------------- other scopes


async def test_in_process_calls_and_lifespan_pass() -> None:
    exchange = Exchange()
    middleware = GuardMiddleware(
        EngineApp(exchange), guard=Guard.serving("127.0.0.1", PORT), in_process_root_path="/noauth"
    )
    # LangGraph's in-process client: Host "api", root path /noauth, no network involved
    result = await request(
        "GET",
        "/assistants/x",
        {"host": "api"},
        scope_extra={"root_path": "/noauth"},
    )
    assert result.status == 421  # without the option it is a foreign host like any other
    messages: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/assistants/x",
        "root_path": "/noauth",
        "headers": [(b"host", b"api")],
    }
    await middleware(scope, receive, send)
    assert exchange.app_called and messages[0]["status"] == 200
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    await GuardMiddleware(app, guard=Guard.serving("127.0.0.1", PORT))(
        {"type": "lifespan"}, receive, send
    )
    assert seen == ["lifespan"]


async def test_a_websocket_from_another_origin_is_closed() -> None:
    sent: list[dict[str, Any]] = []
    called: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        called.append(True)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    scope = {
        "type": "websocket",
        "path": "/ws",
        "headers": [(b"host", SERVED.encode()), (b"origin", b"http://evil.example")],
    }
    await GuardMiddleware(app, guard=Guard.serving("127.0.0.1", PORT))(scope, receive, send)
    assert sent[0]["type"] == "websocket.close" and not called


# ----------------------------------------------------------------------------- values


def test_sizes() -> None:
    assert parse_size("10MB") == DEFAULT_MAX_BODY
    assert parse_size("512KB") == parse_size("512k") == parse_size("512 KiB") == 512 * 1024
    assert parse_size("1048576") == parse_size("1mb") == 1024 * 1024
    assert parse_size("2G") == 2 * 1024**3
    for bad in ("", "0", "-1", "10XB", "1.5MB", "MB", "10 M B"):
        with pytest.raises(ValueError, match="expected a positive size such as 10MB"):
            parse_size(bad)


def test_origin_and_host_values() -> None:
    assert check_origin("http://localhost:5173") == "http://localhost:5173"
    assert Guard.serving(
        "127.0.0.1", 1, allow_origins=["HTTPS://App.Example:443/"]
    ).origin_texts() == ["https://app.example"]
    for bad, message in (
        ("*", "is not accepted"),
        ("null", "is not accepted"),
        ("localhost:5173", "expected an origin"),
        ("ftp://x.example", "expected an origin"),
        ("http://x.example/app", "without a path"),
        ("http://user@x.example", "without a path"),
        ("http://x.example:99999", "not a port"),
    ):
        with pytest.raises(ValueError, match=message):
            check_origin(bad)
    assert check_host("agents.example.com:8443") == "agents.example.com:8443"
    assert check_host("[::1]:80") == "[::1]:80"
    for bad in ("evil example", "a/b", "[::1", "host:port", "[nothost]", "x:0"):
        with pytest.raises(ValueError, match="expected a host name or IP address"):
            check_host(bad)
