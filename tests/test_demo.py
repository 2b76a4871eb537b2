"""`scripts/demo`, the README's first command, as CI runs it: no terminal, so the approval is
given automatically; in a copy of the files it needs, run twice to show it is repeatable."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOTES = """\
# agentctl 0.1.0

The first release: run AI agents defined in YAML, offline or with any LangChain
provider.

## New

- Added `agentctl run agent.yaml "message"`: one turn, streamed, on a saved thread.
- Added interactive sessions: `agentctl run agent.yaml` opens a chat in the terminal.
- Added approvals in the terminal for the tools listed under `interrupt_on`.
- Added `agentctl init` to start an agent that runs offline at once.
- Added nested output: a subagent's work is shown under the task that started it.
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The files the demo needs, with the already set-up virtualenv."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "scripts", repo / "scripts")
    shutil.copytree(ROOT / "skills", repo / "skills")
    (repo / "agents").mkdir()
    for name in ("showcase.yaml", "showcase.cassette.yaml"):
        shutil.copy(ROOT / "agents" / name, repo / "agents" / name)
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    (repo / ".venv").symlink_to(ROOT / ".venv")
    return repo


@pytest.mark.slow
def test_demo_runs_the_showcase_offline_and_is_repeatable(checkout: Path) -> None:
    env = {**os.environ, "AGENTCTL_HOME": str(checkout / "home")}
    env.pop("AGENTCTL_DEBUG", None)
    for _ in range(2):
        done = subprocess.run(
            [str(checkout / "scripts" / "demo")],
            cwd=checkout / "skills",  # the script finds its checkout on its own
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "auto-approved write_file" in done.stderr
        out = done.stdout
        for shown in (
            "▸ write_todos(",
            "▸ read_file(file_path='/skills/release-notes/SKILL.md')",
            "  ✓ name: release-notes (+41 lines,",
            "▸ write_file(file_path='/RELEASE_NOTES.md'",
            "▸ task(subagent_type='reviewer'",
            "    ▸ read_file(file_path='/RELEASE_NOTES.md')",  # the subagent, nested
            "  ✓ Two problems, most serious first:",
            "  [x] Apply the review",
            "Done: the release notes are in agents/workspace/showcase/RELEASE_NOTES.md.",
            "The notes are in agents/workspace/showcase/RELEASE_NOTES.md. Next:",
        ):
            assert shown in out
        assert "Error" not in out
        workspace = checkout / "agents" / "workspace" / "showcase"
        assert [p.name for p in workspace.iterdir()] == ["RELEASE_NOTES.md"]
        assert (workspace / "RELEASE_NOTES.md").read_text(encoding="utf-8") == NOTES
