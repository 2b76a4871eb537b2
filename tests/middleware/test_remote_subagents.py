"""Remote subagents without a server: what `inspect` shows of one, and a call to a server that
never answers ending at its `remote.timeout` as the `task` call's error. The calls across two
servers are in tests/serve/test_serve_remote.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from runner.cli import main
from runner.middleware.remote_subagents import RemoteAgent, RemoteCallError, remote_thread_id
from runner.spec.remote import RemoteAgentServer

PARENT = """\
name: parent
model: replay:parent.cassette.yaml
subagents:
  - name: researcher
    description: Researches a topic
    remote:
      url: http://127.0.0.1:2024/
      assistant: researcher
      api_key: ${REMOTE_TEST_KEY}
      headers: {X-Team: a}
"""


def test_inspect_shows_the_remote_with_its_secrets_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "parent.yaml").write_text(PARENT, encoding="utf-8")
    monkeypatch.setenv("REMOTE_TEST_KEY", "the-secret-key")
    assert main(["inspect", str(tmp_path / "parent.yaml")]) == 0
    out = capsys.readouterr().out
    assert "  researcher: Researches a topic\n" in out
    assert (
        "      remote http://127.0.0.1:2024 assistant 'researcher'  (x-api-key: ***, X-Team: ***)"
        in out
    )
    assert "the-secret-key" not in out


def test_a_server_that_never_answers_ends_the_call_at_its_timeout() -> None:
    from runner.serve.ports import free_port

    server = RemoteAgentServer(
        url=f"http://127.0.0.1:{free_port('127.0.0.1')}", assistant="researcher", timeout=0.3
    )
    runtime = SimpleNamespace(
        config={"configurable": {"thread_id": "t1"}}, tool_call_id="call-1", state={}
    )
    with pytest.raises(RemoteCallError, match=r"could not be reached for 0.3 s"):
        RemoteAgent("researcher", server).call("Look it up.", runtime, "researcher")  # type: ignore[arg-type]


def test_one_remote_thread_per_parent_thread_subagent_and_parallel_place() -> None:
    server = RemoteAgentServer(url="http://127.0.0.1:2024", assistant="researcher")
    first = remote_thread_id("t1", "researcher", server, 0)
    assert first == remote_thread_id("t1", "researcher", server, 0)  # found again after a crash
    others = {
        remote_thread_id("t2", "researcher", server, 0),
        remote_thread_id("t1", "writer", server, 0),
        remote_thread_id("t1", "researcher", server, 1),
    }
    assert first not in others and len(others) == 3
