"""`agentctl serve`: agent files behind the LangGraph Agent Server API (see `runner.serve`)."""

from __future__ import annotations

import signal
from types import FrameType

import click

from runner.cli.options import otel_options


@click.command(short_help="Serve agents over the LangGraph Agent Server API.")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=2024,
    show_default=True,
    help="Port to listen on (0: any free port, printed at start).",
)
@click.option(
    "--db",
    metavar="URL",
    envvar="DATABASE_URL",
    help="postgresql:// URL of the database the production engine (Aegra) keeps threads, runs, "
    "checkpoints and the store in (default $DATABASE_URL; needs Python 3.12+). Without it the "
    "in-memory engine serves.",
)
@click.option(
    "--redis",
    metavar="URL",
    envvar="REDIS_URL",
    help="redis:// URL of the run queue shared by every server on the same --db (default "
    "$REDIS_URL): runs are spread over the servers, and a run whose server dies is finished "
    "by another. With --db only.",
)
@click.option(
    "--dev",
    is_flag=True,
    help="In-memory engine even when $DATABASE_URL is set, and a run that makes a blocking "
    "call on the event loop fails (as under `langgraph dev`).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1),
    default=10,
    show_default=True,
    help="Runs executed at once by this process (with --db but no --redis, runs are not "
    "queued: each starts when it is made).",
)
@click.option(
    "--shared-workspace",
    is_flag=True,
    help="Serve agents whose filesystem/local_shell root_dir has no {thread_id}: every thread "
    "then shares that folder.",
)
@click.option(
    "--var", "vars_", multiple=True, metavar="KEY=VALUE", help="Override a template variable."
)
@otel_options
def serve(
    paths: tuple[str, ...],
    host: str,
    port: int,
    db: str | None,
    redis: str | None,
    dev: bool,
    jobs: int,
    shared_workspace: bool,
    vars_: tuple[str, ...],
) -> int:
    """Serve agent files over the LangGraph Agent Server API (assistants, threads, runs,
    streaming, interrupts, store), for `langgraph-sdk`, RemoteGraph, useStream and
    agent-chat-ui. PATHS are agent files or folders of them (default: `agents`), all validated
    first: any problem is printed, located, and nothing starts.

    Each agent is a graph (and a default assistant) named after its `name`. An assistant's
    config may set `configurable.vars` and `configurable.model`. An edited agent file takes
    effect for new runs without a restart. Stop with Ctrl-C (or SIGTERM).

    Engines: in memory (no --db, or --dev), or Aegra on Postgres (--db), which with --redis
    shares runs between every server on the same database and Redis.

    With --otel (or OTEL_EXPORTER_OTLP_ENDPOINT set) each run is sent as one OpenTelemetry
    trace.

    A web page at `/` on the same port runs and watches the agents: chat, approvals,
    subagents, todos and files. With --dev, a file with problems is listed there with them
    (and served once it is fixed and saved) instead of stopping the start.
    """
    from runner.cli.options import parse_vars
    from runner.loader import display_path

    variables = parse_vars(vars_)
    if not dev and redis and not db:
        raise click.BadParameter(
            "needs --db: the run queue is shared through the database", param_hint="--redis"
        )
    from runner.serve.engines import Engine

    engine = Engine.choose(database=db, redis=redis, dev=dev)
    from runner.serve.agents import collect_agents

    agents = collect_agents(
        paths or ("agents",), vars=variables, shared_workspace=shared_workspace, keep_broken=dev
    )
    engine.check()
    from runner.serve.factory import GraphFactory
    from runner.serve.graphs import register
    from runner.serve.ports import check_port, free_port

    factory = GraphFactory(base_vars=variables)
    graphs = register(agents, factory)
    if port:
        check_port(host, port)
    else:
        port = free_port(host)
    shown_host = f"[{host}]" if ":" in host else host
    click.echo(
        f"serving at http://{shown_host}:{port} ({engine.describe()}; Ctrl-C stops)", err=True
    )
    for agent in agents:
        click.echo(f"  {agent.name:<20} {display_path(agent.path)}", err=True)
        for problem in agent.problems:  # --dev only: fix and save the file, no restart needed
            click.echo(f"    {problem}", err=True)
    from runner.serve.thread_guard import guard_middleware
    from runner.web.app import WebAgent, create_app

    persist = None
    if engine.database is None:
        from runner.serve.inmem import persist_threads

        persist = persist_threads
    web = create_app(
        [WebAgent(a.name, a.path) for a in agents],
        graph_for=lambda path: factory.graph(path),
        dev=dev,
        vars=variables,
        middleware=[
            guard_middleware([(a.name, a.path) for a in agents], vars=variables, persist=persist)
        ],
    )
    # SIGTERM (how service managers and containers stop a process) stops cleanly like Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        engine.run(
            graphs,
            {a.name: a.description for a in agents},
            host=host,
            port=port,
            jobs=jobs,
            web_app=web,
        )
    except KeyboardInterrupt:
        pass
    finally:
        factory.close()
    click.echo("stopped", err=True)
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
