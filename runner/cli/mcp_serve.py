"""`agentctl mcp serve`: agent files as the tools of an MCP server (see `runner.serve.mcp`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from runner.cli.options import otel_options

if TYPE_CHECKING:
    from runner.serve.mcp import AgentTools


@click.group(short_help="Serve agents as MCP tools (stdio or streamable HTTP).")
def mcp() -> None:
    """Model Context Protocol: agents as tools for MCP clients (Claude Desktop, Claude Code,
    IDEs, other agents)."""


@mcp.command(short_help="Serve agent files as MCP tools.")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp (0: any free port, printed at "
    "start) instead of stdio.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="With --http: the address.")
@click.option(
    "--auto-approve",
    is_flag=True,
    help="Approve every tool call that asks for approval (else the call ends with an error "
    "naming the thread that waits).",
)
@click.option("--model", metavar="MODEL", help="Run every agent with this model instead.")
@click.option(
    "--var", "vars_", multiple=True, metavar="KEY=VALUE", help="Override a template variable."
)
@click.option(
    "--db",
    metavar="PATH",
    help="Thread database (default $AGENTCTL_HOME/agentctl.db), where each call's thread is kept.",
)
@otel_options
def serve(
    paths: tuple[str, ...],
    http_port: int | None,
    host: str,
    auto_approve: bool,
    model: str | None,
    vars_: tuple[str, ...],
    db: str | None,
) -> int:
    """Serve the agents in PATHS (files, or folders of them; default `agents`) as the tools of
    an MCP server, over stdio (for a client that starts it) or, with --http PORT, streamable
    HTTP. Every file is validated and built first: any problem is printed, located, and
    nothing starts.

    Each agent is one tool named after its `name`, with its `description`, a `message`
    argument and its template `vars` as optional arguments. A call runs the agent on a new
    thread and returns its final answer; model replies and tool calls are sent as progress
    notifications when the client asks for them. A call that stops for approval returns a
    tool error with the `agentctl run ... --thread ID` command that answers it, unless
    --auto-approve.

    A workflow file is a tool too: its arguments are the workflow's inputs and vars (no
    `message`); a call runs its steps on a new thread and returns its output, each step's
    start and end sent as progress; an approval step stops the call as an agent's does.
    """
    import anyio

    from runner.cli.options import parse_vars
    from runner.serve.mcp import (
        AgentTools,
        bind,
        build_server,
        require_mcp,
        serve_http,
        serve_stdio,
    )

    require_mcp()
    agents = AgentTools.load(
        paths or ("agents",),
        model=model,
        vars=parse_vars(vars_),
        db=db,
        auto_approve=auto_approve,
    )
    try:
        server = build_server(agents)
        from runner.cli import startup

        startup.started()  # what serving the calls makes is what the collector looks at
        if http_port is None:
            click.echo(f"serving {_names(agents)} over stdio (MCP)", err=True)
            anyio.run(serve_stdio, server)
        else:
            sock = bind(host, http_port)
            bound_host, bound_port = sock.getsockname()[:2]
            shown = f"[{bound_host}]" if ":" in bound_host else bound_host
            click.echo(
                f"serving {_names(agents)} at http://{shown}:{bound_port}/mcp (MCP streamable "
                "HTTP; Ctrl-C stops)",
                err=True,
            )
            anyio.run(serve_http, server, sock)
    except KeyboardInterrupt:
        pass
    finally:
        agents.close()
    return 0


def _names(agents: AgentTools) -> str:
    names = sorted(agents.tools)
    return f"{len(names)} agent{'s' if len(names) != 1 else ''} ({', '.join(names)})"
