"""pytest collects `*.test.yaml` files: one item per case, run as `agentctl test` runs it.

Installed with agentctl (the `pytest11` entry point `agentctl`), so a project runs its agent tests
in the pytest it already has: `pytest agents/`. Only files named `*.test.yaml` / `*.test.yml`
under the paths pytest collects are read. A bad test file is a collection error with its located
problems; a failed case shows the same report as `agentctl test`; a case whose judge had no model
is skipped. Options: `--agentctl-model`, `--agentctl-judge-model` (like `--model` and
`--judge-model`).

This module imports only pytest at start-up; agentctl loads when a test file is collected.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_SUFFIXES = (".test.yaml", ".test.yml")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentctl", "agentctl test files (*.test.yaml)")
    group.addoption(
        "--agentctl-model",
        metavar="MODEL",
        default=None,
        help="Run every agent test case live on this model instead of its cassette.",
    )
    group.addoption(
        "--agentctl-judge-model",
        metavar="MODEL",
        default=None,
        help="The model that grades `judge` checks (without one they are skipped).",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    name = file_path.name
    if name.endswith(_SUFFIXES) and not name.startswith(("_", ".")):
        return AgentTestFile.from_parent(parent, path=file_path)
    return None


class AgentTestFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from runner.errors import SpecError
        from runner.testing.loader import load_test_file

        try:
            loaded = load_test_file(self.path)
        except SpecError as exc:
            raise self.CollectError(str(exc)) from None
        for index, case in enumerate(loaded.spec.cases):
            yield AgentTestCase.from_parent(self, name=case.name, loaded=loaded, index=index)


class AgentCaseFailed(Exception):
    """A case failed or could not run; its report is the message."""


class AgentTestCase(pytest.Item):
    def __init__(self, *, loaded: Any, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loaded = loaded
        self.index = index
        # No fixtures, but plugins that wrap every test call read `item.funcargs` as function
        # items have it (pytest-lsp 1.0's wrapper fails any item without it).
        self.funcargs: dict[str, Any] = {}

    def runtest(self) -> None:
        from runner.testing.execution import RunOptions, remove_folder, run_case
        from runner.testing.judge import Judge
        from runner.testing.report import details

        model = self.config.getoption("agentctl_model")
        judge_model = self.config.getoption("agentctl_judge_model")
        # under pytest's own temporary folder (old runs' folders are removed by pytest)
        factory = getattr(self.config, "_tmp_path_factory", None)
        if factory is not None:
            workdir = factory.mktemp("agentctl-test-")
        else:
            workdir = Path(tempfile.mkdtemp(prefix="agentctl-test-"))
        options = RunOptions(workdir=workdir, model=model, judge_model=judge_model)
        judge = Judge(model=judge_model, file_model=self.loaded.spec.judge_model)
        result = run_case(self.loaded, self.index, options, judge=judge, folder=workdir / "case")
        if result.status in ("failed", "error"):
            raise AgentCaseFailed("\n".join(details(result)))
        remove_folder(workdir)
        if result.status == "skipped":
            reason = next(c.message for c in result.checks if c.status == "skipped")
            # reported at the case in the test file, not at this line
            raise pytest.skip.Exception(reason, _use_item_location=True)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AgentCaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        line = self.loaded.case_location(self.index).line
        return self.path, max(line - 1, 0), f"{self.loaded.shown}::{self.name}"
