"""Who may use `agentctl serve`: API keys (`--api-keys FILE`) and OpenID Connect bearer tokens
(`--auth-jwks URL --auth-issuer ISS --auth-audience AUD`), checked by the engines themselves.

Both engines (the in-memory LangGraph server and Aegra) load a LangGraph `Auth` object by import
path and call its `@auth.authenticate` handler on every API request: `auth` below is that object,
so authentication is the engine's own, not a layer in front of it. The page's side API
(`runner.web.app`) calls the same `authenticate` function. Handlers that decide what a user may
see (`@auth.on...`) are registered on the same object by other modules.

The engine imports this module by name, so it learns the settings from the environment:
`publish(settings)` puts them in `AGENTCTL_AUTH` as JSON, with every key as its SHA-256 digest
(no secret is in the environment; a presented key is hashed and compared in constant time).

Every refusal is the same 401 with the same body, whatever was wrong (no credential, unknown
key, bad signature, wrong issuer, expired token), so a client learns nothing about who exists.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_sdk import Auth

from runner.errors import Problem, RunError, SpecError
from runner.serve import ownership

__all__ = [
    "ADMIN",
    "AUTH_PATH",
    "ENV_VAR",
    "AuthSettings",
    "JwtSettings",
    "auth",
    "authenticate",
    "is_loopback",
    "publish",
    "read_keys_file",
]

ENV_VAR = "AGENTCTL_AUTH"
"""The environment variable the settings travel in (JSON; keys as SHA-256 digests only)."""

AUTH_PATH = "runner.serve.auth:auth"
"""The import path the engines load `auth` by (their `auth.path` setting)."""

ADMIN = ownership.ADMIN
"""The permission of a user named by `--admin`: ownership handlers let such a user see all."""

UNAUTHORIZED = (
    "authentication required: send a valid API key (x-api-key header) "
    "or bearer token (Authorization: Bearer ...)"
)
"""The one body of every refusal."""

MIN_KEY_LENGTH = 16
"""A key shorter than this could be guessed; the keys file refuses it."""

ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""The only signatures a token may carry: public-key ones (no `none`, no HMAC, whose secret
would be the public key an attacker can read from the JWKS)."""

CLOCK_SKEW_SECONDS = 30
"""Leeway on `exp` (and `nbf`, `iat`) for clocks that differ a little from the provider's."""

JWKS_CACHE_SECONDS = 300
"""How long the provider's key set is kept before it is fetched again (an unknown `kid` fetches
it at once, at most every 30 seconds, so rotated keys are picked up)."""

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JwtSettings:
    """Where the OpenID provider's signing keys are and what a token must say."""

    jwks_url: str
    issuer: str
    audience: str


@dataclass(frozen=True)
class AuthSettings:
    """Who may come in: `keys` as (user, SHA-256 digest of the key), tokens as `jwt` says;
    `admins` get the `ADMIN` permission."""

    keys: tuple[tuple[str, bytes], ...] = ()
    jwt: JwtSettings | None = None
    admins: frozenset[str] = field(default_factory=frozenset)

    def to_json(self) -> str:
        return json.dumps(
            {
                "keys": [{"user": user, "sha256": digest.hex()} for user, digest in self.keys],
                "jwt": None if self.jwt is None else vars(self.jwt),
                "admins": sorted(self.admins),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> AuthSettings:
        data = json.loads(text)
        jwt = data.get("jwt")
        return cls(
            keys=tuple((k["user"], bytes.fromhex(k["sha256"])) for k in data.get("keys", [])),
            jwt=JwtSettings(**jwt) if jwt else None,
            admins=frozenset(data.get("admins", [])),
        )


def publish(settings: AuthSettings) -> None:
    """Make `settings` the ones `authenticate` uses, in this process and the engine's."""
    os.environ[ENV_VAR] = settings.to_json()
    _settings.cache_clear()
    _jwks_client.cache_clear()


@functools.cache
def _settings() -> AuthSettings | None:
    text = os.environ.get(ENV_VAR)
    return AuthSettings.from_json(text) if text else None


# --------------------------------------------------------------------------- the keys file


def read_keys_file(path: str | Path) -> tuple[tuple[str, bytes], ...]:
    """The (user, SHA-256 digest) pairs of a keys file:

        keys:
          - {user: alice, key: "${ALICE_KEY}"}
          - {user: bob, sha256: 9f86d081...}

    Every problem is located (SpecError): a missing or unknown field, bad hex, a short key, a
    user or key given twice, no key at all."""
    from runner.errors import display_path
    from runner.load.problems import read_yaml_file
    from runner.load.source import SourceMap

    shown = display_path(path)
    doc = read_yaml_file(
        Path(path), shown, missing="keys file not found", unreadable="cannot read the keys file"
    )
    smap = SourceMap(doc.pos)
    value = doc.value
    if not isinstance(value, dict) or "keys" not in value:
        raise SpecError(
            smap.problem((), "expected a mapping with `keys:`, a list of {user, key} entries")
        )
    problems = [
        smap.problem((name,), "unknown key; expected only `keys`", at_key=True)
        for name in value
        if name != "keys"
    ]
    entries = value["keys"]
    if not isinstance(entries, list) or not entries:
        problems.append(smap.problem(("keys",), "expected a non-empty list of {user, key}"))
        raise SpecError(problems)
    keys: list[tuple[str, bytes]] = []
    first_user: dict[str, int] = {}
    first_key: dict[bytes, int] = {}
    for index, entry in enumerate(entries):
        at: tuple[str | int, ...] = ("keys", index)
        user, digest = _key_entry(entry, at, smap, problems)
        if user is not None:
            if user in first_user:
                problems.append(
                    smap.problem(
                        (*at, "user"), f"{user!r} already has a key, at keys[{first_user[user]}]"
                    )
                )
            first_user.setdefault(user, index)
        if digest is not None:
            if digest in first_key:
                problems.append(
                    smap.problem(
                        at, f"the same key as keys[{first_key[digest]}]; give each user their own"
                    )
                )
            first_key.setdefault(digest, index)
        if user is not None and digest is not None:
            keys.append((user, digest))
    if problems:
        raise SpecError(sorted(problems))
    return tuple(keys)


def _key_entry(
    entry: Any, at: tuple[str | int, ...], smap: Any, problems: list[Problem]
) -> tuple[str | None, bytes | None]:
    """(user, digest) of one entry of `keys:`, each None when wrong (its problem added)."""
    if not isinstance(entry, dict):
        problems.append(smap.problem(at, "expected a mapping {user: NAME, key: KEY}"))
        return None, None
    for name in entry:
        if name not in ("user", "key", "sha256"):
            problems.append(
                smap.problem((*at, name), "unknown key; expected user, key or sha256", at_key=True)
            )
    user = entry.get("user")
    if user is None:
        problems.append(smap.problem(at, "missing `user`"))
    elif not isinstance(user, str) or not user.strip():
        problems.append(smap.problem((*at, "user"), "expected a user name (text)"))
    digest: bytes | None = None
    if "key" in entry and "sha256" in entry:
        problems.append(smap.problem(at, "give either `key` or `sha256`, not both"))
    elif "key" in entry:
        key = entry["key"]
        if not isinstance(key, str):
            problems.append(smap.problem((*at, "key"), "expected the key as text"))
        elif len(key) < MIN_KEY_LENGTH:
            problems.append(
                smap.problem(
                    (*at, "key"),
                    f"too short ({len(key)} characters): a key needs at least "
                    f"{MIN_KEY_LENGTH}; make one with "
                    "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
                )
            )
        elif not _HEADER_SAFE.fullmatch(key):
            problems.append(
                smap.problem(
                    (*at, "key"),
                    "a key travels in an HTTP header: use printable ASCII without spaces",
                )
            )
        else:
            digest = hashlib.sha256(key.encode()).digest()
    elif "sha256" in entry:
        hexed = entry["sha256"]
        if isinstance(hexed, int | float):
            problems.append(
                smap.problem((*at, "sha256"), "quote the digest: YAML read it as a number")
            )
        elif not isinstance(hexed, str) or not _SHA256.fullmatch(hexed):
            problems.append(
                smap.problem(
                    (*at, "sha256"),
                    "expected 64 hexadecimal digits (`printf %s KEY | sha256sum`)",
                )
            )
        else:
            digest = bytes.fromhex(hexed)
    else:
        problems.append(smap.problem(at, "missing `key` (or `sha256`, its SHA-256 digest)"))
    return (user if isinstance(user, str) and user.strip() else None), digest


# --------------------------------------------------------------------------- authentication

auth = Auth()


@auth.authenticate
async def authenticate(headers: Mapping[Any, Any]) -> Auth.types.MinimalUserDict:
    """The user a request's headers prove, or a 401. `headers` as either engine passes them: the
    in-memory one as {bytes: bytes}, Aegra as {str: str}, names in lower case."""
    settings = _settings()
    if settings is None:  # the engine loaded us without settings: let nobody in
        logger.error("authentication is on but %s is not set: refusing every request", ENV_VAR)
        raise _refused()
    api_key = _header(headers, "x-api-key")
    bearer = _bearer(_header(headers, "authorization"))
    # Any valid credential is enough: clients may send a stray x-api-key from the environment
    # (langgraph-sdk sends $LANGSMITH_API_KEY) beside a valid bearer token.
    for presented in (api_key, bearer):
        if presented and (user := _key_user(settings, presented)) is not None:
            return _user(settings, user)
    if settings.jwt is not None and bearer:
        subject = await _token_subject(settings.jwt, bearer)
        if subject is not None:
            return _user(settings, subject)
    raise _refused()


def _register_ownership() -> None:
    from runner.serve.ownership import register

    register(auth)


_register_ownership()  # what each user may see: runner.serve.ownership


def _refused() -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(
        status_code=401, detail=UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"}
    )


def _user(settings: AuthSettings, identity: str) -> Auth.types.MinimalUserDict:
    return {
        "identity": identity,
        "display_name": identity,
        "is_authenticated": True,
        "permissions": [ADMIN] if identity in settings.admins else [],
    }


def _header(headers: Mapping[Any, Any], name: str) -> str | None:
    value = headers.get(name, headers.get(name.encode()))
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return value.strip() if isinstance(value, str) else None


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, credential = authorization.partition(" ")
    return credential.strip() or None if scheme.lower() == "bearer" else None


def _key_user(settings: AuthSettings, presented: str) -> str | None:
    """The user whose key `presented` is. Digests are compared in constant time, and every key
    is compared, so the time taken says nothing about which key came close."""
    digest = hashlib.sha256(presented.encode()).digest()
    found = None
    for user, stored in settings.keys:
        if hmac.compare_digest(digest, stored):
            found = user
    return found


@functools.cache
def _jwks_client(url: str) -> Any:
    import jwt

    return jwt.PyJWKClient(url, cache_keys=True, lifespan=JWKS_CACHE_SECONDS, timeout=10)


async def _token_subject(settings: JwtSettings, token: str) -> str | None:
    """The `sub` of a token the provider signed for this server, or None (the reason logged)."""
    import jwt

    try:
        # The key set is fetched (and cached) with blocking I/O: off the event loop.
        signing = await asyncio.to_thread(
            _jwks_client(settings.jwks_url).get_signing_key_from_jwt, token
        )
        if signing.algorithm_name not in ASYMMETRIC_ALGORITHMS:
            raise jwt.InvalidAlgorithmError(
                f"the provider's key {signing.key_id} is not a public key "
                f"({signing.algorithm_name})"
            )
        claims = jwt.decode(
            token,
            signing.key,
            algorithms=[signing.algorithm_name],
            issuer=settings.issuer,
            audience=settings.audience,
            leeway=CLOCK_SKEW_SECONDS,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.PyJWTError as exc:
        logger.info("bearer token refused: %s", exc)
        return None
    subject = claims.get("sub")
    return subject if isinstance(subject, str) and subject else None


def check_jwks(url: str) -> None:
    """Fail now, saying why, when the provider's key set cannot be fetched or has no key."""
    import jwt

    try:
        _jwks_client(url).get_signing_keys()
    except jwt.PyJWTError as exc:
        raise RunError(f"--auth-jwks {url}: cannot use the provider's key set: {exc}") from None


# --------------------------------------------------------------------------- where we listen


def is_loopback(host: str) -> bool:
    """Whether `host` reaches only this machine (`127.0.0.1`, `::1`, `localhost`, a name that
    resolves to loopback addresses only)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addresses = {info[4][0] for info in found}
    return bool(addresses) and all(
        ipaddress.ip_address(str(a).split("%", 1)[0]).is_loopback for a in addresses
    )
