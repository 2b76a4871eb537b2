"""The routes of `agentctl serve --edit`, under the page's side API (`/web/api/edit/...`, behind
its authentication) and the editor page at `/edit`.

    GET  /edit                         the editor page (public, like `/`: it holds no data)
    GET  /web/api/edit/files           the YAML files of the folder
    GET  /web/api/edit/file?path=      one file: text and version
    GET  /web/api/edit/options?path=   what the form offers: the folder's Python tools and
                                       other agent files, the agent's tool names, input types,
                                       backends
    POST /web/api/edit/check           {path, text} -> located problems (validate's)
    POST /web/api/edit/complete        {path, text, line, character} -> completion items
    POST /web/api/edit/hover           {path, text, line, character} -> markdown
    POST /web/api/edit/form            {text} -> the form's values
    POST /web/api/edit/form/write      {text, values} -> the text with them written
    POST /web/api/edit/new             {name} -> `agentctl init`'s files as NAME.yaml and the
                                       rest, the agent opened
    POST /web/api/edit/save            {path, text, base} -> version; 409 with the disk's text
    POST /web/api/edit/try             {path, text, message, vars?, model?, record?} -> events
    POST /web/api/edit/answer          {thread_id, decisions} -> events
    POST /web/api/edit/test            {path} -> the test file's results

With users (API keys or tokens), only admins (`--admin`) reach these: anyone else gets 403.
Without `--edit` none of them exist (404).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from runner.edit.folder import AgentsFolder, Conflict, OutsideFolder
from runner.edit.form import FormError, available_agents, available_tools, read_form, write_form
from runner.edit.language import Language
from runner.edit.newagent import new_agent_files
from runner.edit.trying import TryError, TryRuns, cassette_of, run_tests
from runner.web.app import STATIC_DIR

__all__ = ["EDITOR_PAGE", "edit_routes"]

EDITOR_PAGE = STATIC_DIR / "editor" / "index.html"
"""The editor's page; its bundle (editor.js, editor.css) is built by scripts/build-web."""
MAX_TEXT = 1024 * 1024
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

Handler = Callable[[Request], Awaitable[Response]]


def _error(status: int, message: str, **more: Any) -> JSONResponse:
    return JSONResponse({"error": message, **more}, status_code=status)


def edit_routes(
    folder: AgentsFolder,
    *,
    authenticated: bool,
    runs: TryRuns | None = None,
    refresh: Callable[..., Awaitable[Any]] | None = None,
) -> tuple[list[BaseRoute], list[BaseRoute]]:
    """(the page's routes, the side API's routes) of the editor of `folder`. `authenticated`:
    the server has users, and only admins may edit. `refresh(force=True)` (a server's
    `runner.serve.live.LiveAgents.refresh`) is awaited after each file written, so a new or
    renamed agent is served at once; what it did is in the answer, as `served`."""
    api = _EditApi(folder, runs or TryRuns(), refresh)
    handlers = [
        ("/edit/files", api.files, "GET"),
        ("/edit/file", api.file, "GET"),
        ("/edit/options", api.options, "GET"),
        ("/edit/check", api.check, "POST"),
        ("/edit/complete", api.complete, "POST"),
        ("/edit/hover", api.hover, "POST"),
        ("/edit/form", api.form, "POST"),
        ("/edit/form/write", api.form_write, "POST"),
        ("/edit/new", api.new, "POST"),
        ("/edit/save", api.save, "POST"),
        ("/edit/try", api.try_it, "POST"),
        ("/edit/answer", api.answer, "POST"),
        ("/edit/test", api.test, "POST"),
    ]
    return (
        [Route("/edit", _page, methods=["GET"])],
        [
            Route(url, _admins_only(handler, authenticated=authenticated), methods=[method])
            for url, handler, method in handlers
        ],
    )


async def _page(request: Request) -> Response:
    return FileResponse(EDITOR_PAGE, headers={"Cache-Control": "no-cache"})


def _admins_only(handler: Handler, *, authenticated: bool) -> Handler:
    """`handler` for admins only when the server has users; the editor's refusals as answers."""
    from runner.serve.auth import ADMIN

    async def guarded(request: Request) -> Response:
        if authenticated:
            user = request.scope.get("user") or {}
            permissions = user.get("permissions", []) if isinstance(user, dict) else []
            if ADMIN not in permissions:
                return _error(403, "only admins (serve --admin) may edit agent files")
        try:
            return await handler(request)
        except OutsideFolder as exc:
            return _error(400, str(exc))
        except (FormError, TryError) as exc:
            return _error(422, str(exc))
        except LookupError as exc:
            return _error(404, str(exc.args[0]))

    return guarded


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except ValueError:
        raise OutsideFolder("expected a JSON object") from None
    if not isinstance(data, dict):
        raise OutsideFolder("expected a JSON object")
    text = data.get("text")
    if text is not None and (not isinstance(text, str) or len(text) > MAX_TEXT):
        raise OutsideFolder("text: expected the file's text (at most 1 MB)")
    return data


def _position(data: dict[str, Any]) -> tuple[int, int]:
    line, character = data.get("line"), data.get("character")
    if not isinstance(line, int) or not isinstance(character, int) or line < 0 or character < 0:
        raise OutsideFolder("line and character: expected numbers from 0")
    return line, character


class _EditApi:
    """The handlers; everything that touches the disk or loads an agent runs off the loop."""

    def __init__(
        self,
        folder: AgentsFolder,
        tries: TryRuns,
        refresh: Callable[..., Awaitable[Any]] | None = None,
    ) -> None:
        self.folder = folder
        self.tries = tries
        self.language = Language()
        self.refresh = refresh

    async def _served(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with what the server serves now that a file was written (`served`: agents
        added and removed, or why the files cannot be served), when it serves them."""
        if self.refresh is not None:
            refreshed = await self.refresh(force=True)
            body["served"] = refreshed.as_json()
        return body

    def _path(self, data: dict[str, Any], *, writing: bool = False) -> Path:
        return self.folder.resolve(str(data.get("path", "")), writing=writing)

    async def files(self, request: Request) -> Response:
        files = await asyncio.to_thread(self.folder.files)
        return JSONResponse({"root": self.folder.root.name, "files": files})

    async def file(self, request: Request) -> Response:
        relative = request.query_params.get("path", "")
        text, version = await asyncio.to_thread(self.folder.read, relative)
        return JSONResponse({"path": relative, "text": text, "version": version})

    async def check(self, request: Request) -> Response:
        data = await _body(request)
        path = self._path(data)
        problems = await asyncio.to_thread(self.language.problems, path, data.get("text") or "")
        return JSONResponse({"problems": problems})

    async def complete(self, request: Request) -> Response:
        return JSONResponse({"items": await self._at_cursor(request, self.language.complete)})

    async def hover(self, request: Request) -> Response:
        return JSONResponse({"markdown": await self._at_cursor(request, self.language.hover)})

    async def _at_cursor(self, request: Request, feature: Callable[..., Any]) -> Any:
        """`feature(path, text, line, character)` for the request's {path, text, line,
        character}, off the loop."""
        data = await _body(request)
        path, (line, character) = self._path(data), _position(data)
        return await asyncio.to_thread(feature, path, data.get("text") or "", line, character)

    async def options(self, request: Request) -> Response:
        path = self.folder.resolve(request.query_params.get("path", ""))
        return JSONResponse(await asyncio.to_thread(self._options, path))

    def _options(self, path: Path) -> dict[str, Any]:
        from runner.check.tools import static_agents
        from runner.edit.form import BACKENDS, INPUT_TYPES

        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        self.language.problems(path, text)  # loads the agent (kept) when the file is sound
        specs = self.language.specs(path)
        names = {t for spec in specs[:1] for agent in static_agents(spec)[:1] for t in agent.tools}
        return {
            "tools": available_tools(path.parent),
            "agents": available_agents(path),
            "tool_names": sorted(names),
            "backends": list(BACKENDS),
            "input_types": list(INPUT_TYPES),
        }

    async def form(self, request: Request) -> Response:
        data = await _body(request)
        return JSONResponse(await asyncio.to_thread(read_form, data.get("text") or ""))

    async def form_write(self, request: Request) -> Response:
        data = await _body(request)
        values = data.get("values")
        if not isinstance(values, dict):
            raise FormError("values: expected the form's settings")
        text = await asyncio.to_thread(write_form, data.get("text") or "", values)
        return JSONResponse({"text": text})

    async def new(self, request: Request) -> Response:
        data = await _body(request)
        name = str(data.get("name", "")).strip()
        if not _NAME.match(name):
            raise OutsideFolder(
                f"{name!r}: a name is lowercase letters, digits, '-' and '_' (at most 64)"
            )
        created = await asyncio.to_thread(self._new_agent, name)
        if isinstance(created, str):
            return _error(409, created)
        text, version = created
        body = {"path": f"{name}.yaml", "text": text, "version": version}
        return JSONResponse(await self._served(body), status_code=201)

    def _new_agent(self, name: str) -> tuple[str, str] | str:
        """Write the new agent's files: (its text, version), or why not (a file in the way)."""
        files = new_agent_files(self.folder.root, name)
        taken = [
            rel
            for rel in (f"{name}.yaml", f"{name}.cassette.yaml", f"{name}.test.yaml", name)
            if os.path.lexists(self.folder.root / rel)
        ]
        if taken:
            return f"{', '.join(taken)} exists already: choose another name, or open it"
        for relative, text in files.items():
            path = self.folder.resolve(relative)  # inside the folder, whatever is on the way
            path.parent.mkdir(parents=True, exist_ok=True)
            self.folder.resolve(relative)
            path.write_text(text, encoding="utf-8")
        return self.folder.read(f"{name}.yaml")

    async def save(self, request: Request) -> Response:
        data = await _body(request)
        relative, base = str(data.get("path", "")), data.get("base")
        if not isinstance(data.get("text"), str) or (
            base is not None and not isinstance(base, str)
        ):
            raise OutsideFolder("expected {path, text, base}: base is the version loaded, or null")
        try:
            version = await asyncio.to_thread(self.folder.save, relative, data["text"], base=base)
        except Conflict as conflict:
            return _error(
                409,
                f"{relative} changed on disk since you opened it: compare, then save again",
                text=conflict.content,
                version=conflict.version,
            )
        return JSONResponse(await self._served({"path": relative, "version": version}))

    async def try_it(self, request: Request) -> Response:
        data = await _body(request)
        path = self._path(data, writing=True)
        message = data.get("message")
        if not isinstance(message, str) or not message.strip():
            raise TryError("message: write what to ask the agent")
        variables = data.get("vars") or {}
        if not isinstance(variables, dict):
            raise TryError("vars: expected {name: value}")
        model = data.get("model") or None
        if model is not None and (not isinstance(model, str) or ":" not in model):
            raise TryError(f"model: expected provider:model, found {model!r}")
        record = cassette_of(path) if data.get("record") else None
        text = data.get("text") or ""
        result = await asyncio.to_thread(
            self.tries.start, path, text, message, vars=variables, model=model, record=record
        )
        if record is not None:
            result["recorded"] = self.folder.relative(record)
        return JSONResponse(result)

    async def answer(self, request: Request) -> Response:
        data = await _body(request)
        decisions = data.get("decisions")
        if not isinstance(decisions, list) or not all(isinstance(d, dict) for d in decisions):
            raise TryError("decisions: expected [{type: approve|edit|reject, ...}]")
        thread = str(data.get("thread_id"))
        return JSONResponse(await asyncio.to_thread(self.tries.answer, thread, decisions))

    async def test(self, request: Request) -> Response:
        data = await _body(request)
        path = self._path(data, writing=True)
        return JSONResponse(await asyncio.to_thread(run_tests, path, self.folder.root))
