"""`agentctl serve`: agent files behind the LangGraph Agent Server API (see `runner.serve`)."""

from __future__ import annotations

import signal
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from runner.cli.options import otel_options

if TYPE_CHECKING:
    from runner.serve.auth import AuthSettings


STARTED_AT_THE_LATEST = 120.0
"""Seconds after which `serve` lets the collector run again even if it never saw its port
accept a connection (`runner.cli.startup.started_within`)."""


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
    help="With authentication (--api-keys, --auth-jwks): serve agents whose filesystem/"
    "local_shell root_dir has no {thread_id}, so that every user's threads share that folder. "
    "Without authentication (one user) they are served anyway, and the banner names the folder.",
)
@click.option(
    "--api-keys",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="YAML file of the users and their API keys (`keys: [{user: alice, key: ...}]`, or "
    "`sha256: HEX` instead of `key:` so the file holds no secret). Clients send the key as "
    "`x-api-key: KEY` (langgraph-sdk's api_key) or `Authorization: Bearer KEY`.",
)
@click.option(
    "--auth-jwks",
    metavar="URL",
    help="OpenID Connect: the provider's key set (JWKS) URL; bearer tokens it signed are "
    "accepted, and the user is their `sub`. Needs --auth-issuer and --auth-audience.",
)
@click.option(
    "--auth-issuer", metavar="ISS", help="OpenID Connect: the `iss` every token must carry."
)
@click.option(
    "--auth-audience",
    metavar="AUD",
    help="OpenID Connect: the `aud` every token must carry (this server's client id).",
)
@click.option(
    "--admin",
    "admins",
    multiple=True,
    metavar="USER",
    help="A user (key user or token `sub`) who may see every user's threads (repeatable).",
)
@click.option(
    "--no-auth",
    is_flag=True,
    help="Serve without authentication on an address other than loopback (refused "
    "otherwise): anyone who reaches the port can use every agent and thread.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    callback=lambda ctx, param, values: _checked("check_host", values),
    help="Also answer requests whose Host header is NAME (any port) or NAME:PORT, such as the "
    "public name of a reverse proxy in front (repeatable). Others are refused (421): a web "
    "page could reach the server through a name of its own (DNS rebinding).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="ORIGIN",
    callback=lambda ctx, param, values: _checked("check_origin", values),
    help="Let pages of ORIGIN (scheme://host[:port], e.g. http://localhost:5173 for a dev "
    "front end) call the server from the browser (repeatable; never `*`). Requests from any "
    "other origin are refused (403).",
)
@click.option(
    "--max-body",
    metavar="SIZE",
    default="10MB",
    show_default=True,
    callback=lambda ctx, param, value: _checked("parse_size", (value,))[0],
    help="Largest request body, in bytes or with KB, MB, GB (powers of 1024); a larger one "
    "is refused (413) before it is read.",
)
@click.option(
    "--edit",
    is_flag=True,
    help="Let the page edit the agent files of the served folder: a YAML editor with "
    "validate's problems as you type, completion and hover, a form of the common settings, "
    "new agents, try, record and test, saves that show the diff first (at /edit). The "
    "folder may be empty. With users, admins only. See docs/web-editor.md.",
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
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    max_body: int,
    api_keys: str | None,
    auth_jwks: str | None,
    auth_issuer: str | None,
    auth_audience: str | None,
    admins: tuple[str, ...],
    no_auth: bool,
    edit: bool,
    vars_: tuple[str, ...],
) -> int:
    """Serve agent files over the LangGraph Agent Server API (assistants, threads, runs,
    streaming, interrupts, store), for `langgraph-sdk`, RemoteGraph, useStream and
    agent-chat-ui. PATHS are agent files or folders of them (default: `agents`), all validated
    first: any problem is printed, located, and nothing starts. Agent files of other tools are
    served too (`serve .claude/agents --shared-workspace`: they work on the project folder).

    Each agent is a graph (and a default assistant) named after its `name`. An assistant's
    config may set `configurable.vars` and `configurable.model`. An edited agent file takes
    effect for new runs without a restart. Stop with Ctrl-C (or SIGTERM).

    Engines: in memory (no --db, or --dev), or Aegra on Postgres (--db), which with --redis
    shares runs between every server on the same database and Redis.

    Users: with --api-keys and/or --auth-jwks, every API request (and the page's side API)
    needs a key or a token, checked by the engine's own auth hook; a refusal is a 401 that
    names no user. Without them the server answers anyone, so it listens only on loopback
    unless --no-auth says so.

    With --otel (or OTEL_EXPORTER_OTLP_ENDPOINT set) each run is sent as one OpenTelemetry
    trace.

    A web page at `/` on the same port runs and watches the agents: chat, approvals,
    subagents, todos and files. With --dev, a file with problems is listed there with them
    (and served once it is fixed and saved) instead of stopping the start.

    With --edit, the page at `/edit` also writes agents: a YAML editor with validate's
    problems as you type, a form of the common settings, new agents, try, record and test. It
    edits only the served folder; with users, only admins may. An agent made, renamed or
    deleted there is served (or no longer) at once, without a restart.

    Browser safety is always on: a request for another Host, from another origin's page, or
    with a body that is not JSON is refused, so a web page the user visits cannot drive the
    agents. --allow-host and --allow-origin widen it; see docs/team-browser-safety.md.
    """
    from runner.cli.options import parse_vars
    from runner.errors import display_path

    variables = parse_vars(vars_)
    if not dev and redis and not db:
        raise click.BadParameter(
            "needs --db: the run queue is shared through the database", param_hint="--redis"
        )
    settings = _auth_settings(
        host,
        api_keys=api_keys,
        jwks=auth_jwks,
        issuer=auth_issuer,
        audience=auth_audience,
        admins=admins,
        no_auth=no_auth,
    )
    edited = _edited_folder(paths or ("agents",)) if edit else None
    from runner.serve.engines import Engine

    engine = Engine.choose(database=db, redis=redis, dev=dev)
    from runner.serve.agents import collect_agents

    # With no authentication the server has one user: agents whose threads share a workspace
    # folder are that person's to run, and the banner says which folders are shared. With users,
    # one user's threads would write in the others' folder: refused unless --shared-workspace.
    shared_workspace = shared_workspace or settings is None
    agents = collect_agents(
        paths or ("agents",),
        vars=variables,
        shared_workspace=shared_workspace,
        keep_broken=dev,
        allow_empty=edit,
    )
    engine.check()
    if settings is not None and settings.jwt is not None:
        from runner.serve.auth import check_jwks

        check_jwks(settings.jwt.jwks_url)
    from runner.serve.factory import GraphFactory
    from runner.serve.graphs import register
    from runner.serve.ports import check_port, free_port

    factory = GraphFactory(base_vars=variables)
    graphs = register(agents, factory)
    served: Any = [(a.name, a.path) for a in agents]
    live = None
    if edited is not None:
        from runner.serve.live import LiveAgents

        targets = tuple(Path(t) for t in (paths or ("agents",)))
        live = LiveAgents(
            agents,
            find=lambda: collect_agents(
                targets,
                vars=variables,
                shared_workspace=shared_workspace,
                keep_broken=True,
                allow_empty=True,
            ),
            factory=factory,
            engine=engine,
            targets=targets,
        )
        served = live
    if port:
        check_port(host, port)
    else:
        port = free_port(host)
    shown_host = f"[{host}]" if ":" in host else host
    banner = [
        f"serving at http://{shown_host}:{port} ({engine.describe()}; Ctrl-C stops)",
        f"  {_describe_auth(settings)}",
    ]
    for agent in agents:
        shown = display_path(agent.path)
        banner.append(f"  {agent.name:<20} {shown}")
        if agent.shared:
            banner.append(f"    its threads share {', '.join(agent.shared)}")
        # --dev only: fix and save the file, no restart needed
        banner += [f"    {_in_file(problem, shown)}" for problem in agent.problems]
    from runner.cli import startup
    from runner.serve.ports import when_listening

    def listening() -> None:
        # Said once the port accepts connections: a browser opened at once is not refused.
        click.echo("\n".join(banner), err=True)
        # The engine loaded the graphs before it bound the port: what the server's runs
        # make is what the collector should look at from now on (`startup.HELD`).
        startup.started()

    when_listening(host, port, listening)
    # ... and at the latest after a while: should the port never be seen to accept (a firewall
    # between the process and its own address), the server still collects its garbage
    startup.started_within(STARTED_AT_THE_LATEST)
    from runner.serve.guard import Guard
    from runner.serve.thread_guard import guard_middleware, thread_state
    from runner.web.app import WebAgent, create_app

    guard = Guard.serving(
        host, port, allow_hosts=allow_hosts, allow_origins=allow_origins, max_body=max_body
    )
    persist = None
    if engine.database is None:
        from runner.serve.inmem import persist_threads

        persist = persist_threads
    authenticate_with = owns = None
    if settings is not None:
        from runner.backends import scope_store_by_user
        from runner.serve.auth import authenticate, publish
        from runner.serve.thread_guard import thread_visible

        publish(settings)
        scope_store_by_user()  # each user's runs see their own store (runner.serve.ownership)
        authenticate_with, owns = authenticate, thread_visible
    pages: list[Any] = []
    api: list[Any] = []
    tries = None
    if edited is not None:
        from runner.edit import AgentsFolder, edit_routes
        from runner.edit.trying import TryRuns

        tries = TryRuns()  # the editor's tries: their threads, apart from the server's
        pages, api = edit_routes(
            AgentsFolder(edited),
            authenticated=settings is not None,
            runs=tries,
            refresh=None if live is None else live.refresh,
        )
        banner.append(f"  editing {display_path(edited)} at http://{shown_host}:{port}/edit")
    web = create_app(
        live if live is not None else [WebAgent(a.name, a.path) for a in agents],
        # for the tools' schemas: inputs are given by runs, not needed to read them
        graph_for=lambda path: factory.graph(path, require_inputs=False),
        dev=dev,
        edit=edited is not None,
        vars=variables,
        authenticate=authenticate_with,
        thread_visible=owns,
        thread_state=thread_state,
        middleware=[guard_middleware(served, vars=variables, persist=persist)],
        routes=pages,
        api_routes=api,
        refresh=None if live is None else live.refresh,
        editable=None if edited is None else _in_folder(edited),
    )
    if engine.database is not None:  # the in-memory engine has A2A of its own
        from runner.serve.a2a_server import mount_a2a

        here = "127.0.0.1" if host in ("0.0.0.0", "::") else shown_host
        mount_a2a(
            web,
            agents,
            vars=variables,
            base_url=f"http://{shown_host}:{port}",
            api_url=f"http://{here}:{port}",
            authenticate=authenticate_with,
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
            guard=guard,
            authenticated=settings is not None,
            served=live,
        )
    except KeyboardInterrupt:
        pass
    finally:
        factory.close()
        if tries is not None:
            tries.close()
    click.echo("stopped", err=True)
    return 0


def _in_folder(folder: Path) -> Any:
    """`file` -> its path in the edited `folder` (how the editor opens it), None outside it."""
    import os

    root = os.path.realpath(folder)

    def editable(file: Path) -> str | None:
        real = os.path.realpath(file)
        if not real.startswith(root + os.sep) or not real.endswith((".yaml", ".yml")):
            return None
        return Path(os.path.relpath(real, root)).as_posix()

    return editable


def _auth_settings(
    host: str,
    *,
    api_keys: str | None,
    jwks: str | None,
    issuer: str | None,
    audience: str | None,
    admins: tuple[str, ...],
    no_auth: bool,
) -> AuthSettings | None:
    """Who may come in, from the flags (None: anyone), refusing what would leave a server
    open to the network by accident."""
    oidc = {"--auth-jwks": jwks, "--auth-issuer": issuer, "--auth-audience": audience}
    given = [flag for flag, value in oidc.items() if value]
    if no_auth:
        used = given + (["--api-keys"] if api_keys else []) + (["--admin"] if admins else [])
        if used:
            raise click.UsageError(f"--no-auth cannot be used with {', '.join(used)}")
    if given and len(given) < len(oidc):
        missing = ", ".join(flag for flag in oidc if flag not in given)
        raise click.UsageError(f"{', '.join(given)} needs {missing} too")
    if not api_keys and not given:
        if admins:
            raise click.UsageError("--admin needs users: give --api-keys or --auth-jwks")
        from runner.serve.auth import is_loopback

        if not no_auth and not is_loopback(host):
            raise click.UsageError(
                f"refusing to serve on {host} without authentication: anyone who can reach it "
                "could run every agent and read every thread. Give --api-keys FILE (or "
                "--auth-jwks URL --auth-issuer ISS --auth-audience AUD), or --no-auth if the "
                "network in front of it does the checking."
            )
        return None
    from runner.serve.auth import AuthSettings, JwtSettings, read_keys_file

    keys = read_keys_file(api_keys) if api_keys else ()
    if jwks:
        _check_jwks_url(jwks)
    jwt = JwtSettings(jwks, issuer, audience) if jwks and issuer and audience else None
    if jwt is None:
        users = {user for user, _ in keys}
        for admin in admins:
            if admin not in users:
                raise click.BadParameter(
                    f"{admin!r} has no key in {api_keys}", param_hint="--admin"
                )
    return AuthSettings(keys=keys, jwt=jwt, admins=frozenset(admins))


def _check_jwks_url(url: str) -> None:
    """An https:// URL (http:// only on this machine: keys fetched in clear could be swapped)."""
    from urllib.parse import urlsplit

    from runner.serve.auth import is_loopback

    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return
    raise click.BadParameter(
        f"expected an https:// URL (http:// on loopback only), found {url!r}",
        param_hint="--auth-jwks",
    )


def _describe_auth(settings: AuthSettings | None) -> str:
    """Who may come in, for the banner."""
    if settings is None:
        return "no authentication: anyone who reaches this address may use it"
    ways = []
    if settings.keys:
        ways.append(f"API keys of {len(settings.keys)} users")
    if settings.jwt is not None:
        ways.append(f"tokens from {settings.jwt.issuer}")
    admins = f"; admins: {', '.join(sorted(settings.admins))}" if settings.admins else ""
    return f"authentication: {' or '.join(ways)}{admins}"


def _checked(check: str, values: Iterable[str]) -> tuple[Any, ...]:
    """Each value through `runner.serve.guard`'s `check` (imported only when the option is
    given: not for --help); its ValueError is the option's usage error (exit 2)."""
    from runner.serve import guard

    try:
        return tuple(getattr(guard, check)(value) for value in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _in_file(problem: Any, shown: str) -> str:
    """A located problem printed under the line of the file `shown`: without the file's name
    when it is that file (it is printed once)."""
    if problem.file != shown:
        return str(problem)
    where = f"{problem.line}:{problem.col}: " if problem.line else ""
    return f"{where}{problem.path}: {problem.message}" if problem.path else where + problem.message


def _edited_folder(paths: Iterable[str]) -> Path:
    """The one folder `--edit` edits: the folder served, or the folder of the files served."""

    folders = {Path(p).resolve() if Path(p).is_dir() else Path(p).resolve().parent for p in paths}
    if len(folders) != 1:
        raise click.BadParameter(
            "edits one folder: serve one folder (or files of one folder)", param_hint="--edit"
        )
    return folders.pop()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
