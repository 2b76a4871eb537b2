"""`agentctl serve`'s authentication flags: the keys file's problems located, flag combinations
refused before anything starts, no unauthenticated server beyond loopback unless `--no-auth`
says so; and `runner.serve.auth.authenticate` as each engine calls it."""

from __future__ import annotations

import asyncio
import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

pytest.importorskip("langgraph_sdk")

KEY = "alice-secret-key-0123456789"
AGENT = "name: echo\ndescription: d\nmodel: replay:c.cassette.yaml\nprompt: p\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "c.cassette.yaml").write_text("- content: hi\n", encoding="utf-8")
    (tmp_path / "echo.yaml").write_text(AGENT, encoding="utf-8")
    (tmp_path / "keys.yaml").write_text(
        f'keys:\n  - {{user: alice, key: "{KEY}"}}\n', encoding="utf-8"
    )
    return tmp_path


def _serve(folder: Path, *args: str) -> Any:
    return run_cli("serve", "echo.yaml", "--port", "0", *args, cwd=folder, env={"DATABASE_URL": ""})


BAD_KEYS = """\
keys:
  - {user: alice, key: short}
  - {user: bob, sha256: 12ab}
  - {key: "a-key-without-a-user-000"}
  - {user: alice, key: "alice-second-key-000000"}
  - {user: carol, key: "a-key-without-a-user-000"}
  - {user: dave, sha256: "abc", key: "dave-key-00000000000000"}
  - {user: erin, token: x}
  - {user: frank}
  - just-text
  - {user: gina, sha256: 1234}
  - {user: hugo, key: "a key with spaces in it"}
other: 1
"""


def test_every_problem_of_the_keys_file_is_located_and_nothing_starts(folder: Path) -> None:
    (folder / "keys.yaml").write_text(BAD_KEYS, encoding="utf-8")
    done = _serve(folder, "--api-keys", "keys.yaml")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "keys.yaml:2:24: keys[0].key: too short (5 characters): a key needs at least 16; make "
        "one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
        "keys.yaml:3:25: keys[1].sha256: expected 64 hexadecimal digits "
        "(`printf %s KEY | sha256sum`)",
        "keys.yaml:4:5: keys[2]: missing `user`",
        "keys.yaml:5:12: keys[3].user: 'alice' already has a key, at keys[0]",
        "keys.yaml:6:5: keys[4]: the same key as keys[2]; give each user their own",
        "keys.yaml:7:5: keys[5]: give either `key` or `sha256`, not both",
        "keys.yaml:8:5: keys[6]: missing `key` (or `sha256`, its SHA-256 digest)",
        "keys.yaml:8:18: keys[6].token: unknown key; expected user, key or sha256",
        "keys.yaml:9:5: keys[7]: missing `key` (or `sha256`, its SHA-256 digest)",
        "keys.yaml:10:5: keys[8]: expected a mapping {user: NAME, key: KEY}",
        "keys.yaml:11:26: keys[9].sha256: quote the digest: YAML read it as a number",
        "keys.yaml:12:23: keys[10].key: a key travels in an HTTP header: use printable ASCII "
        "without spaces",
        "keys.yaml:13:1: other: unknown key; expected only `keys`",
    ]
    assert not (folder / ".langgraph_api").exists()


def test_a_key_and_its_digest_are_the_same_key(folder: Path) -> None:
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    (folder / "keys.yaml").write_text(
        f'keys:\n  - {{user: alice, key: "{KEY}"}}\n  - {{user: bob, sha256: "{digest}"}}\n',
        encoding="utf-8",
    )
    done = _serve(folder, "--api-keys", "keys.yaml")
    assert done.returncode == 2
    assert (
        done.stderr == "keys.yaml:3:5: keys[1]: the same key as keys[0]; give each user their own\n"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("keys: []\n", "keys.yaml:1:7: keys: expected a non-empty list of {user, key}"),
        ("", "keys.yaml:1:1: expected a mapping with `keys:`, a list of {user, key} entries"),
        ("keys:\n  - user: a\n    key: ${NO_SUCH_KEY_VAR}\n", "keys.yaml:3:10: keys[0].key: "),
    ],
    ids=["empty list", "empty file", "undefined variable"],
)
def test_a_keys_file_without_keys_is_refused(folder: Path, text: str, message: str) -> None:
    (folder / "keys.yaml").write_text(text, encoding="utf-8")
    done = _serve(folder, "--api-keys", "keys.yaml")
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_keys_file_is_named(folder: Path) -> None:
    done = _serve(folder, "--api-keys", "nowhere.yaml")
    assert (done.returncode, done.stderr) == (2, "nowhere.yaml: keys file not found\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "Error: refusing to serve on 0.0.0.0 without authentication: "),
        (
            ["--no-auth", "--api-keys", "keys.yaml", "--admin", "alice"],
            "Error: --no-auth cannot be used with --api-keys, --admin",
        ),
        (
            ["--auth-jwks", "https://id.example/jwks", "--auth-audience", "a"],
            "Error: --auth-jwks, --auth-audience needs --auth-issuer too",
        ),
        (["--admin", "alice"], "Error: --admin needs users: give --api-keys or --auth-jwks"),
        (
            ["--api-keys", "keys.yaml", "--admin", "bob"],
            "Error: Invalid value for --admin: 'bob' has no key in keys.yaml",
        ),
        (
            ["--auth-jwks", "http://id.example/jwks", "--auth-issuer", "i", "--auth-audience", "a"],
            "Error: Invalid value for --auth-jwks: expected an https:// URL (http:// on loopback "
            "only), found 'http://id.example/jwks'",
        ),
    ],
    ids=["open beyond loopback", "no-auth with auth", "half oidc", "admin alone", "admin", "http"],
)
def test_flags_that_would_leave_the_server_open_are_refused(
    folder: Path, args: list[str], message: str
) -> None:
    done = _serve(folder, *args)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith(message), done.stderr
    assert not (folder / ".langgraph_api").exists()


def test_the_refusal_beyond_loopback_says_what_to_do(folder: Path) -> None:
    done = _serve(folder, "--host", "0.0.0.0")
    assert done.stderr.splitlines()[-1] == (
        "Error: refusing to serve on 0.0.0.0 without authentication: anyone who can reach it "
        "could run every agent and read every thread. Give --api-keys FILE (or --auth-jwks URL "
        "--auth-issuer ISS --auth-audience AUD), or --no-auth if the network in front of it "
        "does the checking."
    )


def test_a_key_set_that_cannot_be_fetched_stops_the_start(folder: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/jwks.json"
    done = _serve(folder, "--auth-jwks", url, "--auth-issuer", "i", "--auth-audience", "a")
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"error: --auth-jwks {url}: cannot use the provider's key set: "
    ), done.stderr


@pytest.mark.slow
def test_no_auth_serves_beyond_loopback_when_asked_and_says_so(folder: Path) -> None:
    from tests.serve import servers

    with servers.serving(
        [folder / "echo.yaml"],
        cwd=folder,
        args=["--host", "0.0.0.0", "--no-auth"],
        log=folder / "s.log",
    ) as server:
        import urllib.request

        with urllib.request.urlopen(f"{server.url}/web/api/agents", timeout=30) as reply:
            assert reply.status == 200
    assert "no authentication: anyone who reaches this address may use it" in server.output()


# --------------------------------------------------------------------------- authenticate


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from runner.serve import auth

    digest = hashlib.sha256(KEY.encode()).digest()
    monkeypatch.delenv(auth.ENV_VAR, raising=False)
    auth.publish(
        auth.AuthSettings(
            keys=(("alice", digest), ("bob", hashlib.sha256(b"b" * 20).digest())),
            admins=frozenset({"alice"}),
        )
    )
    yield auth
    auth._settings.cache_clear()


@pytest.mark.parametrize(
    "headers",
    [
        {b"x-api-key": KEY.encode()},  # the in-memory engine: bytes
        {"x-api-key": KEY},  # Aegra: text
        {b"authorization": f"Bearer {KEY}".encode()},
        {"authorization": f"bearer  {KEY} "},
    ],
    ids=["inmem x-api-key", "aegra x-api-key", "inmem bearer", "aegra bearer"],
)
def test_authenticate_takes_the_headers_as_either_engine_passes_them(
    published: Any, headers: dict[Any, Any]
) -> None:
    user = asyncio.run(published.authenticate(headers))
    assert user == {
        "identity": "alice",
        "display_name": "alice",
        "is_authenticated": True,
        "permissions": ["admin"],
    }


def test_only_admins_carry_the_admin_permission(published: Any) -> None:
    user = asyncio.run(published.authenticate({"x-api-key": "b" * 20}))
    assert (user["identity"], user["permissions"]) == ("bob", [])


def test_authenticate_lets_nobody_in_without_settings(
    published: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_sdk import Auth

    monkeypatch.delenv(published.ENV_VAR)
    published._settings.cache_clear()
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        asyncio.run(published.authenticate({"x-api-key": KEY}))
    assert refused.value.status_code == 401


def test_the_environment_holds_digests_not_keys(published: Any) -> None:
    import os

    assert KEY not in os.environ[published.ENV_VAR]
    assert hashlib.sha256(KEY.encode()).hexdigest() in os.environ[published.ENV_VAR]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.10", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    from runner.serve.auth import is_loopback

    assert is_loopback(host) is loopback
