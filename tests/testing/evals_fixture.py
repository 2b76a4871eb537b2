"""Two versions of one agent and a scripted OpenAI-compatible model on loopback that tells them
apart by their prompt, for the tests of `agentctl test --live`, `--baseline` and `--compare`.

Version A ("You are careful version A.") writes /notes.md and answers `Done A.`: two requests per
run. Version B ("You are hasty version B.") lists `/` first, writes other notes and answers
`Done B, notes written.`: three requests per run; but on every `fail_every`-th run of version B
(counted by its first requests) it answers `Done B.` at once, without any tool call, so the
case's `tool_calls` check fails on those runs. Every request reports 11 input and 7 output
tokens (tests/wire.py), so a run of A uses 36 tokens, a full run of B 54, a failing one 18.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from tests.wire import OpenAIServer, Turn, call

PROMPT_A = "You are careful version A."
PROMPT_B = "You are hasty version B."

AGENT = """\
version: 1
name: notes
model:
  id: openai:scripted
  params: {{base_url: "${{EVAL_BASE_URL}}", api_key: test-key, max_retries: 0}}
  price: {{input: 1.0, output: 2.0}}
prompt: {prompt}
backend: state
general_purpose_agent: false
"""

TEST = """\
version: 1
agent: ./notes.yaml
{head}cases:
  - name: writes notes
    model: replay:./notes.cassette.yaml
    input: Write the notes.
{case_extra}    expect:
      tool_calls: [{{name: write_file, args: {{file_path: /notes.md}}}}]
      final: {{contains: Done}}
{expect_extra}"""

CASSETTE = """\
version: 1
agents:
  notes:
    - content: From the cassette, no tool called.
"""
"""What the case replays offline: it fails there (no write_file), so a live pass is live."""


class Scripted:
    """The model of both versions; `fail_every` sets which runs of version B fail."""

    def __init__(self, fail_every: int = 4) -> None:
        self.fail_every = fail_every
        self.first_requests: Counter[str] = Counter()
        self.server = OpenAIServer(self.reply)

    def reply(self, body: dict[str, Any]) -> Turn:
        if "response_format" in body:  # the judge
            return Turn(json.dumps({"reasoning": "It wrote the notes.", "score": 0.8}))
        system = str(body["messages"][0].get("content"))
        version = "A" if PROMPT_A in system else "B" if PROMPT_B in system else "?"
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if version == "A":
            if step == 0:
                return Turn("", [call("write_file", {"file_path": "/notes.md", "content": "A"})])
            return Turn("Done A.")
        if version == "B":
            if step == 0:
                self.first_requests["B"] += 1
                if self.first_requests["B"] % self.fail_every == 0:
                    return Turn("Done B.")
                return Turn("", [call("ls", {"path": "/"})])
            if step == 1:
                return Turn("", [call("write_file", {"file_path": "/notes.md", "content": "B"})])
            return Turn("Done B, notes written.")
        return Turn(status=400, error="no version in the system prompt")


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Scripted]:
    model = Scripted()
    with model.server:
        monkeypatch.setenv("EVAL_BASE_URL", model.server.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", model.server.base_url)  # the judge's
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield model


def write_agent(folder: Path, prompt: str, name: str = "notes.yaml") -> Path:
    path = folder / name
    path.write_text(AGENT.format(prompt=prompt))
    return path


def write_test(
    folder: Path, *, head: str = "", case_extra: str = "", expect_extra: str = ""
) -> Path:
    path = folder / "notes.test.yaml"
    path.write_text(TEST.format(head=head, case_extra=case_extra, expect_extra=expect_extra))
    (folder / "notes.cassette.yaml").write_text(CASSETTE)
    return path


def agentctl(*args: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """`agentctl ARGS` in this process, in `cwd`: (exit code, stdout, stderr)."""
    from runner.cli import main

    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(cwd))
    monkeypatch.setenv("AGENTCTL_HOME", str(cwd))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code: Any = main(list(args))
        except SystemExit as exc:
            code = exc.code
    return int(code or 0), out.getvalue(), err.getvalue()
