"""Browser safety of a real `agentctl serve`, on both engines (in memory, and Aegra on Postgres
with a Redis run queue): the attack from issue 29 and its variants, by raw HTTP and from pages
in a real browser (Debian's chromium, driven by Playwright).

One server per engine for the module, started with `--allow-host friendly.test`, one listed
origin (`--allow-origin`, a page on a loopback port of its own) and `--max-body 64KB`; an
attacker's page is served from another loopback port. The browser resolves `evil.test` and
`friendly.test` to 127.0.0.1, as DNS rebinding would make it resolve the attacker's name.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import select
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.serve import servers
from tests.serve.test_serve_contract import aegra_args

pytest.importorskip("langgraph_api")
sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

GREETER = "name: greeter\ndescription: Says hello\nmodel: replay:greeter.cassette.yaml\nprompt: p\n"
MAX_BODY = 64 * 1024
WAIT = 30_000  # ms: a wait limit for a loaded 2-core machine, not a measurement


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>another site</title><p>another site</p>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _site() -> Iterator[str]:
    """A web page of another origin, on a loopback port of its own."""
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    runner = threading.Thread(target=site.serve_forever, daemon=True)
    runner.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}"
    finally:
        site.shutdown()
        site.server_close()


@pytest.fixture(scope="module")
def sites() -> Iterator[tuple[str, str]]:
    """(the attacker's page, the listed front end's page)."""
    with _site() as evil, _site() as friend:
        yield evil, friend


@pytest.fixture(scope="module", params=["memory", "aegra"])
def server(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    sites: tuple[str, str],
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp(f"safety-{request.param}")
    (folder / "greeter.yaml").write_text(GREETER, encoding="utf-8")
    (folder / "greeter.cassette.yaml").write_text("- content: Hello there.\n", encoding="utf-8")
    args = ["--allow-host", "friendly.test", "--allow-origin", sites[1], "--max-body", "64KB"]
    log = folder / "serve.log"
    with contextlib.ExitStack() as stack:
        env: dict[str, str] = {}
        if request.param == "memory":
            args.append("--dev")
        else:
            engine_args, env = stack.enter_context(aegra_args(request))
            args += engine_args
        served = stack.enter_context(
            servers.serving([folder], cwd=folder, args=args, env=env, log=log)
        )
        yield served.url


@pytest.fixture(scope="module")
def port(server: str) -> int:
    return int(server.rsplit(":", 1)[1])


def _marked(client: Any, marker: str) -> list[Any]:
    return list(client.threads.search(metadata={"marker": marker}, limit=100))


def _no_star(response: httpx.Response) -> httpx.Response:
    assert response.headers.get("access-control-allow-origin") != "*", response.headers
    return response


# ----------------------------------------------------------------------------- raw HTTP


def test_the_attack_from_the_issue_is_refused_and_creates_nothing(server: str) -> None:
    client = sdk.get_sync_client(url=server)
    before = len(client.threads.search(limit=1000))
    curl = shutil.which("curl")
    command = [
        "-si",
        "-X",
        "POST",
        f"{server}/threads",
        "-H",
        "Origin: http://evil.example",
        "-H",
        "Host: evil.example",
        "-H",
        "Content-Type: text/plain",
        "-d",
        "{}",
    ]
    if curl:  # the issue's own command line
        answer = subprocess.run([curl, *command], capture_output=True, text=True, check=True)
        status_line = answer.stdout.splitlines()[0]
        assert status_line.split()[1] == "421", answer.stdout
        assert "access-control-allow-origin" not in answer.stdout.lower()
    # and its variants, one rule at a time
    for headers, status in (
        ({"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403),
        ({"Content-Type": "text/plain"}, 415),
        ({"Content-Type": "text/plain;charset=UTF-8"}, 415),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
        ({"Host": "evil.example"}, 421),
    ):
        reply = _no_star(httpx.post(f"{server}/threads", content=b"{}", headers=headers))
        assert reply.status_code == status, (headers, reply.text)
    assert len(client.threads.search(limit=1000)) == before


def test_a_rebinding_host_is_refused_on_every_route(server: str, port: int) -> None:
    for method, path in (
        ("GET", "/"),
        ("GET", "/web/api/agents"),
        ("GET", "/info"),
        ("POST", "/assistants/search"),
        ("POST", "/threads/search"),
        ("GET", "/web/static/js/app.js"),
    ):
        reply = httpx.request(
            method, f"{server}{path}", json={}, headers={"Host": f"evil.example:{port}"}
        )
        assert reply.status_code == 421, (path, reply.text)
        assert "--allow-host" in reply.json()["detail"]


def test_the_address_served_its_loopback_names_and_an_allowed_host_pass(
    server: str, port: int
) -> None:
    for host in (
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        "friendly.test",
        f"friendly.test:{port}",
    ):
        reply = httpx.post(f"{server}/assistants/search", json={}, headers={"Host": host})
        assert reply.status_code == 200, (host, reply.text)
        assert [a["graph_id"] for a in reply.json()] == ["greeter"]


def test_a_body_without_a_json_content_type_is_refused(server: str) -> None:
    # no Content-Type at all (a Blob body): what a cross-origin page may send without preflight
    with socket.create_connection(("127.0.0.1", int(server.rsplit(":", 1)[1]))) as sock:
        host = server.removeprefix("http://")
        sock.sendall(
            f"POST /threads HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2\r\n\r\n{{}}".encode()
        )
        assert _status(sock) == 415
    # the page's side API refuses the same way
    reply = httpx.post(
        f"{server}/web/api/agents", content=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert reply.status_code == 415


def _status(sock: socket.socket) -> int:
    sock.settimeout(60)
    head = b""
    while b"\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return int(head.split(b" ", 2)[1])


def test_a_body_announced_too_large_is_refused_before_it_is_sent(server: str) -> None:
    host = server.removeprefix("http://")
    with socket.create_connection(("127.0.0.1", int(host.rsplit(":", 1)[1]))) as sock:
        sock.sendall(
            (
                f"POST /threads HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {200 * 1024 * 1024}\r\n\r\n"
            ).encode()
        )  # 200 MB announced, not one byte of it sent: the answer comes anyway
        assert _status(sock) == 413


def test_a_chunked_body_is_refused_once_past_the_limit(server: str) -> None:
    host = server.removeprefix("http://")
    chunk = b"x" * 4096
    sent = 0
    with socket.create_connection(("127.0.0.1", int(host.rsplit(":", 1)[1]))) as sock:
        sock.sendall(
            (
                f"POST /threads HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n"
            ).encode()
        )
        # keep sending (up to 50 MB) until the server answers
        while sent < 50 * 1024 * 1024:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:  # it answered and closed while we were sending
                break
            sent += len(chunk)
        assert _status(sock) == 413
    assert sent < 50 * 1024 * 1024  # it answered before the body ended
    # a chunked body within the limit is read whole
    marker = uuid.uuid4().hex
    body = json.dumps({"metadata": {"marker": marker, "pad": "y" * 30_000}}).encode()

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    reply = httpx.post(
        f"{server}/threads", content=pieces(), headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 200, reply.text
    assert len(_marked(sdk.get_sync_client(url=server), marker)) == 1


def test_a_listed_origin_gets_its_cors_and_others_get_none(
    server: str, sites: tuple[str, str]
) -> None:
    evil, friend = sites
    preflight = httpx.options(
        f"{server}/threads/search",
        headers={
            "Origin": friend,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-api-key,authorization",
        },
    )
    assert preflight.status_code == 200, preflight.text
    assert preflight.headers["access-control-allow-origin"] == friend
    allowed = {h.strip() for h in preflight.headers["access-control-allow-headers"].split(",")}
    assert {"content-type", "x-api-key", "authorization"} <= allowed
    reply = httpx.post(f"{server}/threads/search", json={}, headers={"Origin": friend})
    assert reply.status_code == 200
    assert reply.headers["access-control-allow-origin"] == friend
    for origin in (evil, "http://evil.example", "null"):
        refused = _no_star(
            httpx.options(
                f"{server}/threads",
                headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
            )
        )
        assert refused.status_code == 403
        assert "access-control-allow-origin" not in refused.headers
    # the same origin (the page's) gets no CORS headers at all: it needs none
    same = httpx.post(f"{server}/threads/search", json={}, headers={"Origin": server})
    assert same.status_code == 200
    assert not [h for h in same.headers if h.startswith("access-control-")]


# ----------------------------------------------------------------------------- browser

try:
    from playwright import sync_api as playwright
except ImportError:  # the dev extra: the raw tests above still run
    playwright = None  # type: ignore[assignment]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if playwright is None:
        pytest.skip("playwright is in the dev extra")
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (scripts/setup dev installs it as root)")
    with playwright.sync_playwright() as p:
        # Debian's chromium, never a browser Playwright would download; the two names resolve
        # to this machine, as the attacker's name does after DNS rebinding.
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--host-resolver-rules=MAP evil.test 127.0.0.1, MAP friendly.test 127.0.0.1"],
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    context.set_default_timeout(WAIT)
    try:
        yield context.new_page()
    finally:
        context.close()


ATTEMPTS = """
async ({server, marker}) => {
  const body = JSON.stringify({metadata: {marker}});
  const tries = {
    "json": [`${server}/threads`, {method: "POST", headers: {"Content-Type": "application/json"}, body}],
    "json with credentials": [`${server}/threads`, {method: "POST", credentials: "include", headers: {"Content-Type": "application/json"}, body}],
    "text/plain": [`${server}/threads`, {method: "POST", body}],
    "text/plain with credentials": [`${server}/threads`, {method: "POST", credentials: "include", body}],
    "blob, no content type": [`${server}/threads`, {method: "POST", body: new Blob([body])}],
    "no-cors text/plain": [`${server}/threads`, {method: "POST", mode: "no-cors", credentials: "include", body}],
    "no-cors form": [`${server}/threads`, {method: "POST", mode: "no-cors", body: new URLSearchParams({a: body})}],
    "read threads": [`${server}/threads/search`, {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"}],
    "read the side API": [`${server}/web/api/agents`, {}],
    "read the side API with credentials": [`${server}/web/api/agents`, {credentials: "include"}],
    "read the side API, no-cors": [`${server}/web/api/agents`, {mode: "no-cors"}],
  };
  const outcome = {};
  for (const [name, [url, init]] of Object.entries(tries)) {
    try {
      const response = await fetch(url, init);
      outcome[name] = response.type === "opaque" ? "opaque" : `read ${response.status}`;
    } catch (error) {
      outcome[name] = "refused";
    }
  }
  return outcome;
}
"""


def test_a_page_of_another_origin_is_refused_whatever_it_sends(
    page: Any, server: str, sites: tuple[str, str]
) -> None:
    evil, _ = sites
    marker = uuid.uuid4().hex
    page.goto(evil)
    outcome = page.evaluate(ATTEMPTS, {"server": server, "marker": marker})
    # nothing readable; the requests a browser sends anyway (no-cors) get an answer the page
    # cannot see, and the server refused them: no thread was made
    assert all(result in ("refused", "opaque") for result in outcome.values()), outcome
    assert outcome["no-cors text/plain"] == "opaque"
    assert _marked(sdk.get_sync_client(url=server), marker) == []


def test_a_page_under_a_rebound_name_gets_nothing(page: Any, port: int, server: str) -> None:
    # the attacker's name now resolves to this machine: the page and the API are refused
    answer = page.goto(f"http://evil.test:{port}/")
    assert answer is not None and answer.status == 421
    marker = uuid.uuid4().hex
    outcome = page.evaluate(ATTEMPTS, {"server": f"http://evil.test:{port}", "marker": marker})
    assert not [r for r in outcome.values() if r.startswith("read 2")], outcome
    assert _marked(sdk.get_sync_client(url=server), marker) == []


def test_the_listed_origin_may_call_the_api_from_the_browser(
    page: Any, server: str, sites: tuple[str, str]
) -> None:
    _, friend = sites
    page.goto(friend)
    found = page.evaluate(
        """async (server) => {
          const reply = await fetch(`${server}/assistants/search`, {
            method: "POST", credentials: "include",
            headers: {"Content-Type": "application/json", "x-api-key": "k", "Authorization": "Bearer k"},
            body: "{}",
          });
          return [reply.status, (await reply.json()).map((a) => a.graph_id)];
        }""",
        server,
    )
    assert found == [200, ["greeter"]]


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "friendly.test"])
def test_the_served_page_still_works(page: Any, port: int, name: str) -> None:
    page.goto(f"http://{name}:{port}/")
    page.click('#agents .agent[data-agent="greeter"]')
    page.click("#new-thread")
    page.fill("#message", "hi")
    page.press("#message", "Enter")
    playwright.expect(page.locator("#log .msg.ai").first).to_contain_text(
        "Hello there.", timeout=WAIT
    )
