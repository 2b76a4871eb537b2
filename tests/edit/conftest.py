"""The editor's routes served as `agentctl serve --edit` serves them: inside the page's app
(`runner.web.app.create_app`), behind its authentication when there are users."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from runner.edit import AgentsFolder, edit_routes
from runner.edit.newagent import new_agent_files
from runner.edit.trying import TryRuns
from runner.web.app import create_app

KEYS = {"admin-key": "ada", "user-key": "bob"}
"""The server's users: ada is an admin (`--admin ada`), bob is not."""


def served(folder: Path, runs: TryRuns, *, edit: bool = True, users: bool = False) -> TestClient:
    """The page's app with the editor of `folder`; with `users`, behind the engines' own
    authentication (`runner.serve.auth`) with KEYS published as serve publishes them."""
    check: Any = None
    if users:
        from runner.serve.auth import AuthSettings, authenticate, publish

        check = authenticate
        keys = tuple((user, hashlib.sha256(key.encode()).digest()) for key, user in KEYS.items())
        publish(AuthSettings(keys=keys, admins=frozenset({"ada"})))
    pages: list[Any] = []
    api: list[Any] = []
    if edit:
        pages, api = edit_routes(AgentsFolder(folder), authenticated=users, runs=runs)
    app = create_app(
        [],
        graph_for=lambda path: None,
        authenticate=check,
        routes=pages,
        api_routes=api,
    )
    return TestClient(app)


@pytest.fixture(autouse=True)
def _unpublished(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Auth settings a test publishes go with it."""
    from runner.serve.auth import ENV_VAR, _settings

    monkeypatch.delenv(ENV_VAR, raising=False)
    yield
    os.environ.pop(ENV_VAR, None)
    _settings.cache_clear()


@pytest.fixture
def runs() -> Iterator[TryRuns]:
    tries = TryRuns()
    yield tries
    tries.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A served agents folder holding a new agent `planner` (the starter of `agentctl init`)."""
    root = tmp_path / "agents"
    for relative, text in new_agent_files(root, "planner").items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def client(folder: Path, runs: TryRuns) -> TestClient:
    return served(folder, runs)
