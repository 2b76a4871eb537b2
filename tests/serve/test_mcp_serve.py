"""`agentctl mcp serve`: example agents as MCP tools, driven by the official MCP Python client
over stdio and streamable HTTP against a real `agentctl mcp serve` process, offline (cassettes)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import AGENTS, run_cli

SHOWCASE_FINAL = "Done: the release notes are in agents/workspace/showcase/RELEASE_NOTES.md."


def _copy_agents(folder: Path) -> Path:
    """A copy of the example agents (their runs write into their folder) and skills."""
    shutil.copytree(AGENTS, folder / "agents", ignore=shutil.ignore_patterns("workspace"))
    shutil.copytree(AGENTS.parent / "skills", folder / "skills")
    return folder / "agents"


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    return _copy_agents(tmp_path)


def server_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "AGENTCTL_HOME": str(tmp_path / "home")}
    env["AGENTCTL_MODEL"] = "replay:docs.cassette.yaml"  # docs.yaml plays its cassette
    env.pop("AGENTCTL_DEBUG", None)
    return env


@asynccontextmanager
async def stdio_session(agents: Path, *args: str, tmp_path: Path) -> AsyncIterator[ClientSession]:
    """A client session with `agentctl mcp serve ARGS` (agent files among them) over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "runner", "mcp", "serve", *args],
        cwd=str(agents),
        env=server_env(tmp_path),
    )
    with open(tmp_path / "server.stderr", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def test_stdio_lists_each_agent_as_a_tool(agents: Path, tmp_path: Path) -> None:
    async with stdio_session(agents, "showcase.yaml", "docs.yaml", tmp_path=tmp_path) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        missing = await session.call_tool("docs", {})
        unknown = await session.call_tool("nope", {"message": "hi"})
    assert missing.isError and "'message' is a required property" in text_of(missing)
    assert unknown.isError
    assert text_of(unknown) == "no agent is served as 'nope'; the tools are: docs, showcase"
    assert sorted(tools) == ["docs", "showcase"]
    docs = tools["docs"]
    assert docs.description == (
        "Answers questions from a folder of documents and cites the file of each fact "
        "(Runs the agent on a new thread; returns its final answer.)"
    )
    assert docs.inputSchema == {
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "The message to send to the agent."}
        },
        "required": ["message"],
    }


async def test_stdio_call_returns_the_answer_with_progress(agents: Path, tmp_path: Path) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with stdio_session(agents, "docs.yaml", tmp_path=tmp_path) as session:
        result = await session.call_tool(
            "docs", {"message": "Which databases are embedded?"}, progress_callback=on_progress
        )
    assert not result.isError, text_of(result)
    cassette = (agents / "docs.cassette.yaml").read_text()
    assert text_of(result).split("\n")[0] in cassette
    thread_id = (result.meta or {})["agentctl/thread_id"]
    assert thread_id
    messages = [m for _, m in seen]
    assert "docs: model replied" in messages
    assert "docs: calling docs_search" in messages
    assert "docs: docs_search done" in messages
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)
    # the thread is kept in the database, like any run's
    shown = run_cli("threads", cwd=agents, env={"AGENTCTL_HOME": str(tmp_path / "home")})
    assert thread_id in shown.stdout


async def test_an_approval_comes_back_as_a_tool_error(agents: Path, tmp_path: Path) -> None:
    async with stdio_session(agents, "showcase.yaml", tmp_path=tmp_path) as session:
        result = await session.call_tool("showcase", {"message": "Write the release notes"})
    assert result.isError
    text = text_of(result)
    thread_id = (result.meta or {})["agentctl/thread_id"]
    spec = agents / "showcase.yaml"
    assert text.startswith(
        "showcase stopped: 1 tool call needs approval. showcase wants to call write_file (call "
    )
    db = tmp_path / "home" / "agentctl.db"  # AGENTCTL_HOME is set: the command names it
    assert (
        f"The thread {thread_id} waits: a person decides with `agentctl run {spec} --db {db} "
        f"--thread {thread_id} --approve` (or --reject"
    ) in text
    assert "or serve with --auto-approve" in text
    # ... and the command it names answers it, from anywhere
    command = text.split("a person decides with `")[1].split("`")[0].split()
    assert command[:2] == ["agentctl", "run"]
    answered = run_cli(*command[1:], "--quiet", cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert SHOWCASE_FINAL in answered.stdout


async def test_auto_approve_runs_to_the_answer(agents: Path, tmp_path: Path) -> None:
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with stdio_session(
        agents, "showcase.yaml", "--auto-approve", tmp_path=tmp_path
    ) as session:
        result = await session.call_tool(
            "showcase", {"message": "Write the release notes"}, progress_callback=on_progress
        )
    assert not result.isError, text_of(result)
    assert SHOWCASE_FINAL in text_of(result)
    assert "showcase: approved write_file (--auto-approve)" in seen
    assert "reviewer: model replied" in seen  # the subagent's steps come too
    assert (agents / "workspace" / "showcase" / "RELEASE_NOTES.md").is_file()


def test_a_bad_agent_file_stops_everything_before_serving(agents: Path) -> None:
    (agents / "broken.yaml").write_text("version: 1\nname: broken\nmodle: x\n")
    result = run_cli("mcp", "serve", "showcase.yaml", "broken.yaml", cwd=agents, input="")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "broken.yaml:3:1: modle: unknown key" in result.stderr
    assert "serving" not in result.stderr


# --------------------------------------------------------------------------- streamable HTTP


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module: one test runs an agent, the other is refused before any."""
    folder = tmp_path_factory.mktemp("mcp-http")
    command = ["mcp", "serve", "showcase.yaml", "docs.yaml", "--http", "0", "--auto-approve"]
    process = subprocess.Popen(
        [sys.executable, "-m", "runner", *command],
        cwd=_copy_agents(folder),
        env=server_env(folder),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"at (http://127\.0\.0\.1:\d+/mcp) ", line)
        assert found, line + process.stderr.read()
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_streamable_http_lists_and_calls(http_server: str) -> None:
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with (
        streamable_http_client(http_server) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        result = await session.call_tool(
            "showcase", {"message": "Write the release notes"}, progress_callback=on_progress
        )
    assert tools == ["docs", "showcase"]
    assert not result.isError, text_of(result)
    assert SHOWCASE_FINAL in text_of(result)
    assert "showcase: calling write_file" in seen


def test_streamable_http_refuses_other_hosts_origins_and_non_json(http_server: str) -> None:
    """The same guard as `agentctl serve` (`runner.serve.guard`): DNS rebinding, a page of
    another origin (even another port of this machine), a JSON body sent as text/plain."""
    import httpx

    port = http_server.split(":")[2].split("/")[0]
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers, status in (
        ({"Host": f"evil.example:{port}"}, 421),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": f"http://127.0.0.1:{int(port) + 1}"}, 403),
        ({"Content-Type": "text/plain"}, 415),
    ):
        reply = httpx.post(
            http_server, content=json.dumps(initialize), headers={**accept, **headers}
        )
        assert reply.status_code == status, (headers, reply.text)
        assert "access-control-allow-origin" not in reply.headers
    same = httpx.post(
        http_server,
        json=initialize,
        headers={**accept, "Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
    )
    assert same.status_code == 200, same.text


def test_vars_become_optional_arguments(tmp_path: Path) -> None:
    from runner.serve.mcp import AgentTools

    (tmp_path / "a.yaml").write_text(
        "version: 1\nname: greeter\ndescription: Greets\nmodel: replay:a.cassette.yaml\n"
        "prompt: Greet {{ vars.who }} {{ vars.times }} times.\n"
        "vars: {who: world, times: 2}\n"
    )
    (tmp_path / "a.cassette.yaml").write_text(
        "version: 1\nagents:\n  greeter:\n    - content: Hello!\n"
    )
    served = AgentTools.load([tmp_path / "a.yaml"], vars={"times": 3}, db=str(tmp_path / "t.db"))
    try:
        schema = served.tools["greeter"].input_schema()
        assert schema["properties"]["who"] == {
            "type": "string",
            "description": "The agent's template variable `who` (default: 'world').",
            "default": "world",
        }
        assert schema["properties"]["times"]["default"] == 3  # --var overrides the default
        result = served.call("greeter", {"message": "hi", "who": "Ada"})
        assert not result.isError and result.content[0].text == "Hello!"
        thread = result.meta["agentctl/thread_id"]
        settings = served.home.settings(thread)
        assert json.loads(json.dumps(settings.vars)) == {"times": 3, "who": "Ada"}
    finally:
        served.close()


def test_a_port_in_use_is_refused(agents: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("mcp", "serve", "showcase.yaml", "--http", str(port), cwd=agents)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert "Traceback" not in result.stderr


def test_without_the_mcp_extra_it_says_what_to_install(
    agents: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from runner.cli import main

    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(SystemExit) as exit_:
        main(["mcp", "serve", str(agents / "showcase.yaml")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "error: `agentctl mcp serve` needs the `mcp` extra: pip install 'agentctl[mcp]'\n"
    )


def test_typed_inputs_become_arguments_and_questions_are_left_to_a_person(
    tmp_path: Path,
) -> None:
    from runner.serve.mcp import AgentTools

    (tmp_path / "a.yaml").write_text(
        "version: 1\nname: briefer\ndescription: Briefs\nmodel: replay:a.cassette.yaml\n"
        "prompt: Brief on {{ vars.topic }} in {{ vars.depth }} points.\n"
        "ask_user: true\n"
        "inputs:\n"
        "  topic: {type: string, required: true}\n"
        "  depth: {type: integer, default: 2}\n"
        "  notes: {type: file}\n"
    )
    (tmp_path / "a.cassette.yaml").write_text(
        "version: 1\nagents:\n  briefer:\n"
        "    - content: Asking.\n"
        "      tool_calls: [{name: ask_user, args: {question: How long?, choices: [short, long]}}]\n"
        "    - content: Briefed.\n"
    )
    served = AgentTools.load([tmp_path / "a.yaml"], db=str(tmp_path / "t.db"), auto_approve=True)
    try:
        schema = served.tools["briefer"].input_schema()
        assert schema["required"] == ["message", "topic"]
        assert schema["properties"]["depth"] == {"type": "integer", "default": 2}
        assert "notes" not in schema["properties"]  # a client may not choose a server file
        result = served.call("briefer", {"message": "go", "topic": "SQLite", "depth": 3})
        assert result.isError  # --auto-approve never answers a question for a person
        text = result.content[0].text
        assert "briefer asks 'How long?' (choices: short, long)" in text
        assert "--answer TEXT" in text
    finally:
        served.close()


# --------------------------------------------------------------------------- workflows

WORKFLOW = """\
version: 1
name: notes
description: Drafts release notes, then asks before publishing.
inputs:
  version: {type: string, required: true}
  notes: {type: file}
state:
  draft: {type: string}
model: replay:wf.cassette.yaml
agents:
  writer:
    prompt: You write release notes.
workflow:
  steps:
    - id: draft
      agent: writer
      input: "Notes for {{ vars.version }}."
      output: draft
    - id: approve
      approval: {question: "Publish?", field: draft}
  output: draft
"""


def _workflow(folder: Path) -> Path:
    (folder / "wf.yaml").write_text(WORKFLOW)
    (folder / "wf.cassette.yaml").write_text(
        "version: 1\nagents:\n  writer:\n    - content: Draft one.\n"
    )
    return folder


async def test_a_workflow_is_a_tool_that_runs_its_steps(tmp_path: Path) -> None:
    folder = _workflow(tmp_path)
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with stdio_session(folder, "wf.yaml", "--auto-approve", tmp_path=tmp_path) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        missing = await session.call_tool("notes", {})
        result = await session.call_tool("notes", {"version": "1.2"}, progress_callback=on_progress)
    assert tools["notes"].description == (
        "Drafts release notes, then asks before publishing. (Runs the workflow on a new "
        "thread; returns its output.)"
    )
    # no `message`; the workflow's inputs (a `file` input excepted) are the arguments
    assert tools["notes"].inputSchema == {
        "type": "object",
        "properties": {"version": {"type": "string"}},
        "required": ["version"],
    }
    assert missing.isError and "'version' is a required property" in text_of(missing)
    assert not result.isError, text_of(result)
    assert text_of(result) == "Draft one."
    assert "step draft: started" in seen
    assert "writer: model replied" in seen
    assert "notes: approved approve (--auto-approve)" in seen
    assert seen.index("step draft: started") < seen.index("writer: model replied")


async def test_a_workflow_waiting_for_approval_names_the_command(tmp_path: Path) -> None:
    folder = _workflow(tmp_path)
    async with stdio_session(folder, "wf.yaml", tmp_path=tmp_path) as session:
        result = await session.call_tool("notes", {"version": "1.2"})
    assert result.isError
    text = text_of(result)
    thread_id = (result.meta or {})["agentctl/thread_id"]
    assert text.startswith("notes stopped: 1 tool call needs approval."), text
    command = text.split("a person decides with `")[1].split("`")[0].split()
    assert command[:2] == ["agentctl", "run"] and thread_id in command
    answered = run_cli(*command[1:], "--quiet", cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert "Draft one." in answered.stdout
