"""The local context a CLI run adds to the system prompt: date, directory, repository, project."""

from __future__ import annotations

import datetime
from pathlib import Path

from runner.agent.context import git_repository, local_context, path_in_backend
from runner.spec.backend import (
    CompositeBackendSpec,
    FilesystemBackendSpec,
    LocalShellBackendSpec,
    StateBackendSpec,
    StoreBackendSpec,
)


def folder(root: Path, **options: object) -> FilesystemBackendSpec:
    return FilesystemBackendSpec(kind="filesystem", root_dir=str(root), **options)


def test_outside_a_repository_it_names_the_date_the_file_and_the_directory(tmp_path: Path) -> None:
    today = datetime.date.today().isoformat()
    assert local_context(Path("agents/notes.yaml"), tmp_path, backend=folder(tmp_path)) == (
        "## Local context\n\n"
        f"- Today is {today}.\n"
        f"- You are run by agentctl from the agent file notes.yaml, in the directory {tmp_path}; "
        "your file tools see it as /."
    )


def test_the_directory_is_left_out_when_the_file_tools_cannot_reach_it(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("")
    today = datetime.date.today().isoformat()
    elsewhere = folder(tmp_path / "workspace")
    for backend in (
        None,
        StateBackendSpec(kind="state"),
        StoreBackendSpec(kind="store"),
        elsewhere,
    ):
        assert local_context(Path("a.yaml"), tmp_path, backend=backend) == (
            "## Local context\n\n"
            f"- Today is {today}.\n"
            "- You are run by agentctl from the agent file a.yaml. Your files are in your backend "
            "(see above), not in the directory agentctl runs in: that directory is not available "
            "to your file tools."
        )


def test_where_the_file_tools_see_the_directory(tmp_path: Path) -> None:
    here = tmp_path / "project" / "src"
    here.mkdir(parents=True)
    shell = LocalShellBackendSpec(kind="local_shell", root_dir=str(tmp_path / "project"))
    assert path_in_backend(here, shell) == "/src"
    assert path_in_backend(here, folder(tmp_path / "other")) is None
    assert path_in_backend(here, folder(tmp_path / "other", virtual_mode=False)) == str(here)
    composite = CompositeBackendSpec(
        kind="composite",
        default=StateBackendSpec(kind="state"),
        routes={"/code/": folder(tmp_path)},
    )
    assert path_in_backend(here, composite) == "/code/project/src"


def test_in_a_repository_it_names_the_branch_and_the_project_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "README.md").write_text("")
    sub = tmp_path / "src"
    sub.mkdir()
    text = local_context(Path("a.yaml"), tmp_path, backend=folder(tmp_path))
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
