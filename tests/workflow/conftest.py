from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.log"
    path.touch()
    monkeypatch.setenv("WF_LOG", str(path))
    monkeypatch.setenv("WF_CRASH", str(tmp_path / "crash"))
    return path
