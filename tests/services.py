"""Real PostgreSQL and Redis servers for the tests that need them.

Where the servers come from, in order:

1. `$AGENTCTL_TEST_PG` (a `postgresql://` URL of a server where databases may be created) and
   `$AGENTCTL_TEST_REDIS` (a `redis://` URL);
2. the servers on 127.0.0.1:5432 (user `postgres`, trust auth) and 127.0.0.1:6379, when they
   answer;
3. private servers started for this test session from Debian's binaries (`scripts/setup dev`
   installs `postgresql` and `redis-server` when missing), in a temporary folder, on free ports,
   stopped at the end.

If none of these is possible the tests that need a server are skipped, saying why.

Fixtures (use them by importing into a conftest or test module):

- `postgres_server`: the admin URL of the server (session scope);
- `postgres_url`: the URL of a fresh, empty database of its own for one test, dropped after it
  (`fresh_database(server)` makes one for a fixture of a wider scope);
- `redis_server`: the server's URL (session scope);
- `redis_url`: a URL of a logical database of its own for one test (one per xdist worker, 1-15),
  emptied before the test.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def _answers(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), 1):
            return True
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(url: str, proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _answers(url):
            return
        time.sleep(0.1)
    detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RuntimeError(f"the private {what} server did not start:\n{detail}")


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)
    return str(candidates[0]) if candidates else None


@contextlib.contextmanager
def _private_postgres() -> Iterator[str]:
    initdb, postgres = _pg_bin("initdb"), _pg_bin("postgres")
    if not initdb or not postgres:
        pytest.skip(
            "no PostgreSQL server answers and PostgreSQL is not installed (scripts/setup dev)"
        )
    folder = Path(tempfile.mkdtemp(prefix="agentctl-pg-"))
    # PostgreSQL refuses to run as root: run it as the `postgres` user when we are root.
    run_as: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("cannot start a private PostgreSQL as root without runuser")
        run_as = [runuser, "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data = folder / "data"
    log = folder / "log"
    port = _free_port()
    subprocess.run(
        [*run_as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
        check=True,
        capture_output=True,
    )
    with log.open("wb") as out:
        settings = ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]
        proc = subprocess.Popen(
            [*run_as, postgres, "-D", str(data), "-p", str(port), "-k", str(folder), *settings],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        _wait_for(url, proc, "PostgreSQL", log)
        time.sleep(0.5)  # accepting connections before it finishes recovery is possible
        yield url
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _private_redis() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if not binary:
        pytest.skip("no Redis server answers and redis-server is not installed (scripts/setup dev)")
    folder = Path(tempfile.mkdtemp(prefix="agentctl-redis-"))
    port = _free_port()
    log = folder / "log"
    with log.open("wb") as out:
        settings = ["--save", "", "--appendonly", "no", "--dir", str(folder)]
        proc = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(port), *settings],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait_for(url, proc, "Redis", log)
        yield url
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The admin URL of a PostgreSQL server where test databases may be created."""
    given = os.environ.get("AGENTCTL_TEST_PG")
    if given:
        yield given
    elif _answers(DEFAULT_PG):
        yield DEFAULT_PG
    else:
        with _private_postgres() as url:
            yield url


@contextlib.contextmanager
def fresh_database(server: str) -> Iterator[str]:
    """The URL of a new, empty database on `server`, dropped at the end (for fixtures of a
    wider scope than `postgres_url`)."""
    psycopg = pytest.importorskip("psycopg")
    name = f"agentctl_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(server)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh database for this test alone (dropped after it)."""
    with fresh_database(postgres_server) as url:
        yield url


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """The URL of a Redis server."""
    given = os.environ.get("AGENTCTL_TEST_REDIS")
    if given:
        yield given
    elif _answers(DEFAULT_REDIS):
        yield DEFAULT_REDIS
    else:
        with _private_redis() as url:
            yield url


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    digits = "".join(ch for ch in worker if ch.isdigit())
    return int(digits or 0)


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """A logical database of this test's own (one per xdist worker, 1-15), emptied first."""
    redis = pytest.importorskip("redis")
    parts = urlsplit(redis_server)
    url = urlunsplit(parts._replace(path=f"/{1 + _worker_index() % 15}"))
    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()
    return url
