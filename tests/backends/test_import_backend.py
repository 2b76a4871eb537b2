"""A backend of the user's own, named by import (`backend: {import: ...}`) or passed to
`build_agent(backend=...)`: how remote sandboxes plug in without a change to agentctl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import runner
from runner.backends import StateBackend
from runner.errors import BuildError, RunnerError
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import call, reply, run, tool_texts

SANDBOXES = '''
from runner.backends import LocalShellBackend


class RemoteSandbox(LocalShellBackend):
    """Stands in for a remote sandbox client: a backend with execute."""


def make(root, sandbox="none"):
    return RemoteSandbox(root, sandbox=sandbox)


def not_a_backend():
    return {"execute": "no"}


class NoRegex:
    """An older backend whose grep takes no `regex`."""

    def __getattr__(self, name):
        return lambda *args: None

    def grep(self, pattern, path=None, glob=None):
        return []

    def agrep(self, pattern, path=None, glob=None):
        return []
'''


def agent_file(tmp_path: Path, backend: Any) -> Path:
    (tmp_path / "sandboxes.py").write_text(SANDBOXES)
    path = tmp_path / "agent.yaml"
    data = {"name": "remote", "model": "openai:gpt-4.1", "todos": False, "backend": backend}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def scripted(*calls: dict[str, Any]) -> ScriptedChatModel:
    return ScriptedChatModel(script=[*(reply("", c) for c in calls), reply("done")])


def test_an_imported_factory_makes_the_backend_and_execute_runs_on_it(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    spec = agent_file(tmp_path, {"import": "./sandboxes.py:make", "args": {"root": ws}})
    model = scripted(
        call("write_file", file_path="/a.txt", content="hello"),
        call("execute", command="cat a.txt"),
    )
    agent = runner.build_agent(spec, model=model)
    assert tool_texts(run(agent, "go")["messages"]) == [
        "Updated file /a.txt",
        "hello\n[Command succeeded with exit code 0]",
    ]
    assert (tmp_path / "ws" / "a.txt").read_text() == "hello"


def test_an_imported_backend_can_be_a_composite_route(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    backend = {
        "kind": "composite",
        "default": "state",
        "routes": {"/remote/": {"import": "./sandboxes.py:make", "args": {"root": ws}}},
    }
    model = scripted(call("write_file", file_path="/remote/b.txt", content="B"))
    agent = runner.build_agent(agent_file(tmp_path, backend), model=model)
    assert tool_texts(run(agent, "go")["messages"]) == ["Updated file /remote/b.txt"]
    assert (tmp_path / "ws" / "b.txt").read_text() == "B"


@pytest.mark.parametrize(
    ("target", "lacks"),
    [
        ("./sandboxes.py:not_a_backend", "which is not a backend: it lacks aedit, aglob"),
        ("./sandboxes.py:NoRegex", "it lacks grep(..., regex) parameter"),
    ],
)
def test_what_is_not_a_backend_is_refused_at_build_with_its_line(
    tmp_path: Path, target: str, lacks: str
) -> None:
    spec = agent_file(tmp_path, {"import": target})
    with pytest.raises(RunnerError) as caught:
        runner.build_agent(spec, model=scripted())
    message = str(caught.value)
    assert message.startswith(f"{spec}:5:")
    assert "backend.import" in message and lacks in message


def test_a_missing_factory_is_located(tmp_path: Path) -> None:
    spec = agent_file(tmp_path, {"import": "./sandboxes.py:mkae"})
    with pytest.raises(RunnerError, match="has no attribute 'mkae'; did you mean 'make'"):
        runner.build_agent(spec, model=scripted())


def test_build_agent_takes_a_backend_object(tmp_path: Path) -> None:
    spec = agent_file(tmp_path, "state")
    files: dict[str, Any] = {}
    model = scripted(call("ls", path="/"))
    agent = runner.build_agent(spec, model=model, backend=StateBackend(files))
    assert tool_texts(run(agent, "go")["messages"]) == ["/ is empty"]
    with pytest.raises(BuildError, match="gave object, which is not a backend"):
        runner.build_agent(spec, model=scripted(), backend=object())
