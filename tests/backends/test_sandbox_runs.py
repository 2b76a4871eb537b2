"""The break-out attempts of `test_sandbox.py`, made by a replayed model through a whole run:
`agentctl run` (sync) and the Python API (`invoke`, `ainvoke`), each in a fresh process whose
environment holds an API key. Then what happens where bubblewrap is missing."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.backends.test_sandbox import (
    PEEK,
    SECRET,
    connect_command,
    needs_bubblewrap,
    running,
    unique_seconds,
)
from tests.conftest import run_cli

TIMEOUT = 2


def write_agent(folder: Path, commands: list[str], **backend: Any) -> Path:
    """An agent whose replayed model calls `execute` once per command, then says done."""
    (folder / "root").mkdir(exist_ok=True)
    spec = {
        "name": "shell",
        "model": "replay:agent.cassette.yaml",
        "todos": False,
        "general_purpose_agent": False,
        "backend": {"kind": "local_shell", "root_dir": "./root", "timeout": TIMEOUT, **backend},
    }
    replies = [
        {"content": "", "tool_calls": [{"name": "execute", "args": {"command": command}}]}
        for command in commands
    ]
    cassette = {"version": 1, "agents": {"shell": [*replies, {"content": "done"}]}}
    (folder / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (folder / "agent.cassette.yaml").write_text(yaml.safe_dump(cassette, sort_keys=False))
    return folder / "agent.yaml"


API_RUN = textwrap.dedent(
    """
    import asyncio, json, sys
    import runner
    agent = runner.build_agent(sys.argv[1])
    inputs = {"messages": [{"role": "user", "content": "go"}]}
    if sys.argv[2] == "ainvoke":
        result = asyncio.run(agent.ainvoke(inputs))
    else:
        result = agent.invoke(inputs)
    print(json.dumps([str(m.content) for m in result["messages"] if m.type == "tool"]))
    """
)


def tool_results(spec: Path, how: str, env: dict[str, str] | None = None) -> list[str]:
    """What `execute` returned to the model, call by call, in a run made `how`."""
    env = {"OPENAI_API_KEY": SECRET, **(env or {})}
    if how == "agentctl run":
        done = run_cli("run", str(spec), "go", "--output", "jsonl", cwd=spec.parent, env=env)
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert events[-1]["type"] == "final", events[-1]
        return [e["content"] for e in events if e["type"] == "tool_result"]
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", API_RUN, str(spec), how],
        env={**os.environ, **env},
        cwd=spec.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    results: list[str] = json.loads(done.stdout.splitlines()[-1])
    return results


@pytest.fixture
def outside() -> Iterator[Path]:
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.home()
    folder = Path(os.path.realpath(base)) / f"agentctl-outside-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "victim.txt").write_text("untouched\n")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_bubblewrap
@pytest.mark.parametrize("how", ["agentctl run", "invoke", "ainvoke"])
def test_a_hostile_model_stays_in_the_sandbox(
    tmp_path: Path, outside: Path, listener: int, how: str
) -> None:
    victim = outside / "victim.txt"
    host_tmp = Path("/tmp") / f"agentctl-host-{uuid.uuid4().hex}"
    host_tmp.write_text("host secret\n")
    left = Path("/tmp") / f"agentctl-left-{uuid.uuid4().hex}"
    background, holder, child, waited = (unique_seconds() for _ in range(4))
    threats = {
        "write outside": f"echo pwned > {victim}",
        "read the parent's environment": PEEK,
        "reach the network": connect_command(listener),
        "hard-link a file from outside": f"ln {victim} linked.txt",
        "outlive the call": f"sleep {background} >/dev/null 2>&1 & sleep {holder} & echo started",
        "outlive the timeout": f"sleep {child} & echo up; sleep {waited}",
        "share /tmp": f"cat {host_tmp}; echo left > {left}",
    }
    spec = write_agent(tmp_path, list(threats.values()))
    try:
        results = dict(zip(threats, tool_results(spec, how), strict=True))
    finally:
        host_tmp.unlink()
    assert "Read-only file system" in results["write outside"]
    assert victim.read_text() == "untouched\n"
    assert SECRET not in results["read the parent's environment"]
    assert "Connection refused" in results["reach the network"]
    assert "cross-device" in results["hard-link a file from outside"]
    assert os.stat(victim).st_nlink == 1
    assert results["outlive the call"] == "started\n[Command succeeded with exit code 0]"
    assert results["outlive the timeout"].startswith(f"up\n[Command timed out after {TIMEOUT}")
    for token in (background, holder, child, waited):
        assert running(token) == []
    assert "host secret" not in results["share /tmp"] and not left.exists()
    assert sorted(os.listdir(outside)) == ["victim.txt"]


@pytest.fixture
def listener() -> Iterator[int]:
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


# ------------------------------------------------------------------------- no bubblewrap

NO_BWRAP = {"PATH": "/nonexistent"}  # agentctl finds no `bwrap`; `/bin/sh` needs no PATH
# (in a process of its own: whether bubblewrap works is asked once per process)


def test_auto_without_bubblewrap_warns_in_jsonl_text_and_inspect(tmp_path: Path) -> None:
    spec = write_agent(tmp_path, ["echo ran unsandboxed"])
    done = run_cli(
        "run", str(spec), "go", "--output", "jsonl", cwd=tmp_path, env=NO_BWRAP, process=True
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events[:2]] == ["start", "warning"]
    warning = events[1]
    assert (warning["code"], warning["agent"]) == ("no_sandbox", "shell")
    assert warning["message"].startswith("execute runs WITHOUT a sandbox for shell:")
    assert "`bwrap` not found on PATH" in warning["message"]
    assert sum(e["type"] == "warning" for e in events) == 1  # once per run, not per call
    results = [e["content"] for e in events if e["type"] == "tool_result"]
    assert results == ["ran unsandboxed\n[Command succeeded with exit code 0]"]

    text = run_cli("run", str(spec), "go", cwd=tmp_path, env=NO_BWRAP, process=True)
    assert text.returncode == 0, text.stderr
    assert "execute runs WITHOUT a sandbox for shell" in text.stdout + text.stderr

    inspected = run_cli("inspect", str(spec), cwd=tmp_path, env=NO_BWRAP, process=True)
    assert inspected.returncode == 0, inspected.stderr
    assert "sandbox: NONE, commands run on the host" in inspected.stdout


@pytest.mark.parametrize(
    ("sandbox", "bwrap", "warned"),
    [("auto", False, True), ("none", False, False), ("auto", True, False)],
)
def test_the_warning_comes_only_from_auto_without_a_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str, bwrap: bool, warned: bool
) -> None:
    from runner.backends import sandbox as sandbox_module
    from runner.run import Session

    problem = None if bwrap else "`bwrap` not found on PATH"
    monkeypatch.setattr(sandbox_module, "bubblewrap_problem", lambda: problem)
    spec = write_agent(tmp_path, ["echo hi", "echo again"], sandbox=sandbox)
    with Session(spec, db=tmp_path / "threads.db") as session:
        events = list(session.stream("go"))
    warnings = [e for e in events if e.type == "warning"]
    assert [(w.code, events.index(w)) for w in warnings] == ([("no_sandbox", 1)] if warned else [])


def test_bubblewrap_required_but_missing_is_located_at_the_key(tmp_path: Path) -> None:
    spec = write_agent(tmp_path, ["true"], sandbox="bubblewrap")
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1) if "sandbox:" in text)
    message = (
        f"agent.yaml:{line}:12: backend.sandbox: bubblewrap is not available: `bwrap` not found "
        "on PATH; install the `bubblewrap` package (Debian/Ubuntu: apt-get install bubblewrap); "
        "or choose `sandbox: auto` (unsandboxed with a warning when missing) or `sandbox: none`"
    )
    checked = run_cli("validate", str(spec), cwd=tmp_path, env=NO_BWRAP, process=True)
    assert (checked.returncode, checked.stderr) == (2, message + "\n")

    done = run_cli("run", str(spec), "go", cwd=tmp_path, env=NO_BWRAP, process=True)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert message in done.stderr


def test_missing_extra_paths_are_located(tmp_path: Path) -> None:
    spec = write_agent(tmp_path, ["true"], writable_paths=["./cache"], read_only_paths=["/no/x"])
    checked = run_cli("validate", str(spec), cwd=tmp_path)
    assert checked.returncode == 2
    assert "backend.read_only_paths[0]: no such file or folder: /no/x" in checked.stderr
    assert f"backend.writable_paths[0]: no such file or folder: {tmp_path / 'cache'}" in (
        checked.stderr
    )
    (tmp_path / "cache").mkdir()
    (spec.parent / "agent.yaml").write_text(spec.read_text().replace("/no/x", "./cache"))
    assert run_cli("validate", str(spec), cwd=tmp_path).returncode == 0
