"""Shared fixtures. Tests never use the network or a live model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Real PostgreSQL and Redis for the tests that need them (see tests/services.py).
from tests.services import postgres_server, postgres_url, redis_server, redis_url  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"


@pytest.fixture
def repo_root() -> Path:
    return ROOT


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `agentctl ARGS` in a fresh process (as a user would), capturing its output."""
    full_env = {**os.environ, "AGENTCTL_HOME": str(cwd or ROOT), **(env or {})}
    full_env.pop("AGENTCTL_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=cwd or ROOT,
        env=full_env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
