"""Agents as the tools of an MCP server (`agentctl mcp serve`), over stdio or streamable HTTP.

Each agent file is one MCP tool named after the agent's `name`, described by its `description`,
taking a `message` (and, optional, the agent's template `vars`). A call runs the agent on a new
thread of the thread database, as `agentctl run` would, and returns its final answer. While it
runs, each model reply and tool call is sent as an MCP progress notification when the client
asked for progress (a `progressToken`).

An agent that stops for approval ends the call with a tool error that names the waiting tool
calls and the `agentctl run ... --thread ID` command that answers them: the thread is kept, so a
person can decide later. `auto_approve` approves every such call instead.

A workflow file is one tool as well, taking its inputs and vars (no `message`): a call runs
the workflow on a new thread and returns its output; each step's start and end is a progress
notification, and an approval step stops the call as an agent's approval does.

Calls run in worker threads, each on a `Session` of its own from a small pool per (agent, vars):
a session is not shared by two calls at once, and a second call does not wait for the first.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import socket
from collections.abc import Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.agent.cache import AgentCache, vars_key
from runner.errors import ResolutionError, RunnerError
from runner.events import (
    ASK_USER_TOOL,
    Error,
    Final,
    Interrupt,
    ModelCall,
    StepEnd,
    StepStart,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.lowlevel import Server

    from runner.run import Session

__all__ = ["AgentTools", "ServedTool", "build_server", "serve_http", "serve_stdio"]

Progress = Callable[[str], None]

IDLE_PER_KEY = 4
"""Built sessions kept per (agent, vars) for later calls: as many as ran at once, up to this."""
IDLE_KEYS = 32
"""(agent, vars) combinations kept built; the least recently used go first."""

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ResolutionError(
            "`agentctl mcp serve` needs the `mcp` extra: pip install 'agentctl[mcp]'"
        ) from None


@dataclass(frozen=True)
class ServedTool:
    """One agent file as an MCP tool."""

    name: str
    path: Path
    description: str
    vars: Mapping[str, Any]
    """The template variables a call may set, with the values they have when it does not."""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """The agent's typed inputs (`inputs:`) a call may set, by name (`file` inputs excepted:
    a client may not choose a file the server reads)."""
    workflow: bool = False
    """A workflow file: a call takes no `message` (its vars and inputs start the run)."""

    def input_schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        if not self.workflow:
            properties["message"] = {
                "type": "string",
                "description": "The message to send to the agent.",
            }
        for key, value in self.vars.items():
            kind = _JSON_TYPES.get(type(value))
            if kind is None or key == "message":
                continue
            owner = "workflow" if self.workflow else "agent"
            properties[key] = {
                "type": kind,
                "description": f"The {owner}'s template variable `{key}` (default: {value!r}).",
                "default": value,
            }
        for key, declared in self.inputs.items():
            if key != "message" or self.workflow:
                properties[key] = declared.json_schema()
        required = [] if self.workflow else ["message"]
        required += [k for k, d in self.inputs.items() if d.required and k not in required]
        return {"type": "object", "properties": properties, "required": required}

    def variables(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The vars a call sets (the schema has checked their types)."""
        return {
            k: v
            for k, v in arguments.items()
            if (k != "message" or self.workflow) and (k in self.vars or k in self.inputs)
        }


@dataclass
class AgentTools:
    """The agents served, and the sessions that run their calls."""

    tools: dict[str, ServedTool]
    model: str | None = None
    base_vars: Mapping[str, Any] = field(default_factory=dict)
    db: str | None = None
    auto_approve: bool = False
    home: Any = None
    """The thread database every session shares (one connection and lock, as `Home` wants)."""
    _sessions: AgentCache[Session] = field(
        default_factory=lambda: AgentCache(
            # its MCP servers; the shared home stays open
            lambda session: session.close_agent(),
            max_keys=IDLE_KEYS,
            idle_per_key=IDLE_PER_KEY,
        )
    )

    @classmethod
    def load(
        cls,
        paths: Sequence[str | Path],
        *,
        model: str | None = None,
        vars: Mapping[str, Any] | None = None,
        db: str | None = None,
        auto_approve: bool = False,
    ) -> AgentTools:
        """Validate every agent file under `paths` (a `SpecError` lists every problem of every
        file) and build each agent once, so a file that cannot be built fails here, before the
        server starts."""
        from runner.load.any import load_any
        from runner.serve.agents import collect_agents
        from runner.serve.factory import served_file_inputs
        from runner.spec.workflow import WorkflowSpec

        base_vars = dict(vars or {})
        # Calls run on threads of their own, as `agentctl run` does: a filesystem root without
        # {thread_id} is the agent's folder, shared by its calls.
        agents = collect_agents(paths, vars=base_vars, shared_workspace=True)
        tools = {}
        for agent in agents:
            spec = load_any(agent.path, vars=base_vars, require_inputs=False)
            workflow = isinstance(spec, WorkflowSpec)
            kind = "workflow" if workflow else "agent"
            described = agent.description or f"Runs the {kind} {agent.name!r}."
            returns = "its output" if workflow else "its final answer"
            # A `file` input of any agent of the tree (a `ref:` subagent's too, every agent of
            # a workflow) is a path the server reads: no call may set that name, even where the
            # main agent has it as a plain var (vars reach every file of the tree).
            files = served_file_inputs(spec)
            tools[agent.name] = ServedTool(
                agent.name,
                agent.path,
                f"{described.strip()} (Runs the {kind} on a new thread; returns {returns}.)",
                {k: base_vars.get(k, v) for k, v in spec.vars.items() if k not in files},
                {
                    name: declared
                    for name, declared in spec.inputs.items()
                    if name not in files and name not in base_vars
                },
                workflow=workflow,
            )
        served = cls(tools, model=model, base_vars=base_vars, db=db, auto_approve=auto_approve)
        try:
            for tool in tools.values():
                if any(d.required for d in tool.inputs.values()):
                    # no call runs without its required inputs: build it once to check it
                    served._check_builds(tool)
                    continue
                served._give_back(tool, {}, served._session(tool, {}))
        except BaseException:
            served.close()
            raise
        return served

    # ----------------------------------------------------------------------- sessions

    def _key(self, tool: ServedTool, variables: Mapping[str, Any]) -> tuple[str, str]:
        return tool.name, vars_key(variables)

    def _session(self, tool: ServedTool, variables: Mapping[str, Any]) -> Session:
        """A session of `tool` with these vars for one call: an idle one, or one built now."""

        def build() -> Session:
            from runner.run import Session

            if self.home is None:
                from runner.threads import open_home

                self.home = open_home(self.db)
            return Session(
                tool.path, model=self.model, vars={**self.base_vars, **variables}, home=self.home
            )

        return self._sessions.take(self._key(tool, variables), build)

    def _give_back(self, tool: ServedTool, variables: Mapping[str, Any], session: Session) -> None:
        """Keep `session` for the next call with these vars; a few per key, a few keys."""
        self._sessions.give_back(self._key(tool, variables), session)

    def _check_builds(self, tool: ServedTool) -> None:
        """Build an agent whose calls need inputs, with stand-ins for them, and close it."""
        from runner.load.any import load_any
        from runner.run import Session
        from runner.threads import open_home

        if self.home is None:
            self.home = open_home(self.db)
        spec = load_any(tool.path, vars=self.base_vars, require_inputs=False)
        # a WorkflowSpec makes a WorkflowSession (`Session.__new__`)
        Session(spec, model=self.model, home=self.home).close_agent()  # type: ignore[arg-type]

    def close(self) -> None:
        try:
            self._sessions.close()
        finally:
            if self.home is not None:
                self.home.close()

    # ----------------------------------------------------------------------- calls

    def call(
        self, name: str, arguments: Mapping[str, Any], progress: Progress | None = None
    ) -> types.CallToolResult:
        """Run the agent `name` on a new thread (blocking: call it from a worker thread)."""
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self.tools))
            return _error(f"no agent is served as {name!r}; the tools are: {known}")
        message = None if tool.workflow else arguments.get("message")
        if not tool.workflow and (not isinstance(message, str) or not message.strip()):
            return _error("`message` must be a non-empty string")
        variables = tool.variables(arguments)
        try:
            session = self._session(tool, variables)
        except RunnerError as exc:
            return _error(f"{name}: {exc}")
        try:
            outcome = self._run(session, message, progress)
        finally:
            self._give_back(tool, variables, session)
        return self._result(tool, outcome)

    def _run(self, session: Session, message: str | None, progress: Progress | None) -> Any:
        from runner.run import Decision

        last: Any = None
        thread_id: str | None = None
        decisions: list[Decision] | None = None
        with session.holding_threads():
            while True:
                turn = session.stream(
                    message if thread_id is None else None,
                    thread_id=thread_id,
                    decisions=decisions,
                )
                for event in turn:
                    last = event
                    if progress is not None:
                        said = _progress_message(event)
                        if said:
                            progress(said)
                if not (self.auto_approve and isinstance(last, Interrupt)) or any(
                    a.name == ASK_USER_TOOL for a in last.actions
                ):
                    return last  # a question (ask_user) is never answered for a person
                thread_id = last.thread_id
                decisions = [Decision("approve")] * len(last.actions)
                if progress is not None:
                    names = ", ".join(a.name for a in last.actions)
                    progress(f"{session.name}: approved {names} (--auto-approve)")

    def _result(self, tool: ServedTool, outcome: Any) -> types.CallToolResult:
        from mcp import types

        thread_id = getattr(outcome, "thread_id", None)
        meta = {"agentctl/thread_id": thread_id} if thread_id else None
        if isinstance(outcome, Final):
            content: list[Any] = [types.TextContent(type="text", text=outcome.content)]
            structured = outcome.structured_response
            if isinstance(structured, dict):
                return types.CallToolResult(
                    content=content, structuredContent=structured, _meta=meta
                )
            return types.CallToolResult(content=content, _meta=meta)
        if isinstance(outcome, Interrupt):
            return _error(self._waiting(tool, outcome), meta)
        if isinstance(outcome, Error):
            where = f" (thread {outcome.thread_id})" if outcome.thread_id else ""
            return _error(f"{tool.name} failed{where}: {outcome.message}", meta)
        return _error(f"{tool.name} ended without an answer", meta)

    def _waiting(self, tool: ServedTool, interrupt: Interrupt) -> str:
        calls = "; ".join(
            f"{action.agent or tool.name} wants to call {action.name} "
            f"(call {action.id}) with {json.dumps(action.args, default=str)}"
            for action in interrupt.actions
        )
        command = ["agentctl", "run", str(tool.path)]
        if self.db or os.environ.get("AGENTCTL_HOME"):
            # the person who answers may not share this server's environment
            where = self.home.path  # a Postgres URL (a str) as it is, a file made absolute
            command += ["--db", where if isinstance(where, str) else str(Path(where).resolve())]
        command += ["--thread", interrupt.thread_id]
        shown = shlex.join(command)
        questions = [a for a in interrupt.actions if a.name == ASK_USER_TOOL]
        if questions:
            asked = "; ".join(
                f"{a.agent or tool.name} asks {a.args.get('question')!r}"
                + (
                    f" (choices: {', '.join(map(str, a.args['choices']))})"
                    if a.args.get("choices")
                    else ""
                )
                for a in questions
            )
            return (
                f"{tool.name} stopped to ask a question. {asked}. The thread "
                f"{interrupt.thread_id} waits: a person answers with `{shown} --answer TEXT`."
            )
        count = len(interrupt.actions)
        return (
            f"{tool.name} stopped: {count} tool call{'s' if count > 1 else ''} need"
            f"{'' if count > 1 else 's'} approval. {calls}. The thread {interrupt.thread_id} "
            f"waits: a person decides with `{shown} --approve` (or --reject [--reason TEXT], or "
            f"--edit JSON with other arguments); or serve with --auto-approve to approve every "
            "call."
        )


def _error(text: str, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    from mcp import types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], isError=True, _meta=meta
    )


def _progress_message(event: Any) -> str | None:
    if isinstance(event, StepStart):
        return f"step {event.step}: started"
    if isinstance(event, StepEnd):
        return f"step {event.step}: {event.status} ({event.seconds:.1f}s)"
    if isinstance(event, ModelCall):
        return f"{event.agent}: model replied"
    if isinstance(event, ToolCall):
        return f"{event.agent}: calling {event.name}"
    if isinstance(event, ToolResult):
        done = "failed" if event.status == "error" else "done"
        return f"{event.agent}: {event.name} {done}"
    return None


# --------------------------------------------------------------------------- the server


def build_server(agents: AgentTools) -> Server:
    """The MCP server: `tools/list` lists the agents, `tools/call` runs one."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server

    from runner import __version__

    server: Server = Server("agentctl", version=__version__)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(name=t.name, description=t.description, inputSchema=t.input_schema())
            for t in agents.tools.values()
        ]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        context = server.request_context
        token = context.meta.progressToken if context.meta else None
        progress: Progress | None = None
        if token is not None:
            steps = itertools.count(1)

            def progress(message: str) -> None:
                # the client may have left or cancelled: the run still finishes
                with contextlib.suppress(Exception):
                    anyio.from_thread.run(
                        lambda: context.session.send_progress_notification(
                            token,
                            float(next(steps)),
                            message=message,
                            related_request_id=str(context.request_id),
                        )
                    )

        return await anyio.to_thread.run_sync(
            agents.call, name, arguments, progress, abandon_on_cancel=True
        )

    return server


async def serve_stdio(server: Server) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port` (port 0: any free port); refuses a port in use."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        from runner.errors import RunError

        raise RunError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


async def serve_http(server: Server, sock: socket.socket) -> None:
    """Streamable HTTP at `/mcp` on `sock`, until Ctrl-C. Requests for another Host, from a web
    page of another origin, or with a body that is not JSON are refused (`runner.serve.guard`,
    as under `agentctl serve`), against DNS rebinding and cross-site requests."""
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route
    from starlette.types import Receive, Scope, Send

    from runner.serve.guard import Guard, GuardMiddleware

    host, port = sock.getsockname()[:2]
    manager = StreamableHTTPSessionManager(app=server)

    class Endpoint:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with manager.run():
            yield

    app = Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)
    guarded = GuardMiddleware(app, guard=Guard.serving(host, port))
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])
