"""What serve checks before starting, and the graph factory's cache."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.serve.agents import collect_agents

GOOD = "name: {name}\ndescription: d\nmodel: replay:c.cassette.yaml\nprompt: p\n"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_every_agent_under_the_paths_is_served_by_name(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD.format(name="alpha"))
    write(tmp_path, "b.yaml", GOOD.format(name="beta"))
    write(tmp_path, "c.cassette.yaml", "- content: hi\n")
    found = collect_agents([tmp_path])
    assert [(a.name, a.path.name, a.description) for a in found] == [
        ("alpha", "a.yaml", "d"),
        ("beta", "b.yaml", "d"),
    ]


def test_every_problem_of_every_file_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "c.cassette.yaml", "- content: hi\n")
    write(tmp_path, "a.yaml", GOOD.format(name="alpha") + "tols: []\n")
    write(tmp_path, "b.yaml", GOOD.format(name="beta"))
    write(tmp_path, "c.yaml", GOOD.format(name="beta"))
    write(
        tmp_path,
        "d.yaml",
        GOOD.format(name="delta") + "backend: {kind: local_shell, root_dir: ./work}\n",
    )
    with pytest.raises(SpecError) as caught:
        collect_agents(["."])
    lines = str(caught.value).splitlines()
    assert lines[0] == "a.yaml:5:1: tols: unknown key; did you mean 'tools'?"
    assert lines[1] == (
        "c.yaml: name: 'beta' is also the name of b.yaml; each served agent needs its own name "
        "(it names the graph)"
    )
    assert lines[2].startswith(
        f"d.yaml: backend.root_dir: {tmp_path / 'work'} would be one folder shared by every "
        "thread of the server"
    )
    assert lines[2].endswith("or pass --shared-workspace")
    assert len(lines) == 3


def test_a_per_thread_root_or_shared_workspace_is_accepted(tmp_path: Path) -> None:
    spec = GOOD.format(name="d") + (
        "backend:\n  kind: composite\n  default: {kind: filesystem, root_dir: './w/{thread_id}'}\n"
        "  routes:\n    /shared/: {kind: filesystem, root_dir: ./common}\n"
    )
    write(tmp_path, "c.cassette.yaml", "- content: hi\n")
    write(tmp_path, "d.yaml", spec)
    with pytest.raises(SpecError, match=r"backend\.routes\./shared/\.root_dir: .*common would be"):
        collect_agents([tmp_path])
    assert [a.name for a in collect_agents([tmp_path], shared_workspace=True)] == ["d"]


def test_nothing_to_serve_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r": no agent files \(\*\.yaml\) here$"):
        collect_agents([tmp_path])


def test_graphs_are_cached_by_file_mtime_vars_and_model(tmp_path: Path) -> None:
    from runner.serve.factory import GraphFactory

    write(tmp_path, "c.cassette.yaml", "- content: hi\n")
    write(tmp_path, "other.cassette.yaml", "- content: other\n")
    path = write(tmp_path, "a.yaml", GOOD.format(name="alpha") + "vars: {topic: x}\n")
    factory = GraphFactory()
    first = factory.graph(path)
    assert factory.graph(path) is first
    assert factory.graph(path, vars={"topic": "y"}) is not first
    assert factory.graph(path, vars={"topic": "y"}) is factory.graph(path, vars={"topic": "y"})
    other = factory.graph(path, model=f"replay:{tmp_path / 'other.cassette.yaml'}")
    reply = other.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert reply["messages"][-1].text == "other"
    assert factory.builds == 3
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    rebuilt = factory.graph(path)
    assert rebuilt is not first and factory.builds == 4
    factory.close()


async def test_assistant_config_must_have_the_right_shapes(tmp_path: Path) -> None:
    from runner.errors import BuildError
    from runner.serve.factory import GraphFactory

    path = write(tmp_path, "a.yaml", GOOD.format(name="alpha"))
    factory = GraphFactory()
    with pytest.raises(BuildError, match="`vars` must be a mapping"):
        await factory.agraph(path, {"configurable": {"vars": ["x"]}})
    with pytest.raises(BuildError, match="`model` must be a `provider:model` string"):
        await factory.agraph(path, {"configurable": {"model": 3}})


def test_a_client_may_not_choose_a_file_inputs_path(tmp_path: Path) -> None:
    from runner.errors import BuildError
    from runner.serve.factory import GraphFactory

    write(tmp_path, "c.cassette.yaml", "- content: hi\n")
    write(tmp_path, "notes.md", "the server's notes\n")
    agent = GOOD.format(name="alpha").replace("prompt: p", 'prompt: "{{ vars.notes }}"')
    path = write(tmp_path, "a.yaml", agent + "inputs: {notes: {type: file}}\n")
    with pytest.raises(BuildError, match=r"`vars.notes` is a file input: .* serve --var notes="):
        GraphFactory().graph(path, vars={"notes": "/etc/passwd"})
    served = GraphFactory(base_vars={"notes": str(tmp_path / "notes.md")})  # the operator's
    assert served.graph(path) is not None
    served.close()


async def test_a_graph_read_but_not_run_needs_no_model_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engines build the graph to show an assistant's schemas and a thread's state: without
    # an API key yet, those reads answered 500 (and the log a traceback)
    from runner.errors import ResolutionError
    from runner.serve.factory import GraphFactory

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = write(tmp_path, "a.yaml", "name: a\ndescription: d\nmodel: openai:gpt-4.1\nprompt: p\n")
    factory = GraphFactory()
    read = {"configurable": {"__is_for_execution__": False}}
    graph = await factory.agraph(path, read)
    assert "messages" in graph.get_input_jsonschema()["properties"]
    with pytest.raises(ResolutionError, match=re.escape("a.yaml:3:8: model: cannot create model")):
        await factory.agraph(path, {})
    factory.close()


def test_a_shared_folder_is_refused_only_on_a_server_with_users(tmp_path: Path) -> None:
    """With users (API keys), every user's threads would write in one folder: serve refuses
    before it starts, naming the fix. Without authentication (one user) it is served; the web
    page's tests serve the example agents so, whose folders are shared."""
    from tests.conftest import run_cli

    write(tmp_path, "c.cassette.yaml", "- content: hi\n")
    write(tmp_path, "d.yaml", GOOD.format(name="d") + "backend: {kind: filesystem, root_dir: w}\n")
    write(tmp_path, "keys.yaml", "keys: [{user: alice, key: k-alice-0123456789abcdef}]\n")
    refused = run_cli("serve", ".", "--api-keys", "keys.yaml", "--port", "1", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "would be one folder shared by every thread of the server" in refused.stderr
    assert "--shared-workspace" in refused.stderr
