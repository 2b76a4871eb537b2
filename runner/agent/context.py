"""What a CLI run tells the agent about where it runs: the last section of its system prompt
(the date, the current directory as the agent's file tools see it, the git repository and the
project files there). Read from the disk, never by running a program."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["git_repository", "local_context", "local_context_for", "path_in_backend"]


PROJECT_FILES = (
    "README.md",
    "AGENTS.md",
    "pyproject.toml",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "pom.xml",
    "Makefile",
)


def local_context(spec_path: Path, cwd: Path | None = None, *, backend: Any = None) -> str:
    """The last section of a CLI run's system prompt (seeds: the date, the current directory
    and what project it is in). Read from the disk, not by running git.

    The directory is described only when the agent's file tools can reach it (`backend`, the
    spec's `backend:`, puts a host directory holding it within reach): on a `state` or `store`
    backend, or a folder elsewhere, the model is told its files are not there, so it does not
    go looking."""
    import datetime

    cwd = cwd or Path.cwd()
    lines = [f"- Today is {datetime.date.today().isoformat()}."]
    seen_as = path_in_backend(cwd, backend)
    if seen_as is None:
        lines.append(
            f"- You are run by agentctl from the agent file {spec_path.name}. Your files are in "
            "your backend (see above), not in the directory agentctl runs in: that directory "
            "is not available to your file tools."
        )
        return "## Local context\n\n" + "\n".join(lines)
    lines.append(
        f"- You are run by agentctl from the agent file {spec_path.name}, in the directory "
        f"{cwd}; your file tools see it as {seen_as}."
    )
    repository = git_repository(cwd)
    if repository is not None:
        root, head = repository
        lines.append(f"- That directory is in the git repository {root} ({head}).")
    found = [name for name in PROJECT_FILES if (cwd / name).is_file()]
    if found:
        lines.append(f"- Project files there: {', '.join(found)}.")
    return "## Local context\n\n" + "\n".join(lines)


def local_context_for(spec_path: Path) -> Callable[[Any], str]:
    """The local context of a run of `spec_path` from here, given the agent's backend spec
    (what `Session(local_context=...)` takes)."""
    cwd = Path.cwd()
    return lambda backend: local_context(spec_path, cwd, backend=backend)


def path_in_backend(directory: Path, backend: Any) -> str | None:
    """The path under which a backend (a spec's `backend:`; None is `state`) shows the host
    `directory` to the file tools, or None when it does not reach it (a backend with host paths,
    `virtual_mode: false`, shows it as itself)."""
    from runner.backends.reach import agent_path, leaves

    return agent_path(directory, leaves(backend), host_paths=True)


def git_repository(start: Path) -> tuple[Path, str] | None:
    """The git work tree holding `start` and what its HEAD is ("branch main", "commit 1a2b3c4"),
    from the `.git` folder (or a worktree's `.git` file); None outside one."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        try:
            if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
                pointer = dot_git.read_text(encoding="utf-8").strip().removeprefix("gitdir:")
                dot_git = (folder / pointer.strip()).resolve()
            if not dot_git.is_dir():
                continue
            head = (dot_git / "HEAD").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        if head.startswith("ref: refs/heads/"):
            return folder, f"branch {head.removeprefix('ref: refs/heads/')}"
        return folder, f"commit {head[:7]}" if head else "no commit yet"
    return None
