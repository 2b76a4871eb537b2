"""MCP servers as tools, against real FastMCP servers (tests/data/mcp/server.py): over stdio in a
subprocess, and over streamable HTTP and SSE on 127.0.0.1. Replay cassettes play the model."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import runner
from runner.agent.resolve import Resolver
from runner.errors import ResolutionError
from runner.events import Final, Interrupt, ToolResult
from runner.run import Decision, Session
from tests.conftest import AGENTS, ROOT, run_cli

SERVER = ROOT / "tests" / "data" / "mcp" / "server.py"

pytestmark = pytest.mark.slow


def stdio_server(**settings: Any) -> dict[str, Any]:
    return {"name": "notes", "command": sys.executable, "args": [str(SERVER)], **settings}


def write_agent(
    tmp_path: Path, servers: list[dict[str, Any]], replies: list[dict[str, Any]], **spec: Any
) -> Path:
    """An agent using `servers`, whose replay cassette holds `replies`."""
    (tmp_path / "agent.cassette.yaml").write_text(yaml.safe_dump(replies), encoding="utf-8")
    path = tmp_path / "agent.yaml"
    data = {
        "name": "notes",
        "model": "replay:agent.cassette.yaml",
        "todos": False,
        "tools": [{"mcp": server} for server in servers],
        **spec,
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": tool, "args": args}]}


def starts(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def start_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "starts.log"
    monkeypatch.setenv("MCP_TEST_STARTS", str(log))
    return log


# --------------------------------------------------------------------------- stdio


def test_stdio_server_starts_once_and_its_results_reach_the_model(
    tmp_path: Path, start_log: Path
) -> None:
    path = write_agent(
        tmp_path,
        [stdio_server(env={"MCP_TEST_STARTS": "${MCP_TEST_STARTS}"}, prefix=True)],
        [
            call("notes_search", query="embedded"),
            call("notes_read_note", name="sqlite"),
            {
                "content": "",
                "tool_calls": [
                    {"name": "notes_search", "args": {"query": "analytics"}},
                    {"name": "notes_search", "args": {"query": "nothing"}},
                ],
            },
            {"content": "SQLite is embedded."},
        ],
    )
    with Session(path, db=tmp_path / "db.sqlite") as session:
        result = session.run("Which database is embedded?")
        history = session.values(result.thread_id)["messages"]
        assert len(starts(start_log)) == 1
    results = [(e.name, e.content, e.status) for e in result.events if isinstance(e, ToolResult)]
    # The last two ran in parallel: they may finish in either order.
    assert results[:2] + sorted(results[2:]) == [
        ("notes_search", "sqlite", "success"),
        ("notes_read_note", "SQLite is an embedded database.", "success"),
        ("notes_search", "duckdb", "success"),
        ("notes_search", "nothing found", "success"),
    ]
    assert sorted(m.text for m in history if m.type == "tool") == sorted(r[1] for r in results)
    assert result.content == "SQLite is embedded."
    [pid] = starts(start_log)
    assert not is_running(pid), "the server outlived the session"


def test_errors_and_a_crash_reach_the_model_and_the_run_finishes(
    tmp_path: Path, start_log: Path
) -> None:
    path = write_agent(
        tmp_path,
        [stdio_server(env={"MCP_TEST_STARTS": "${MCP_TEST_STARTS}"})],
        [
            call("fail", why="the index is missing"),
            call("crash"),
            call("search", query="sqlite"),
            {"content": "The notes server is down."},
        ],
    )
    done = run_cli("run", str(path), "look it up", "--output", "jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [(e["name"], e["content"], e["status"]) for e in events if e["type"] == "tool_result"]
    assert results == [
        ("fail", "Error executing tool fail: the index is missing", "error"),
        ("crash", "Error: MCP server 'notes' is not running (it exited with code 1)", "error"),
        ("search", "Error: MCP server 'notes' is not running (it exited with code 1)", "error"),
    ]
    assert events[-1]["type"] == "final" and events[-1]["content"] == "The notes server is down."
    assert len(starts(start_log)) == 1


def test_include_exclude_prefix_env_and_approvals(tmp_path: Path) -> None:
    server = stdio_server(
        env={"MCP_TEST_SECRET": "${SECRET_FOR_MCP}"},
        include=["search", "whoami", "nap"],
        exclude=["nap"],
        prefix="n_",
    )
    path = write_agent(
        tmp_path,
        [server],
        [call("n_whoami"), call("n_search", query="analytics"), {"content": "Done."}],
        interrupt_on={"n_search": True},
    )
    os.environ["SECRET_FOR_MCP"] = "s3cret"
    try:
        session = Session(path, db=tmp_path / "db.sqlite")
    finally:
        del os.environ["SECRET_FOR_MCP"]
    with session:
        assert [t.name for t in session.resolved.tools] == ["n_search", "n_whoami"]
        paused = session.run("go")
        whoami = next(e for e in paused.events if isinstance(e, ToolResult))
        assert whoami.content.split()[1] == "s3cret"
        assert isinstance(paused.interrupt, Interrupt)
        assert [(a.name, a.args) for a in paused.interrupt.actions] == [
            ("n_search", {"query": "analytics"})
        ]
        done = session.run(thread_id=paused.thread_id, decisions=[Decision("approve")])
    assert [e.content for e in done.events if isinstance(e, ToolResult)] == ["duckdb"]
    assert done.content == "Done."


def test_a_server_listed_twice_starts_once_and_clashing_names_fail_the_build(
    tmp_path: Path, start_log: Path
) -> None:
    from runner.errors import BuildError

    logged = {"MCP_TEST_STARTS": "${MCP_TEST_STARTS}"}
    path = write_agent(
        tmp_path,
        [
            stdio_server(env=logged, include=["search"]),
            stdio_server(env=logged, include=["search"]),
        ],
        [],
    )
    with pytest.raises(BuildError) as caught:
        Session(path, db=tmp_path / "db.sqlite")
    assert str(caught.value) == (
        "two tools are named 'search'; rename one with `name:` on its `import:` entry, or "
        "`prefix:` on an MCP server"
    )
    [pid] = starts(start_log)
    assert not is_running(pid), "a failed build left the server running"


def test_the_servers_of_an_agent_and_its_subagents_start_side_by_side(tmp_path: Path) -> None:
    """Each server waits, before its handshake, for the other two to have started: started
    one after another, the first would never finish starting."""
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    env = {"MCP_TEST_MEET": str(meeting), "MCP_TEST_MEET_COUNT": "3"}
    servers = [
        stdio_server(name=name, env=env, include=["search"], prefix=True) for name in ("a", "b")
    ]
    helper = {
        "name": "helper",
        "description": "Searches more",
        "tools": [{"mcp": stdio_server(name="c", env=env, include=["search"], prefix=True)}],
    }
    path = write_agent(tmp_path, servers, [], subagents=[helper])
    resolved = Resolver(with_models=False).resolve(runner.load_spec(path))
    try:
        assert [t.name for t in resolved.tools] == ["a_search", "b_search"]
        assert len(list(meeting.iterdir())) == 3
    finally:
        resolved.close()


def test_a_slow_call_times_out_as_an_error_the_model_sees(tmp_path: Path) -> None:
    path = write_agent(
        tmp_path,
        [stdio_server(timeout=0.3, include=["nap", "search"])],
        [call("nap", seconds=5), call("search", query="sqlite"), {"content": "ok"}],
    )
    with Session(path, db=tmp_path / "db.sqlite") as session:
        result = session.run("go")
    results = [(e.content, e.status) for e in result.events if isinstance(e, ToolResult)]
    assert results == [
        ("Error: MCP tool 'nap' on server 'notes' did not answer within 0.3 s", "error"),
        ("sqlite", "success"),
    ]


async def test_ainvoke_from_the_callers_loop(tmp_path: Path) -> None:
    path = write_agent(
        tmp_path, [stdio_server()], [call("search", query="embedded"), {"content": "sqlite."}]
    )
    resolved = Resolver().resolve(runner.load_spec(path))
    try:
        from runner.agent.build import build_graph

        graph = build_graph(resolved)
        state = await graph.ainvoke({"messages": [{"role": "user", "content": "which?"}]})
    finally:
        resolved.close()
    assert [m.text for m in state["messages"]][-2:] == ["sqlite", "sqlite."]


def test_inspect_starts_lists_and_stops_the_server(tmp_path: Path, start_log: Path) -> None:
    from runner.agent.inspect import describe

    server = stdio_server(env={"MCP_TEST_STARTS": "${MCP_TEST_STARTS}"}, include=["search"])
    info = describe(write_agent(tmp_path, [server], []))
    assert (
        info["tools"][0] == "search" and "grep" in info["tools"]
    )  # user tools, then the harness's
    assert info["tool_details"][0]["description"] == "Find the notes that mention a word."
    [pid] = starts(start_log)
    assert not is_running(pid)


def test_the_docs_example_runs_offline(tmp_path: Path) -> None:
    # The example starts `python`: the one running the tests, which has the mcp package.
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    cassette = f"replay:{AGENTS / 'docs.cassette.yaml'}"
    question = "Which databases are embedded?"
    done = run_cli(
        "run",
        str(AGENTS / "docs.yaml"),
        question,
        "--model",
        cassette,
        "--output",
        "jsonl",
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [e["content"] for e in events if e["type"] == "tool_result"]
    assert results[0].splitlines() == [
        "duckdb.md:3: DuckDB is an embedded analytical (OLAP) database. It runs inside the host "
        "process, like SQLite,",
        "sqlite.md:3: SQLite is an embedded, serverless SQL database engine. The whole database "
        "is a single file.",
    ]
    assert sorted(r.splitlines()[0] for r in results[1:]) == ["# DuckDB", "# SQLite"]
    assert events[-1]["type"] == "final" and "(duckdb.md)" in events[-1]["content"]


# --------------------------------------------------------------------------- failures to start


def resolve_error(path: Path) -> str:
    with pytest.raises(ResolutionError) as caught:
        Resolver(with_models=False).resolve(runner.load_spec(path))
    return str(caught.value)


def test_a_server_that_exits_at_start_is_a_located_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    crash = "import sys; print('missing config file', file=sys.stderr); sys.exit(3)"
    path = write_agent(
        tmp_path, [{"name": "docs", "command": sys.executable, "args": ["-c", crash]}], []
    )
    assert resolve_error(path) == (
        "agent.yaml:6:5: tools[0].mcp: MCP server 'docs' failed to start: it exited with code 3: "
        "missing config file"
    )


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        ({"command": "no-such-mcp-server-xyz"}, "command not found: no-such-mcp-server-xyz"),
        (
            {"url": "http://127.0.0.1:9/mcp"},
            "cannot connect to http://127.0.0.1:9/mcp: ConnectError: All connection attempts failed",
        ),
    ],
)
def test_start_failures_name_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: dict[str, Any], reason: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_agent(tmp_path, [{"name": "docs", **server}], [])
    assert resolve_error(path) == (
        f"agent.yaml:6:5: tools[0].mcp: MCP server 'docs' failed to start: {reason}"
    )


def test_the_cli_exits_2_when_a_server_cannot_start(tmp_path: Path) -> None:
    path = write_agent(tmp_path, [{"name": "docs", "command": "./missing-server"}], [])
    done = run_cli("run", str(path), "hi", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"agent.yaml:6:5: tools[0].mcp: MCP server 'docs' failed to start: command not found: "
        f"{tmp_path / 'missing-server'}"
    )


def test_include_of_a_missing_tool_lists_what_the_server_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_log: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_agent(
        tmp_path,
        [
            stdio_server(
                env={"MCP_TEST_STARTS": "${MCP_TEST_STARTS}"}, include=["search", "serch_all"]
            )
        ],
        [],
    )
    assert resolve_error(path) == (
        "agent.yaml:14:7: tools[0].mcp.include[1]: MCP server 'notes' has no tool 'serch_all'; "
        "did you mean 'search'? it has: search, read_note, fail, crash, nap, whoami"
    )
    [pid] = starts(start_log)
    assert not is_running(pid), "a failed resolution left the server running"


STUBBORN = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # deaf to SIGTERM, and it never speaks MCP
with open(sys.argv[1], "a") as log:
    log.write(f"{os.getpid()}\\n")
time.sleep(60)
"""


def test_a_silent_server_times_out_and_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.spec import McpServer
    from runner.tools import mcp

    monkeypatch.setattr(mcp, "STOP_GRACE", 0.2)
    log = tmp_path / "starts.log"
    server = McpServer(name="mute", command=sys.executable, args=["-c", STUBBORN, str(log)])
    with mcp.McpServers(start_timeout=1) as servers, pytest.raises(mcp.McpStartError) as caught:
        servers.start(server)
    assert str(caught.value) == "no answer to the MCP handshake within 1 s"
    [pid] = starts(log)
    assert not is_running(pid), "stdin closed and SIGTERM ignored: SIGKILL should have followed"


def test_tools_called_after_close_report_it(tmp_path: Path) -> None:
    path = write_agent(tmp_path, [stdio_server(include=["search"])], [])
    resolved = Resolver(with_models=False).resolve(runner.load_spec(path))
    [search] = resolved.tools
    assert [block["text"] for block in search.invoke({"query": "embedded"})] == ["sqlite"]
    resolved.close()
    resolved.close()  # idempotent
    message = search.invoke(
        {"type": "tool_call", "name": "search", "args": {"query": "x"}, "id": "1"}
    )
    assert (message.status, message.content) == (
        "error",
        "Error: MCP server 'notes' is not running (it was stopped)",
    )


def test_the_missing_extra_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "langchain_mcp_adapters.tools", None)
    path = write_agent(tmp_path, [stdio_server()], [])
    message = resolve_error(path)
    assert message.startswith("agent.yaml:6:5: tools[0].mcp: MCP servers need the mcp extra")
    assert message.endswith("pip install 'agentctl[mcp]'")


# --------------------------------------------------------------------------- remote


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["http", "sse"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A FastMCP server on 127.0.0.1 over streamable HTTP or SSE: its `mcp:` settings."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), request.param, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the test MCP server did not start") from None
                time.sleep(0.05)
        if request.param == "http":
            yield {"url": f"http://127.0.0.1:{port}/mcp"}
        else:
            yield {"url": f"http://127.0.0.1:{port}/sse", "transport": "sse"}
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_remote_server_tools_reach_the_model(tmp_path: Path, remote: dict[str, Any]) -> None:
    server = {"name": "web", **remote, "headers": {"X-Test": "1"}, "include": ["search", "fail"]}
    path = write_agent(
        tmp_path,
        [{**server, "prefix": True}],
        [
            call("web_search", query="embedded"),
            call("web_fail", why="no access"),
            {"content": "Found it."},
        ],
    )
    with Session(path, db=tmp_path / "db.sqlite") as session:
        result = session.run("which?")
        history = session.values(result.thread_id)["messages"]
    assert [(m.name, m.text, m.status) for m in history if m.type == "tool"] == [
        ("web_search", "sqlite", "success"),
        ("web_fail", "Error executing tool fail: no access", "error"),
    ]
    assert isinstance(result.events[-1], Final) and result.content == "Found it."


def test_per_tool_settings_override_description_and_return_direct(tmp_path: Path) -> None:
    from runner.run import Session

    server = stdio_server(
        include=["search", "whoami"],
        tools={"whoami": {"description": "Say who the server runs as.", "return_direct": True}},
    )
    path = write_agent(tmp_path, [server], [call("whoami")])
    with Session(path, db=tmp_path / "db") as session:
        tools = {t.name: t for t in session.resolved.tools}
        assert (tools["whoami"].description, tools["whoami"].return_direct) == (
            "Say who the server runs as.",
            True,
        )
        assert tools["search"].return_direct is False
        result = session.run("who are you?")
    # return_direct: the tool's result is the answer, with no second model call
    assert result.final is not None and result.final.content != ""
    assert len([e for e in result.events if e.type == "usage"]) == 1


def test_settings_for_a_tool_the_server_lacks_are_located(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_agent(
        tmp_path, [stdio_server(tools={"serch": {"description": "x"}})], [{"content": "x"}]
    )
    with pytest.raises(ResolutionError) as caught:
        runner.build_agent(path)
    assert str(caught.value) == (
        "agent.yaml:12:9: tools[0].mcp.tools.serch: MCP server 'notes' has no tool 'serch'; "
        "did you mean 'search'? it has: search, read_note, fail, crash, nap, whoami"
    )


def test_the_tools_a_server_listed_are_offered_by_the_language_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a build lists an MCP server without `include:`, completion in `interrupt_on` offers
    its tools (prefixed, less `exclude`), for the agent as loaded and as typed."""
    from runner.lsp.features import complete, mcp_tool_names
    from runner.tools.known import known_tools, server_key

    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path / "home"))
    server = stdio_server(prefix=True, exclude=["read_note"])
    path = write_agent(tmp_path, [server], [{"content": "ok"}])
    assert mcp_tool_names(server) == []  # never started here: nothing known
    with Session(path, db=tmp_path / "db.sqlite") as session:
        session.run("hi")
    listed = known_tools(server_key(command=sys.executable, args=[str(SERVER)]))
    assert listed is not None and {"search", "read_note"} <= set(listed)
    assert "notes_search" in mcp_tool_names(server)
    assert "notes_read_note" not in mcp_tool_names(server)

    text = path.read_text(encoding="utf-8") + "interrupt_on:\n  notes_\n"
    line = len(text.splitlines()) - 1
    from runner.load.loader import load_spec

    for specs in ([load_spec(path)], []):
        items = complete(text, path, "agent", line, len("  notes_"), specs)
        labels = [i.label for i in items]
        assert "notes_search" in labels and "notes_read_note" not in labels, labels
