"""A client may not choose the path of a `file` input of any agent of the tree: the attack of
issue 29, a `ref:` subagent file declaring `inputs: {secret: {type: file}}` and a client sending
`configurable.vars.secret=/any/path`, tried through the served API on both engines, through
`agentctl mcp serve`'s tool calls, and on the graph factory for every place a file input can
hide (a ref'd file, a ref of a ref, an included file, a name the main agent has as a plain var)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.errors import BuildError
from runner.serve.factory import GraphFactory
from tests.serve import servers

SECRET = "the server's private key: hunter2"

KEEPER = """\
name: keeper
description: Keeps notes with a reader
model: replay:keeper.cassette.yaml
prompt: You keep notes.
general_purpose_agent: false
subagents: [{ref: ./reader.yaml}]
"""
READER = """\
name: reader
description: Reads the notes
model: replay:keeper.cassette.yaml
prompt: "Notes: {{ vars.secret }}"
inputs: {secret: {type: file}}
"""
REPLIES = """\
version: 1
agents:
  keeper:
    - tool_calls: [{name: task, args: {description: read the notes, subagent_type: reader}}]
    - content: Done.
  reader:
    - content: Read.
"""


def _tree(folder: Path) -> Path:
    (folder / "keeper.yaml").write_text(KEEPER)
    (folder / "reader.yaml").write_text(READER)
    (folder / "keeper.cassette.yaml").write_text(REPLIES)
    (folder / "secret.txt").write_text(SECRET)
    return folder / "keeper.yaml"


def _refused(error: BaseException) -> None:
    assert "`vars.secret` is a file input" in str(error)


@pytest.mark.parametrize(
    "layout",
    ["ref", "ref of a ref", "include", "main has it as a plain var"],
)
def test_the_factory_refuses_a_file_input_anywhere_in_the_tree(tmp_path: Path, layout: str) -> None:
    path = _tree(tmp_path)
    if layout == "ref of a ref":
        (tmp_path / "middle.yaml").write_text(
            "name: middle\ndescription: Passes work on\nmodel: replay:keeper.cassette.yaml\n"
            "prompt: You pass work on.\ngeneral_purpose_agent: false\n"
            "subagents: [{ref: ./reader.yaml}]\n"
        )
        path.write_text(KEEPER.replace("./reader.yaml", "./middle.yaml"))
    elif layout == "include":
        (tmp_path / "base.yaml").write_text("inputs: {secret: {type: file}}\n")
        path.write_text(
            KEEPER.replace("subagents: [{ref: ./reader.yaml}]\n", "include: [./base.yaml]\n")
            .replace("general_purpose_agent: false\n", "")
            .replace("You keep notes.", '"{{ vars.secret }}"')
        )
    elif layout == "main has it as a plain var":
        path.write_text(KEEPER + "vars: {secret: none}\n")
    with pytest.raises(BuildError) as caught:
        GraphFactory().graph(path, vars={"secret": str(tmp_path / "secret.txt")})
    _refused(caught.value)
    operator = GraphFactory(base_vars={"secret": str(tmp_path / "secret.txt")})
    assert operator.graph(path) is not None  # `agentctl serve --var secret=PATH` still works
    operator.close()


def test_mcp_serve_offers_no_argument_for_a_subagents_file_input(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from runner.serve.mcp import AgentTools

    path = _tree(tmp_path)
    path.write_text(KEEPER + "vars: {secret: none}\n")  # the main agent's plain var, same name
    served = AgentTools.load([path], db=str(tmp_path / "t.db"), auto_approve=True)
    try:
        tool = served.tools["keeper"]
        assert "secret" not in tool.input_schema()["properties"]
        assert tool.variables({"message": "go", "secret": str(tmp_path / "secret.txt")}) == {}
    finally:
        served.close()


# --------------------------------------------------------------------------- the served API


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tree")
    _tree(folder)
    return folder


@pytest.fixture(scope="module", params=["memory", "aegra"])
def server(request: pytest.FixtureRequest, agents: Path) -> Iterator[str]:
    pytest.importorskip("langgraph_api")
    log = agents / f"serve-{request.param}.log"
    if request.param == "memory":
        with servers.serving(
            [agents / "keeper.yaml"], cwd=agents, args=["--dev"], log=log
        ) as served:
            yield served.url
        return
    from tests.serve.test_serve_contract import aegra_args

    with (
        aegra_args(request) as (args, env),
        servers.serving(
            [agents / "keeper.yaml"], cwd=agents, args=args, env=env, log=log
        ) as served,
    ):
        yield served.url


@pytest.mark.slow
def test_a_client_cannot_read_a_server_file_through_a_subagents_input(
    server: str, agents: Path
) -> None:
    sdk = pytest.importorskip("langgraph_sdk")
    client: Any = sdk.get_sync_client(url=server)
    thread = client.threads.create()["thread_id"]
    config = {"configurable": {"vars": {"secret": str(agents / "secret.txt")}}}
    with pytest.raises(sdk.errors.UnprocessableEntityError) as refused:  # before any run
        client.runs.create(
            thread,
            "keeper",
            input={"messages": [{"role": "user", "content": "read"}]},
            config=config,
        )
    assert "`vars.secret` is a file input" in str(refused.value)
    assert client.runs.list(thread) == []
    state = client.threads.get_state(thread)
    assert SECRET not in str(state)
    # the same agent without the hostile vars runs, its subagent too: the refusal is the vars'
    thread = client.threads.create()["thread_id"]
    done = client.runs.wait(
        thread, "keeper", input={"messages": [{"role": "user", "content": "x"}]}
    )
    assert [m["content"] for m in done["messages"][-2:]] == ["Read.", "Done."]
