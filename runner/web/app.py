"""The page's Starlette app: `/` (the page), `/web/static/...` (its assets) and a read-only side
API under `/web/api/` for what the LangGraph API cannot tell the page.

    GET /web/api/agents                     each served file: name, kind, model, typed inputs,
                                            located problems
    GET /web/api/agents/{name}/tools        the argument schema of each tool of the agent
    GET /web/api/agents/{name}/files        the files of its filesystem routes, for ?thread_id=
    GET /web/api/agents/{name}/file         one of them: ?thread_id=&path=/agent/path
    GET /web/api/threads/{id}/usage         a thread's model calls, tokens and cost

Files are read through `FilesystemBackend`, the backend the agent's own tools use, so a path is
confined to its route's root exactly as the agent's are (descriptor walk, no symlink escape); a
route outside virtual mode (host paths) is never listed or read. A thread's usage is counted
from its state as the engine gives it to the caller (`thread_state`, the caller's credentials), so
it follows the engine's ownership rules. Nothing here writes, creates a folder or starts a run.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["STATIC_DIR", "WebAgent", "create_app"]

STATIC_DIR = Path(__file__).parent / "static"
MAX_LISTED_FILES = 500
"""A route's listing stops here (a workspace can be a whole source tree)."""


@dataclass(frozen=True)
class WebAgent:
    """An agent file the page shows: served under `name` (its graph id) when it loads."""

    name: str
    path: Path


@dataclass
class _Loaded:
    mtime_ns: int
    spec: Any
    problems: list[Any]


class _Agents:
    """The served files, re-read (and re-validated) whenever one changes on disk."""

    def __init__(self, agents: Sequence[WebAgent] | Mapping[str, Path], vars: dict[str, Any]):
        # a mapping {name: file} is read at each request: it may change while serving
        self.files = agents if isinstance(agents, Mapping) else {a.name: a.path for a in agents}
        self.vars = vars
        self._loaded: dict[Path, _Loaded] = {}

    @property
    def by_name(self) -> dict[str, WebAgent]:
        return {name: WebAgent(name, path) for name, path in list(self.files.items())}

    def load(self, agent: WebAgent) -> _Loaded:
        """The file's spec (None when it has problems) and its problems (blocking)."""
        from runner.check.validate import validate_file
        from runner.errors import Problem, RunnerError, SpecError, display_path, first_line
        from runner.load.any import load_any

        try:
            mtime = os.stat(agent.path).st_mtime_ns
        except OSError as exc:
            problem = Problem(display_path(agent.path), 0, 0, "", f"cannot read: {exc.strerror}")
            return _Loaded(0, None, [problem])
        cached = self._loaded.get(agent.path)
        if cached is not None and cached.mtime_ns == mtime:
            return cached
        problems = list(validate_file(agent.path, vars=self.vars))
        spec = None
        if not problems:
            # A required input without a value is no problem of the file: a run gives it.
            try:
                spec = load_any(agent.path, vars=self.vars, require_inputs=False)
            except SpecError as exc:  # changed between the two reads
                problems = list(exc.problems)
            except RunnerError as exc:
                problems = [Problem(display_path(agent.path), 0, 0, "", first_line(exc))]
        loaded = _Loaded(mtime, spec, problems)
        self._loaded[agent.path] = loaded
        return loaded


def _model_name(spec: Any) -> str | None:
    model = getattr(spec, "model", None)
    if model is not None and not isinstance(model, str):
        model = getattr(model, "id", None) or str(model)
    if model and model.startswith("replay:"):  # the loader made the cassette's path absolute
        model = "replay:" + os.path.basename(model.removeprefix("replay:"))
    return model


def _kind(spec: Any) -> str | None:
    from runner.spec.workflow import WorkflowSpec

    if spec is None:
        return None
    return "workflow" if isinstance(spec, WorkflowSpec) else "agent"


def _inputs(spec: Any) -> list[dict[str, Any]]:
    """The spec's typed inputs as the page's form fields: name, type (an input's `type`, `enum`
    and `file` included), required, and from serve's config schema its description, default,
    `enum` and bounds. A `file` input is listed too (the page leaves it to the server)."""
    from runner.serve.factory import assistant_config_schema

    if spec is None:
        return []
    variables = assistant_config_schema(spec)["properties"]["vars"]
    required = set(variables.get("required", ()))
    fields = []
    for name, declared in spec.inputs.items():
        schema = {k: v for k, v in variables["properties"][name].items() if k != "format"}
        schema.update(name=name, type=declared.kind, required=name in required)
        fields.append(schema)
    return fields


def _agent_row(
    agent: WebAgent, loaded: _Loaded, editable: Callable[[Path], str | None] | None
) -> dict[str, Any]:
    """The agents list's row of `agent`; with `editable`, its path in the editor (`edit`)."""
    from runner.errors import display_path

    row = {
        "name": agent.name,
        "file": display_path(agent.path),
        "model": _model_name(loaded.spec),
        "description": getattr(loaded.spec, "description", None),
        "kind": _kind(loaded.spec),
        "inputs": _inputs(loaded.spec),
        "problems": [str(p) for p in loaded.problems],
    }
    if editable is not None:
        row["edit"] = editable(agent.path)
    return row


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _hidden(
    thread_visible: Callable[[Request, str], Awaitable[bool]] | None,
    request: Request,
    thread: str | None,
) -> Response | None:
    """A 404 for a thread the caller may not see, as the engine answers for it."""
    if thread is None or thread_visible is None or await thread_visible(request, thread):
        return None
    return _error(404, f"thread {thread} not found")


def _api_middleware(
    authenticate: Callable[[Mapping[bytes, bytes]], Awaitable[Any]] | None,
) -> list[Middleware]:
    """The side API's guard: the engines' own authentication, when the server has one."""
    return [Middleware(_RequireUser, authenticate=authenticate)] if authenticate else []


def create_app(
    agents: Sequence[WebAgent] | Mapping[str, Path],
    *,
    graph_for: Callable[[Path], Any],
    dev: bool = False,
    edit: bool = False,
    vars: dict[str, Any] | None = None,
    authenticate: Callable[[Mapping[bytes, bytes]], Awaitable[Any]] | None = None,
    thread_visible: Callable[[Request, str], Awaitable[bool]] | None = None,
    thread_state: Callable[[Request, str], Awaitable[dict[str, Any] | None]] | None = None,
    middleware: Sequence[Any] = (),
    routes: Sequence[BaseRoute] = (),
    api_routes: Sequence[BaseRoute] = (),
    refresh: Callable[[], Awaitable[Any]] | None = None,
    editable: Callable[[Path], str | None] | None = None,
) -> Starlette:
    """The page and its side API for `agents`; `graph_for(path)` returns the compiled graph of
    an agent file (blocking; it is called in a worker thread), for the tools' schemas.

    `authenticate(headers)` (`runner.serve.auth.authenticate`, the engines' own check) guards
    the side API: it returns the user, put in the request's scope as `user`, or raises the
    401 the engines answer. The page and its assets stay public: they hold no data.
    `thread_visible(request, thread_id)`: whether the caller may see that thread (a server with
    authentication: its owner, or an admin); the file routes answer 404 for a thread it refuses.
    `thread_state(request, thread_id)`: the thread and its state as the engine shows them to the
    caller (`{"thread": ..., "state": ...}`), None when it does not; the usage route needs it.
    `middleware`: Starlette `Middleware` entries the engine's routes go behind too.
    `routes` and `api_routes`: more pages, and more side API routes (behind its guard), such as
    the editor's (`runner.edit`); `edit`: whether they are the editor's (the agents' listing says
    so, and the page asks the editor whether this user may edit only then).

    `agents` as a mapping {name: agent file} is read at each request, for a server whose agents
    change while it serves (`runner.serve.live`); `refresh()` is awaited before the agents are
    listed, to find files added or removed meanwhile. `editable(file)`: the path the editor
    opens an agent file by (`/edit?file=PATH`), None when it does not edit it; given, each
    agent's row says it as `edit` (the page links it for the users the editor lets in)."""
    served = _Agents(agents, dict(vars or {}))

    async def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    def agent_rows() -> list[dict[str, Any]]:
        return [_agent_row(a, served.load(a), editable) for a in served.by_name.values()]

    async def list_agents(request: Request) -> Response:
        # Everything that touches the disk runs off the loop (the engine may flag blocking calls).
        if refresh is not None:
            await refresh()
        rows = await asyncio.to_thread(agent_rows)
        return JSONResponse({"dev": dev, "edit": edit, "agents": rows})

    def _agent(request: Request) -> WebAgent | None:
        return served.by_name.get(request.path_params["name"])

    async def tools(request: Request) -> Response:
        agent = _agent(request)
        if agent is None:
            return _error(404, f"no agent named {request.path_params['name']!r}")
        try:
            schemas = await asyncio.to_thread(lambda: _tool_schemas(graph_for(agent.path)))
        except Exception as exc:
            return _error(409, f"{agent.name} cannot be built: {exc}")
        return JSONResponse({"tools": schemas})

    async def thread_files(request: Request) -> tuple[Any, str | None] | Response:
        """The agent's spec and the thread of a file route, or the refusal to answer."""
        agent = _agent(request)
        if agent is None:
            return _error(404, f"no agent named {request.path_params['name']!r}")
        loaded = await asyncio.to_thread(served.load, agent)
        if loaded.spec is None:
            return _error(409, f"{agent.name} has problems; fix its file first")
        thread = request.query_params.get("thread_id") or None
        if (refused := await _hidden(thread_visible, request, thread)) is not None:
            return refused
        return loaded.spec, thread

    async def files(request: Request) -> Response:
        found = await thread_files(request)
        if isinstance(found, Response):
            return found
        return JSONResponse(await asyncio.to_thread(_list_routes, *found))

    async def file(request: Request) -> Response:
        found = await thread_files(request)
        if isinstance(found, Response):
            return found
        path = request.query_params.get("path", "")
        try:
            content = await asyncio.to_thread(_read_file, *found, path)
        except LookupError as exc:
            return _error(404, str(exc.args[0]))
        except ValueError as exc:
            return _error(400, str(exc))
        return JSONResponse({"path": path, "content": content})

    return Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            *routes,
            Mount("/web/static", app=StaticFiles(directory=STATIC_DIR), name="web-static"),
            Mount(
                "/web/api",
                routes=[
                    Route("/agents", list_agents, methods=["GET"]),
                    Route("/agents/{name}/tools", tools, methods=["GET"]),
                    Route("/agents/{name}/files", files, methods=["GET"]),
                    Route("/agents/{name}/file", file, methods=["GET"]),
                    Route(
                        "/threads/{thread_id}/usage",
                        _usage_route(served, thread_state),
                        methods=["GET"],
                    ),
                    *api_routes,
                ],
                middleware=_api_middleware(authenticate),
            ),
        ],
        middleware=list(middleware),
    )


def _usage_route(
    served: _Agents,
    thread_state: Callable[[Request, str], Awaitable[dict[str, Any] | None]] | None,
) -> Callable[[Request], Awaitable[Response]]:
    """`GET /web/api/threads/{thread_id}/usage`: 404 for a thread the engine does not show the
    caller (or with no engine to ask)."""

    async def usage(request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        found = await thread_state(request, thread_id) if thread_state is not None else None
        if found is None:
            return _error(404, f"thread {thread_id} not found")
        counted = await asyncio.to_thread(_thread_usage, served, found)
        return JSONResponse({"thread_id": thread_id, **counted})

    return usage


def _thread_usage(served: _Agents, found: dict[str, Any]) -> dict[str, Any]:
    """The usage of a thread (`{"thread": ..., "state": ...}`), priced with its agent's file."""
    from runner.web.usage import spec_prices, thread_usage

    graph = ((found.get("thread") or {}).get("metadata") or {}).get("graph_id")
    agent = served.by_name.get(str(graph))
    prices = spec_prices(served.load(agent).spec) if agent is not None else {}
    messages = ((found.get("state") or {}).get("values") or {}).get("messages") or []
    return thread_usage(messages, prices)


class _RequireUser:
    """Lets a request through only when `authenticate` accepts its headers."""

    def __init__(
        self, app: ASGIApp, *, authenticate: Callable[[Mapping[bytes, bytes]], Awaitable[Any]]
    ) -> None:
        self.app = app
        self.authenticate = authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from langgraph_sdk import Auth

        try:
            # The headers as the in-memory engine hands them to its auth hook.
            user = await self.authenticate(dict(scope["headers"]))
        except Auth.exceptions.HTTPException as exc:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            refusal = JSONResponse(
                {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
            )
            await refusal(scope, receive, send)
            return
        scope["user"] = user
        await self.app(scope, receive, send)


def _tool_schemas(graph: Any) -> dict[str, Any]:
    """{tool name: JSON schema of the arguments the model writes} for the graph's tools."""
    node = getattr(graph, "nodes", {}).get("tools")
    tools = getattr(getattr(node, "bound", None), "tools_by_name", {}) or {}
    schemas: dict[str, Any] = {}
    for name, tool in tools.items():
        try:
            schemas[name] = tool.tool_call_schema.model_json_schema()
        except Exception:  # a tool with a schema pydantic cannot render: the editor does without
            continue
    return schemas


def _directory(leaf: Any, thread: str | None) -> tuple[str | None, str]:
    """(root folder on disk or None, why not) of a filesystem-like leaf for `thread`."""
    from runner.backends import THREAD_PLACEHOLDER, BackendError, thread_root
    from runner.backends.reach import root_of

    if not leaf.virtual_mode:
        return None, "host paths (virtual_mode: false) are not shown"
    root = root_of(leaf)
    if THREAD_PLACEHOLDER in root:
        if thread is None:
            return None, "one folder per thread: open a thread"
        try:
            root = thread_root(root, thread)
        except BackendError as exc:
            return None, str(exc)
    return root, ""


def _list_routes(spec: Any, thread: str | None) -> dict[str, Any]:
    from runner.backends import FilesystemBackend
    from runner.backends.paths import is_within, join_path
    from runner.backends.reach import leaves
    from runner.spec import FilesystemBackendSpec, LocalShellBackendSpec, StoreBackendSpec
    from runner.spec.workflow import WorkflowSpec

    if isinstance(spec, WorkflowSpec):  # a workflow's agents keep files of their own
        return {"routes": [], "files": []}
    routes_of = leaves(spec.backend)
    # A route hides what the default backend has under its prefix, as it does from the agent.
    shadowed = [prefix for prefix, _ in routes_of if prefix != "/"]
    routes: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    for prefix, leaf in routes_of:
        shown = prefix if prefix == "/" else prefix + "/"
        if leaf is None or leaf.kind == "state":
            routes.append({"prefix": shown, "kind": "state"})
            continue
        if isinstance(leaf, StoreBackendSpec):
            routes.append({"prefix": shown, "kind": "store", "namespace": list(leaf.namespace)})
            continue
        if not isinstance(leaf, FilesystemBackendSpec | LocalShellBackendSpec):
            routes.append({"prefix": shown, "kind": leaf.kind, "note": "not shown"})
            continue
        root, why = _directory(leaf, thread)
        route = {"prefix": shown, "kind": leaf.kind, "note": why}
        routes.append(route)
        if root is None or not os.path.isdir(root):  # never created here: the page only reads
            continue
        backend = FilesystemBackend(root, virtual_mode=True, ripgrep=False)
        hits = sorted(
            (hit for hit in backend.glob("**/*", "/") if not hit.is_dir), key=lambda h: h.path
        )
        if len(hits) > MAX_LISTED_FILES:
            route["note"] = f"only the first {MAX_LISTED_FILES} of {len(hits)} files listed"
        for hit in hits[:MAX_LISTED_FILES]:
            path = hit.path if prefix == "/" else join_path(prefix, hit.path.lstrip("/"))
            if prefix == "/" and any(is_within(path, other) for other in shadowed):
                continue
            files.append({"path": path, "size": hit.size, "modified_at": hit.modified_at})
    return {"routes": routes, "files": sorted(files, key=lambda entry: str(entry["path"]))}


def _read_file(spec: Any, thread: str | None, path: str) -> str:
    """The text of the file at agent path `path` on a filesystem route (LookupError: no such
    file there; ValueError: a path the agent could not use either)."""
    from runner.backends import BackendError, FilesystemBackend, validate_path
    from runner.backends.paths import is_within, relative_to
    from runner.backends.reach import leaves
    from runner.spec import FilesystemBackendSpec, LocalShellBackendSpec
    from runner.spec.workflow import WorkflowSpec

    if isinstance(spec, WorkflowSpec):
        raise LookupError(f"{path}: a workflow's files are not shown on the page")
    try:
        normal = validate_path(path)
    except BackendError as exc:
        raise ValueError(str(exc)) from None
    owner, leaf = max(
        ((prefix, leaf) for prefix, leaf in leaves(spec.backend) if is_within(normal, prefix)),
        key=lambda pair: len(pair[0]),
    )
    if not isinstance(leaf, FilesystemBackendSpec | LocalShellBackendSpec):
        raise LookupError(f"{path} is not on a filesystem route (the page reads it from the API)")
    root, why = _directory(leaf, thread)
    if root is None or not os.path.isdir(root):
        raise LookupError(f"{path}: {why or 'no such file'}")
    inner = normal if owner == "/" else "/" + relative_to(normal, owner)
    backend = FilesystemBackend(root, virtual_mode=True, ripgrep=False)
    limit = int(leaf.max_file_size_mb * 1024 * 1024)
    try:
        data = backend.read_bytes(inner, limit)
    except BackendError as exc:
        raise LookupError(str(exc).replace(inner, path, 1)) from None
    return data.decode("utf-8", errors="replace")
