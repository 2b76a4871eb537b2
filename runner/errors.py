"""The exceptions agentctl raises, grouped by who has to act on them.

```
RunnerError            base of everything agentctl raises on purpose
  SpecError            the YAML author fixes it: syntax, schema, ${VAR}, bad ref, bad skill
  ResolutionError      a name does not resolve: tool, provider, import path, missing optional extra
  BuildError           a combination of valid settings that cannot be built together
  RunError             a model, tool, backend or cassette failed while the agent ran
    DecisionError      an answer the waiting approval does not take (a usage error: exit 2)
```

`SpecError` carries every `Problem` found, not just the first, so a YAML author fixes a file in one
pass. `ResolutionError` and `BuildError` may carry a `Problem` too when the cause has a place in a
file. The CLI prints `str(error)` (one located line per problem) and exits with `exit_code`; any
other exception reaching the CLI is a bug in agentctl and is reported as one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Self

__all__ = [
    "BuildError",
    "DecisionError",
    "Problem",
    "ResolutionError",
    "RunError",
    "RunnerError",
    "SpecError",
]


@dataclass(frozen=True, order=True)
class Problem:
    """One located problem: `file:line:col: key.path: message`.

    `line` and `col` are 1-based; 0 means unknown (the message then names only the file).
    """

    file: str
    line: int
    col: int
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}:{self.col}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class RunnerError(Exception):
    """Base class of the errors agentctl raises on purpose; `exit_code` is what the CLI returns."""

    exit_code = 1

    def model_dump(self) -> dict[str, str]:
        """The error as a server sends it to its client: `{"error": TYPE, "message": TEXT}`.
        Written for a person, the message is sent whole (the LangGraph server serialises an
        exception with `model_dump` when it has one, and hides the message of any other)."""
        return {"error": type(self).__name__, "message": str(self)}


class SpecError(RunnerError):
    """The agent spec is wrong; `problems` lists every problem found, each located."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | Problem | str) -> None:
        if isinstance(problems, str):
            problems = [Problem("", 0, 0, "", problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = problems
        super().__init__("\n".join(str(p) for p in problems))


class _Located(RunnerError):
    exit_code = 2

    def __init__(self, message: str, *, problem: Problem | None = None) -> None:
        self.problem = problem
        super().__init__(str(problem) if problem else message)

    @classmethod
    def at(cls, problem: Problem) -> Self:
        """The error for one located problem."""
        return cls(problem.message, problem=problem)


class ResolutionError(_Located):
    """A tool, provider, import path or optional dependency named in a spec cannot be resolved."""


class BuildError(_Located):
    """The spec is valid piece by piece, but its pieces cannot be assembled into one agent."""


class RunError(RunnerError):
    """A model, tool, backend or cassette failed while the agent ran."""

    exit_code = 1


class DecisionError(RunError):
    """Decisions that do not fit what waits: a decision the approval does not allow (`--edit`
    where only approve and reject are), an answer to an approval, the wrong number of them. The
    person at the command line fixes it, as any usage error."""

    exit_code = 2


def display_path(path: str | Path) -> str:
    """A path as messages show it: relative to the working directory when under it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def redact(url: str) -> str:
    """A URL without its password (`user:***@host`), for messages."""
    from urllib.parse import urlsplit, urlunsplit  # (not on `agentctl validate`'s path)

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
