"""Who may use `agentctl serve`, attacked through `langgraph-sdk` on both engines: one server per
engine serves API keys (plain and `sha256:`) and OpenID Connect tokens signed in the test, whose
key set a tiny HTTP server on loopback publishes.

Every refusal (no credential, a wrong key, a key's digest, a forged, expired, unsigned or
HMAC-signed token, a token for another issuer or audience) must be the same 401 with the same
body; every accepted request must run as the user the credential names."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import json
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serve import servers

sdk = pytest.importorskip("langgraph_sdk")
jwt = pytest.importorskip("jwt")
pytest.importorskip("cryptography")

from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: E402
from langgraph_sdk.errors import APIStatusError, AuthenticationError  # noqa: E402

pytestmark = pytest.mark.slow

ALICE_KEY = "alice-key-" + "a" * 24
BOB_KEY = "bob-key-" + "b" * 24
ISSUER = "https://login.example.test/"
AUDIENCE = "agentctl-test"

AGENT = """\
name: echo
description: Says hello
model: replay:echo.cassette.yaml
prompt: You say hello.
"""


# --------------------------------------------------------------------------- the provider


@dataclass
class Provider:
    """An OpenID provider's signing keys, published at `jwks_url`."""

    jwks_url: str
    rsa: Any
    ec: Any

    def token(
        self,
        sub: str = "dana",
        *,
        key: str = "rsa",
        iss: str = ISSUER,
        aud: str = AUDIENCE,
        expires_in: int = 600,
        **extra: Any,
    ) -> str:
        claims = {"sub": sub, "iss": iss, "aud": aud, "exp": int(time.time()) + expires_in}
        claims.update(extra)
        if key == "rsa":
            return jwt.encode(claims, self.rsa, algorithm="RS256", headers={"kid": "rsa-1"})
        return jwt.encode(claims, self.ec, algorithm="ES256", headers={"kid": "ec-1"})


def _jwk(public: Any, kid: str, alg: str) -> dict[str, Any]:
    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    algorithm = RSAAlgorithm if alg.startswith("RS") else ECAlgorithm
    return {**json.loads(algorithm.to_jwk(public)), "kid": kid, "alg": alg, "use": "sig"}


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    body = json.dumps(
        {
            "keys": [
                _jwk(rsa_key.public_key(), "rsa-1", "RS256"),
                _jwk(ec_key.public_key(), "ec-1", "ES256"),
            ]
        }
    ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Provider(f"http://127.0.0.1:{httpd.server_port}/jwks.json", rsa_key, ec_key)
    finally:
        httpd.shutdown()
        httpd.server_close()


# --------------------------------------------------------------------------- the servers


@dataclass
class Served:
    engine: str
    url: str
    health: str
    log: Path

    def client(self, api_key: str | None = None, **headers: str) -> Any:
        return sdk.get_sync_client(url=self.url, api_key=api_key, headers=headers or None)


def _folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "echo.yaml").write_text(AGENT, encoding="utf-8")
    (root / "echo.cassette.yaml").write_text("- content: hello\n", encoding="utf-8")
    bob_digest = hashlib.sha256(BOB_KEY.encode()).hexdigest()
    (root / "keys.yaml").write_text(
        "keys:\n"
        '  - {user: alice, key: "${ALICE_KEY}"}\n'
        f"  - {{user: bob, sha256: '{bob_digest}'}}\n",
        encoding="utf-8",
    )
    return root


ENGINES = servers.ENGINES


@pytest.fixture(scope="module", params=ENGINES)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, provider: Provider
) -> Iterator[Served]:
    engine = request.param
    folder = _folder(tmp_path_factory.mktemp(f"auth-{engine}"))
    args = [
        "--api-keys",
        "keys.yaml",
        "--auth-jwks",
        provider.jwks_url,
        "--auth-issuer",
        ISSUER,
        "--auth-audience",
        AUDIENCE,
        "--admin",
        "alice",
    ]
    with contextlib.ExitStack() as stack:
        if engine == "aegra":
            pytest.importorskip("aegra_api")
            from tests.services import fresh_database

            database = stack.enter_context(
                fresh_database(request.getfixturevalue("postgres_server"))
            )
            args += ["--db", database]
        server = stack.enter_context(
            servers.serving(
                [folder / "echo.yaml"],
                cwd=folder,
                args=args,
                env={"ALICE_KEY": ALICE_KEY},
                log=folder / "serve.log",
            )
        )
        yield Served(engine, server.url, "/ok" if engine == "inmem" else "/health", server.log)


def _refusal(client: Any) -> tuple[int, Any]:
    """(status, body) of the answer to a thread search by `client`."""
    try:
        client.threads.search()
    except APIStatusError as exc:
        return exc.response.status_code, exc.response.json()
    return 200, "let in"


def _runs_as(client: Any) -> str:
    """The user a run started by `client` ran as (the engines write it in each checkpoint)."""
    thread = client.threads.create()
    client.runs.wait(
        thread["thread_id"], "echo", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    state = client.threads.get_state(thread["thread_id"])
    return str(state["metadata"]["user_id"])


def _b64(data: dict[str, Any] | bytes) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _hmac_with_public_key(provider: Provider) -> str:
    """A token signed with HS256 whose secret is the provider's public key (PEM): accepted by a
    server that lets the token choose its algorithm and verifies with whatever key it has."""
    import hmac

    from cryptography.hazmat.primitives import serialization

    pem = provider.rsa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = _b64({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"})
    claims = _b64({"sub": "mallory", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600})
    signature = hmac.new(pem, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{_b64(signature)}"


def _unsigned(provider: Provider) -> str:
    header = _b64({"alg": "none", "typ": "JWT", "kid": "rsa-1"})
    claims = _b64({"sub": "mallory", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600})
    return f"{header}.{claims}."


def _forged(provider: Provider) -> str:
    """A well-formed token naming the provider's key, signed with another RSA key."""
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    claims = {"sub": "mallory", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600}
    return jwt.encode(claims, other, algorithm="RS256", headers={"kid": "rsa-1"})


def test_every_refusal_is_one_401_that_names_no_user(served: Served, provider: Provider) -> None:
    bob_digest = hashlib.sha256(BOB_KEY.encode()).hexdigest()
    bearer = {
        "a wrong key as a bearer token": "wrong-key-" + "x" * 24,
        "a token from another issuer": provider.token(iss="https://evil.example.test/"),
        "a token for another audience": provider.token(aud="another-app"),
        "an expired token": provider.token(expires_in=-3600),
        "a token signed by another key": _forged(provider),
        "an unsigned token (alg none)": _unsigned(provider),
        "a token HMAC-signed with the public key": _hmac_with_public_key(provider),
        "a token without a subject": jwt.encode(
            {"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600},
            provider.rsa,
            algorithm="RS256",
            headers={"kid": "rsa-1"},
        ),
    }
    clients = {
        "no credential": served.client(),
        "a wrong key": served.client("wrong-key-" + "x" * 24),
        "alice's key with a stray space inside": served.client(ALICE_KEY[:5] + " " + ALICE_KEY[5:]),
        "bob's key's digest, as the keys file holds it": served.client(bob_digest),
        "alice's key under the Basic scheme": served.client(Authorization=f"Basic {ALICE_KEY}"),
        "alice's key as a bare Authorization header": served.client(Authorization=ALICE_KEY),
        **{what: served.client(Authorization=f"Bearer {token}") for what, token in bearer.items()},
    }
    refusals = {what: _refusal(client) for what, client in clients.items()}
    first = refusals["no credential"]
    assert first[0] == 401
    assert "alice" not in json.dumps(first[1]) and "bob" not in json.dumps(first[1])
    assert {what: r for what, r in refusals.items() if r != first} == {}


def test_no_engine_warning_about_handlers_serve_chose_not_to_need(served: Served) -> None:
    # the in-memory engine warned at each start that assistants have no handler: they are
    # shared on purpose (docs/team-ownership.md)
    assert served.client(ALICE_KEY).assistants.search(graph_id="echo")
    logged = served.log.read_text(encoding="utf-8")
    assert "serving at" in logged
    assert "no handler registered" not in logged, logged


def test_the_dev_servers_studio_bypass_lets_nobody_in(served: Served) -> None:
    """The in-memory server trusts `x-auth-scheme: langsmith` as LangGraph Studio unless told
    not to: serve tells it not to."""
    status, _ = _refusal(served.client(**{"x-auth-scheme": "langsmith"}))
    assert status == 401


def test_each_key_runs_as_its_user(served: Served) -> None:
    assert _runs_as(served.client(ALICE_KEY)) == "alice"
    # bob's entry in the keys file is a sha256 digest: the key itself is only the client's.
    assert _runs_as(served.client(BOB_KEY)) == "bob"
    assert _runs_as(served.client(Authorization=f"Bearer {ALICE_KEY}")) == "alice"
    # A stray (wrong) x-api-key beside a valid bearer key, as langgraph-sdk sends when
    # LANGSMITH_API_KEY is set: the valid credential is enough.
    assert _runs_as(served.client("stray-" + "s" * 20, Authorization=f"Bearer {BOB_KEY}")) == "bob"


def test_a_token_from_the_provider_runs_as_its_subject(served: Served, provider: Provider) -> None:
    dana = served.client(Authorization=f"Bearer {provider.token('dana')}")
    assert dana.threads.search() is not None
    assert _runs_as(dana) == "dana"
    erin = served.client(Authorization=f"Bearer {provider.token('erin', key='ec')}")
    assert _runs_as(erin) == "erin"


def _status(call: Any, *args: Any, **kwargs: Any) -> int:
    """The HTTP status `call` ends with (200 when it returns)."""
    try:
        call(*args, **kwargs)
    except (APIStatusError, httpx.HTTPStatusError) as exc:
        return exc.response.status_code
    return 200


def test_token_users_and_key_users_cannot_reach_each_others_threads(
    served: Served, provider: Provider
) -> None:
    """Ownership holds for users the OpenID provider vouches for as for users with keys: each
    sees only their own threads, and another's thread is a 404 to read, continue or delete."""
    dana = served.client(Authorization=f"Bearer {provider.token('dana')}")
    erin = served.client(Authorization=f"Bearer {provider.token('erin', key='ec')}")
    bob = served.client(BOB_KEY)  # alice is this server's admin
    threads = {name: c.threads.create()["thread_id"] for name, c in (("dana", dana), ("bob", bob))}
    message = {"messages": [{"role": "user", "content": "hi"}]}
    for outsider, owner in ((erin, "dana"), (bob, "dana"), (dana, "bob")):
        thread = threads[owner]
        assert thread not in {t["thread_id"] for t in outsider.threads.search(limit=1000)}
        assert _status(outsider.threads.get, thread) == 404
        assert _status(outsider.threads.get_state, thread) == 404
        assert _status(outsider.runs.wait, thread, "echo", input=message) == 404
        assert _status(outsider.threads.delete, thread) == 404
    assert dana.threads.get(threads["dana"])["thread_id"] == threads["dana"]
    assert bob.threads.get(threads["bob"])["thread_id"] == threads["bob"]


def _get(url: str, **headers: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_side_api_needs_a_key_and_the_page_and_health_check_do_not(served: Served) -> None:
    status, body = _get(f"{served.url}/web/api/agents")
    assert status == 401
    assert "alice" not in body.decode()
    assert _get(f"{served.url}/web/api/agents", **{"x-api-key": "wrong-" + "w" * 20})[0] == 401
    status, body = _get(f"{served.url}/web/api/agents", **{"x-api-key": ALICE_KEY})
    assert status == 200
    assert [agent["name"] for agent in json.loads(body)["agents"]] == ["echo"]
    status, body = _get(f"{served.url}/web/api/agents", Authorization=f"Bearer {BOB_KEY}")
    assert status == 200
    assert _get(f"{served.url}/web/api/agents/echo/files", **{"x-api-key": "no"})[0] == 401
    assert _get(f"{served.url}/")[0] == 200
    assert _get(f"{served.url}/web/static/app.css")[0] == 200
    assert _get(f"{served.url}{served.health}")[0] == 200


def test_the_api_answers_nothing_about_threads_without_a_key(served: Served) -> None:
    thread = served.client(ALICE_KEY).threads.create()
    anonymous = served.client()
    for call in (
        lambda: anonymous.threads.get(thread["thread_id"]),
        lambda: anonymous.threads.get_state(thread["thread_id"]),
        lambda: anonymous.threads.delete(thread["thread_id"]),
        lambda: anonymous.runs.create(thread["thread_id"], "echo", input={"messages": []}),
        lambda: anonymous.assistants.search(),
        lambda: anonymous.store.search_items(("notes",)),
    ):
        with pytest.raises(AuthenticationError):
            call()
    found = served.client(ALICE_KEY).threads.get(thread["thread_id"])
    assert found["thread_id"] == thread["thread_id"]  # still there: the delete was refused


PUBLIC = {
    "inmem": {"GET /", "GET /ok", "GET /info", "GET /metrics", "GET /docs", "GET /openapi.json"},
    "aegra": {"GET /info", "GET /health", "GET /ready", "GET /live"},
}
"""What each engine answers without a key: health checks, its version, process metrics and the
API's description; nothing that holds a thread, a run or a user."""

HIDDEN = {
    "inmem": {
        "POST /internal/truncate",
        "GET /internal/debug/thread/{thread_id}",
        "GET /deploy",
        "POST /deploy",
        "GET /deploy/{operation_id}/stream",
    },
    "aegra": set(),
}
"""Routes the in-memory runtime adds for LangGraph's tests and Studio (empty every thread, read
any thread, run `langgraph deploy`), outside its authentication: serve answers 404."""


def test_every_route_the_engine_describes_needs_a_key_but_its_health_checks(
    served: Served,
) -> None:
    import re

    status, body = _get(f"{served.url}/openapi.json")
    assert status == 200
    answers: dict[int, set[str]] = {}
    for path, operations in json.loads(body)["paths"].items():
        for method in operations:
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            url = served.url + re.sub(r"\{[^}]+\}", str(uuid.uuid4()), path)
            request = urllib.request.Request(
                url,
                method=method.upper(),
                data=b"{}" if method in ("post", "put", "patch") else None,
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as reply:
                    code = reply.status
            except urllib.error.HTTPError as exc:
                code = exc.code
            answers.setdefault(code, set()).add(f"{method.upper()} {path}")
    assert len(answers.pop(401)) > 40
    assert answers.pop(404, set()) == HIDDEN[served.engine]
    assert answers == {200: PUBLIC[served.engine]}
