"""`agentctl test`: declarative tests and evals for agents, offline on cassettes or live.

```
spec.py          the `*.test.yaml` models (pure data; `schemas/test.schema.json` comes from them)
loader.py        read, validate and locate test files, with the agent files' machinery
isolation.py     each case's own copy of the agent's folders
execution.py     run one case on `runner.run.Session`: seed files, play turns, observe
expectations.py  the checks of `expect:`
judge.py         the LLM-as-judge check (openevals), skipped without a judge model
suite.py         find, select, run (in parallel) and collect
report.py        text and JSON lines
junit.py         JUnit XML
evals.py         live evals (`--live`): each case N times per version, pass rates, figures
baseline.py      `--save-baseline` / `--baseline`: regressions (Fisher's exact test, growth)
compare.py       `--compare`: the other version, trajectory and answer diffs
live_report.py   live evals as text and JSON lines
html_report.py   the self-contained HTML report (`--report`)
pytest_plugin.py pytest collects `*.test.yaml`, one item per case
```

Nothing below `cli/` imports this package; it uses `loader`, `run` and the backends.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.testing.execution import CaseResult, RunOptions, run_case
    from runner.testing.loader import LoadedTestFile, find_test_files, load_test_file
    from runner.testing.spec import TestFileSpec
    from runner.testing.suite import SuiteResult, run_suite

# Each name from its module on first use: `validate` asks `runner.testing.loader` whether a file
# is a test file without loading the runner of the tests.
_MODULES = {
    "execution": ("CaseResult", "RunOptions", "run_case"),
    "loader": ("LoadedTestFile", "find_test_files", "load_test_file"),
    "spec": ("TestFileSpec",),
    "suite": ("SuiteResult", "run_suite"),
}


def __getattr__(name: str) -> Any:
    for module, names in _MODULES.items():
        if name in names:
            value = getattr(importlib.import_module(f"runner.testing.{module}"), name)
            globals()[name] = value
            return value
    raise AttributeError(f"module 'runner.testing' has no attribute {name!r}")


__all__ = [
    "TEST_SCHEMA_ID",
    "CaseResult",
    "LoadedTestFile",
    "RunOptions",
    "SuiteResult",
    "TestFileSpec",
    "find_test_files",
    "load_test_file",
    "run_case",
    "run_suite",
    "test_json_schema_text",
]

TEST_SCHEMA_ID = "https://agentctl.dev/schemas/test.schema.json"


def test_json_schema_text() -> str:
    """The JSON Schema of test files, as committed in `schemas/test.schema.json`."""
    from runner.spec import schema_document, schema_file_text
    from runner.testing.spec import TestFileSpec

    schema = TestFileSpec.model_json_schema(mode="validation")
    return schema_file_text(schema_document(schema, TEST_SCHEMA_ID))


test_json_schema_text.__test__ = False  # type: ignore[attr-defined]
