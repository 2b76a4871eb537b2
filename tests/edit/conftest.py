"""The editor's routes served as `agentctl serve --edit` serves them: inside the page's app
(`runner.web.app.create_app`), behind its authentication when there are users."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from runner.edit import AgentsFolder, edit_routes
from runner.edit.trying import TryRuns
from runner.starter import plan_starter, write_starter
from runner.web.app import create_app

KEYS = {"admin-key": "ada", "user-key": "bob"}


async def authenticate(headers: Any) -> dict[str, Any]:
    """The engines' hook as `runner.serve.auth` answers it: ada is an admin, bob is not."""
    from langgraph_sdk import Auth

    from runner.serve.auth import ADMIN

    key = headers.get(b"x-api-key", b"").decode()
    if key not in KEYS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="no")
    user = KEYS[key]
    return {"identity": user, "permissions": [ADMIN] if user == "ada" else []}


def served(folder: Path, runs: TryRuns, *, edit: bool = True, users: bool = False) -> TestClient:
    pages: list[Any] = []
    api: list[Any] = []
    if edit:
        pages, api = edit_routes(AgentsFolder(folder), authenticated=users, runs=runs)
    app = create_app(
        [],
        graph_for=lambda path: None,
        authenticate=authenticate if users else None,
        routes=pages,
        api_routes=api,
    )
    return TestClient(app)


@pytest.fixture
def runs() -> Iterator[TryRuns]:
    tries = TryRuns()
    yield tries
    tries.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A served agents folder holding `agentctl init`'s starter in `planner/`."""
    root = tmp_path / "agents"
    write_starter(plan_starter(root / "planner", name="planner"))
    return root


@pytest.fixture
def client(folder: Path, runs: TryRuns) -> TestClient:
    return served(folder, runs)
