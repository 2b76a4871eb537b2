"""A tiny agent with a cassette, written into a temporary folder for the tests of `agentctl test`.

Its run: a todo list (one item left open), a write of /out.md that waits for approval, a `task`
for the `helper` subagent, and the answer `Done: the answer is 42. {"answer": 42}`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.testing.evals_fixture import scripted  # noqa: F401 (a fixture of test_evals*.py)

AGENT = """\
version: 1
name: tiny
model: replay:./tiny.cassette.yaml
prompt: You help.
backend:
  kind: composite
  default: {kind: filesystem, root_dir: ./workspace}
  routes:
    /scratch/: state
general_purpose_agent: false
interrupt_on: {write_file: true}
subagents:
  - name: helper
    description: Helps
    prompt: You help too.
"""

CASSETTE = """\
version: 1
agents:
  tiny:
    - content: Planning.
      tool_calls:
        - name: write_todos
          args: {todos: [{content: Write it, status: completed}, {content: Check it, status: in_progress}]}
        - {name: write_file, args: {file_path: /out.md, content: "hello world\\n"}}
    - content: Asking the helper.
      tool_calls:
        - {name: task, args: {subagent_type: helper, description: say hi}}
    - content: 'Done: the answer is 42. {"answer": 42}'
  helper:
    - content: helper says hi
"""

JUDGE = """\
version: 1
agents:
  judge:
    - content: ""
      tool_calls:
        - name: score
          args: {reasoning: "It gives the answer. Thus, the score should be: 0.6.", score: 0.6}
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A folder with tiny.yaml, its cassette, a judge cassette and a workspace with one file."""
    (tmp_path / "tiny.yaml").write_text(AGENT)
    (tmp_path / "tiny.cassette.yaml").write_text(CASSETTE)
    (tmp_path / "judge.cassette.yaml").write_text(JUDGE)
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "keep.txt").write_text("the real workspace\n")
    return tmp_path


def write_test(folder: Path, cases: str, *, name: str = "tiny.test.yaml", head: str = "") -> Path:
    """A test file of tiny.yaml with `cases` (YAML, the list items under `cases:`)."""
    path = folder / name
    path.write_text(f"version: 1\nagent: ./tiny.yaml\n{head}cases:\n{cases}")
    return path


def agentctl(
    *args: str, cwd: Path, env: dict[str, str] | None = None, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """`agentctl ARGS` in `cwd`; the folders failed cases keep go under `cwd/.tmp`."""
    (cwd / ".tmp").mkdir(exist_ok=True)
    env = {"TMPDIR": str(cwd / ".tmp"), **(env or {})}
    return run_cli(*args, cwd=cwd, env=env, process=process)
