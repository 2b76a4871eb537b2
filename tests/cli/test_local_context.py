"""The local context a CLI run adds to the system prompt: date, directory, repository, project."""

from __future__ import annotations

import datetime
from pathlib import Path

from runner.cli.session import git_repository, local_context


def test_outside_a_repository_it_names_the_date_the_file_and_the_directory(tmp_path: Path) -> None:
    today = datetime.date.today().isoformat()
    assert local_context(Path("agents/notes.yaml"), tmp_path) == (
        "## Local context\n\n"
        f"- Today is {today}.\n"
        f"- You are run by agentctl from the agent file notes.yaml, in the directory {tmp_path}. "
        "Your file tools work in your backend (see above), which may be elsewhere."
    )


def test_in_a_repository_it_names_the_branch_and_the_project_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "README.md").write_text("")
    sub = tmp_path / "src"
    sub.mkdir()
    text = local_context(Path("a.yaml"), tmp_path)
    assert text.endswith(
        f"- That directory is in the git repository {tmp_path} (branch feature/x).\n"
        "- Project files there: README.md, pyproject.toml."
    )
    assert git_repository(sub) == (tmp_path, "branch feature/x")


def test_a_worktree_a_detached_head_and_an_unreadable_head(tmp_path: Path) -> None:
    gitdir = tmp_path / "main" / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("0123456789abcdef0123456789abcdef01234567\n")
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {gitdir}\n")
    assert git_repository(worktree) == (worktree, "commit 0123456")
    broken = tmp_path / "broken"
    (broken / ".git").mkdir(parents=True)  # no HEAD
    assert git_repository(broken) is None
