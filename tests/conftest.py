"""Shared fixtures. Tests never use the network or a live model."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Real PostgreSQL and Redis for the tests that need them (see tests/services.py).
from tests.services import postgres_server, postgres_url, redis_server, redis_url  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"


@pytest.fixture(autouse=True, scope="session")
def _private_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """In-process runs keep what they write under `$AGENTCTL_HOME` (the MCP tool names they
    list, a default thread database) out of the user's `~/.agentctl`."""
    os.environ.setdefault("AGENTCTL_HOME", str(tmp_path_factory.mktemp("agentctl-home")))


@pytest.fixture
def repo_root() -> Path:
    return ROOT


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `agentctl ARGS` as a user would, capturing its exit code and output.

    In this process by default: the program's own entry point (`runner.cli.main`) with the
    working directory, environment and standard streams it would have as a child (stdin holds
    `input`, or nothing; stdout and stderr are pipes, not terminals), all put back afterwards.
    That is the same code a child runs without a second interpreter's start-up, about a second
    per call. `process=True` starts a real `python -m runner` (as `agentctl` does), for tests
    where the process boundary is the point: exit after a signal, the program's imports, the
    entry point itself.
    """
    full_env = {"AGENTCTL_HOME": str(cwd or ROOT), **(env or {})}
    if process:
        child_env = {**os.environ, **full_env}
        child_env.pop("AGENTCTL_DEBUG", None)
        return subprocess.run(
            [sys.executable, "-m", "runner", *args],
            cwd=cwd or ROOT,
            env=child_env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    from tests.inprocess import run_main

    code, out, err = run_main(
        list(args), cwd=cwd or ROOT, env=full_env, stdin=input or "", timeout=timeout
    )
    return subprocess.CompletedProcess(["agentctl", *args], code, out, err)


def last_line_of(code: str, cwd: Path = ROOT) -> str:
    """The last line `python -c CODE` prints: a fresh interpreter, for what a process imports or
    builds on its own."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True
    )
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def tracker(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example issue tracker on a free port of 127.0.0.1, named by ISSUES_API."""
    import importlib.util

    found = importlib.util.spec_from_file_location(
        "issues_api_server", AGENTS / "issues_api" / "server.py"
    )
    assert found is not None and found.loader is not None
    server = importlib.util.module_from_spec(found)
    found.loader.exec_module(server)
    running = server.serve(0, token="demo-token")
    monkeypatch.setenv("ISSUES_API", running.url)
    monkeypatch.delenv("ISSUES_TOKEN", raising=False)
    yield running.url
    running.shutdown()
    running.server_close()
