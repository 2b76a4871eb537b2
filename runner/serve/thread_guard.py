"""What serve adds around the engine's thread routes, the same for both engines.

`ThreadGuard` is ASGI middleware on the app the engine serves its API from (`engines.Engine.run`
hands the web app to the engine, which puts its routes behind that app's middleware):

- `DELETE /threads/{id}` that the engine answers with success also deletes the thread's
  workspace folders (`root_dir: ./ws/{thread_id}` of any served agent), before the answer;
- a run on an existing thread (`POST /threads/{id}/runs`, `.../runs/stream`, `.../runs/wait`)
  with another agent (assistant graph) than the thread's is refused with 409, for everyone;
- a run (on a thread or not) whose inputs would fail it as it starts (`configurable.vars` of
  the assistant's and the run's config: a required input missing, a value of the wrong type, a
  name the agent does not use) is refused with 422 and the located message, before the engine
  creates it, and so is a run whose answer to what the thread waits on does not fit it
  (`command.resume`: decisions an approval does not allow, or not one per call; an answer
  that is not one of a question's choices; see `runner.serve.resumes`);
- copying a thread or joining its stream is answered 404 when the caller may not see the thread
  (as reading it is), whatever the engine would answer;
- on the in-memory engine, `POST /threads` (and a copy, or a run that creates its thread) is
  answered only once the engine's thread table is saved to disk (`persist`): a crash right
  after loses no thread a client was told about.

What the thread is (its agent, whether the caller may see it) is asked of the engine itself, in
process, with the caller's own credentials (`visible_thread`): the engine's authentication and
ownership rules decide, and nothing here re-implements them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import stat
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ThreadGuard",
    "guard_middleware",
    "remove_thread_folders",
    "thread_folder",
    "thread_state",
    "thread_visible",
    "visible_thread",
]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_THREAD = re.compile(r"^/threads/(?P<thread>[^/]+)$")
_RUN = re.compile(r"^(?:/threads/(?P<thread>[^/]+))?/runs(?:/stream|/wait)?$")
_CHECKED = re.compile(
    r"^(?:POST /threads/(?P<copied>[^/]+)/copy"
    r"|GET /threads/(?P<joined>[^/]+)/(?:runs/[^/]+/)?stream)$"
)
"""Routes where an engine would not answer 404 for a thread the caller may not see (the
in-memory engine answers a copy with 409, and a stream with 200 and then an error event): the
thread is looked up first."""
_FORWARDED = (b"authorization", b"x-api-key", b"cookie", b"host", b"origin")
"""Request headers the in-process look-ups carry over: who the caller is, and where from."""


def thread_folder(root: str, thread: str) -> tuple[str, str] | None:
    """(parent folder, entry name) of `thread`'s own folder under a `root_dir` template such as
    `/srv/ws/{thread_id}/work`: the first path component that holds `{thread_id}` (`/srv/ws`,
    the thread's id). None when the id cannot name a folder or the root has no placeholder."""
    from runner.backends import THREAD_PLACEHOLDER, BackendError, thread_root

    parts = Path(root).parts
    for index, part in enumerate(parts):
        if THREAD_PLACEHOLDER in part:
            try:
                name = thread_root(part, thread)
            except BackendError:
                return None
            return str(Path(*parts[:index])) if index else os.sep, name
    return None


def remove_thread_folders(roots: Iterable[str], thread: str) -> list[str]:
    """Delete `thread`'s folder under each root template (blocking); the folders removed.

    Only that folder goes: its parent is opened once and everything below is removed relative to
    descriptors (`shutil.rmtree` with `dir_fd`), so no symlink inside is followed; a folder that
    is itself a symlink loses the link, never what it points to."""
    removed: list[str] = []
    for root in dict.fromkeys(roots):
        where = thread_folder(root, thread)
        if where is None:
            continue
        parent, name = where
        try:
            parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue  # no parent, no folder
        try:
            try:
                mode = os.lstat(name, dir_fd=parent_fd).st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(mode):
                shutil.rmtree(name, dir_fd=parent_fd)
            else:
                os.unlink(name, dir_fd=parent_fd)
            removed.append(os.path.join(parent, name))
        finally:
            os.close(parent_fd)
    return removed


def per_thread_roots(spec: Any) -> list[str]:
    """The `root_dir` templates with `{thread_id}` of the agent's and its inline subagents'
    filesystem and local_shell backends (absolute, as the loader resolved them)."""
    from runner.backends import THREAD_PLACEHOLDER
    from runner.spec import CompositeBackendSpec, FilesystemBackendSpec, LocalShellBackendSpec

    roots: list[str] = []
    for owner in (spec, *spec.subagents):
        backend = getattr(owner, "backend", None)
        if backend is None:
            continue
        leaves = [backend]
        if isinstance(backend, CompositeBackendSpec):
            leaves = [backend.default, *backend.routes.values()]
        for leaf in leaves:
            if isinstance(leaf, FilesystemBackendSpec | LocalShellBackendSpec):
                root = os.path.abspath(os.path.expanduser(leaf.root_dir))
                if THREAD_PLACEHOLDER in root:
                    roots.append(root)
    return roots


async def _call(app: Any, scope: Scope, method: str, path: str) -> tuple[int, bytes]:
    """`method path` answered by `app` in process, with the caller's credentials from `scope`."""
    headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() in _FORWARDED]
    request: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": scope.get("scheme", "http"),
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": scope.get("client"),
        "server": scope.get("server"),
    }
    status = 500
    body = bytearray()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await app(request, receive, send)
    return status, bytes(body)


async def visible_thread(app: Any, scope: Scope, thread_id: str) -> dict[str, Any] | None:
    """The thread as the engine shows it to the caller of `scope` (its credentials), or None
    when the engine does not show it (absent, another user's, or the caller not let in)."""
    status, thread = await _lookup(app, scope, thread_id)
    return thread if status == 200 else None


async def _lookup(app: Any, scope: Scope, thread_id: str) -> tuple[int, dict[str, Any] | None]:
    """(status, thread) of the engine's answer to `GET /threads/ID` for the caller of `scope`."""
    if not thread_id or "/" in thread_id or "?" in thread_id:
        return 404, None  # names no thread (and must not name another route)
    status, body = await _call(app, scope, "GET", f"/threads/{thread_id}")
    thread = json.loads(body) if status == 200 else None
    return status, thread if isinstance(thread, dict) else None


async def thread_visible(request: Any, thread_id: str) -> bool:
    """Whether the caller of `request` (a Starlette request) may see the thread: asked of the
    whole app the request came through (`scope["app"]`), so the engine decides."""
    return await visible_thread(request.scope["app"], request.scope, thread_id) is not None


async def thread_state(request: Any, thread_id: str) -> dict[str, Any] | None:
    """`{"thread": ..., "state": ...}` as the engine shows them to the caller of `request` (a
    Starlette request), or None when it does not show that thread (the web page's usage)."""
    app, scope = request.scope["app"], request.scope
    thread = await visible_thread(app, scope, thread_id)
    if thread is None:
        return None
    status, body = await _call(app, scope, "GET", f"/threads/{thread_id}/state")
    state = json.loads(body) if status == 200 else None
    return {"thread": thread, "state": state if isinstance(state, dict) else {}}


class ThreadGuard:
    """ASGI middleware: see the module docstring. `agents`: {graph id: agent file}."""

    def __init__(
        self,
        app: Any,
        *,
        agents: Mapping[str, Path],
        vars: Mapping[str, Any] | None = None,
        persist: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.app = app
        self.agents = agents  # read at each request: it may change while serving
        self.vars = dict(vars or {})
        self.persist = persist

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        if method == "DELETE" and (match := _THREAD.match(path)):
            thread = match["thread"]
            await self.app(scope, receive, self._after_success(send, self._remove, thread))
        elif method == "POST" and path == "/threads" and self.persist is not None:
            await self.app(scope, receive, self._after_success(send, self._persist))
        elif method == "POST" and (match := _RUN.match(path)):
            await self._run(scope, receive, send, match["thread"])
        elif match := _CHECKED.match(f"{method} {path}"):
            thread = match["copied"] or match["joined"]
            # Only a 404 is answered here: a caller not let in gets the engine's own answer (401).
            status, _ = await _lookup(scope.get("app", self.app), scope, thread)
            if status == 404:
                await _answer(send, 404, f"Thread {thread} not found")
                return
            if match["copied"] and self.persist is not None:  # a copy is a new thread
                send = self._after_success(send, self._persist)
            await self.app(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _after_success(
        self, send: Send, action: Callable[..., Awaitable[None]], *args: Any
    ) -> Send:
        """`send`, which first runs `action(*args)` when the engine answers with success."""

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and 200 <= message["status"] < 300:
                await action(*args)
            await send(message)

        return sending

    async def _remove(self, thread: str) -> None:
        await asyncio.to_thread(lambda: remove_thread_folders(self._roots(), thread))

    def _roots(self) -> list[str]:
        """The per-thread roots of every served agent, read from the files as they are now."""
        from runner.errors import RunnerError
        from runner.load.any import load_any
        from runner.load.workflow import agents_in

        roots: list[str] = []
        for path in self.agents.values():
            try:
                spec = load_any(path, vars=self.vars, require_inputs=False, allow_unused_vars=True)
            except (RunnerError, OSError):
                continue  # a file with problems now: its folders stay
            for _, agent in agents_in(spec):
                roots += per_thread_roots(agent)
        return roots

    async def _persist(self) -> None:
        assert self.persist is not None
        await self.persist()

    async def _run(self, scope: Scope, receive: Receive, send: Send, thread: str | None) -> None:
        """A run (on `thread`, or on none): refused when its assistant is another agent than
        the thread's, or when its inputs would fail it."""
        messages = await _read_body(receive)
        try:
            body = json.loads(b"".join(m.get("body", b"") for m in messages) or b"{}")
        except ValueError:
            body = None  # the engine says what is wrong with it
        malformed = thread and not _is_uuid(thread) and await self._malformed(scope, thread)
        if malformed:  # the in-memory engine would fail the run with a traceback and a 400
            logging.getLogger(__name__).warning("run refused: %s", malformed)
            await _answer(send, 422, malformed)
            return
        if isinstance(body, dict):
            refusal = thread and await self._other_agent(scope, thread, body.get("assistant_id"))
            if refusal:
                await _answer(send, 409, refusal)
                return
            refusal = _messages_refused(body.get("input"))
            refusal = refusal or await self._inputs_refused(scope, body)
            if not refusal and thread:
                refusal = await self._answer_refused(scope, thread, body.get("command"))
            if refusal:
                from runner.serve.messages import one_line

                # one line for the server's log, as for a run that fails on a mistake
                logging.getLogger(__name__).warning("run refused: %s", one_line(refusal))
                await _answer(send, 422, refusal)
                return
        replay = iter(messages)

        async def replayed() -> dict[str, Any]:
            return next(replay, None) or await receive()

        creates = isinstance(body, dict) and body.get("if_not_exists") == "create"
        if creates and self.persist is not None:
            send = self._after_success(send, self._persist)
        await self.app(scope, replayed, send)

    async def _malformed(self, scope: Scope, thread: str) -> str | None:
        """The engine's message when it takes `thread` for no thread ID at all (the in-memory
        engine's are UUIDs; Aegra's any name), or None."""
        if "/" in thread or "?" in thread:
            return None
        status, body = await _call(scope.get("app", self.app), scope, "GET", f"/threads/{thread}")
        if status != 422:
            return None
        try:
            detail = json.loads(body).get("detail")
        except (ValueError, AttributeError):
            detail = None
        return f"thread {thread!r}: {detail or 'not a thread ID'}"

    async def _other_agent(self, scope: Scope, thread: str, assistant: Any) -> str | None:
        """Why a run of `assistant` may not continue `thread`, or None."""
        if not isinstance(assistant, str) or not assistant:
            return None
        app = scope.get("app", self.app)
        known = await visible_thread(app, scope, thread)
        graph = ((known or {}).get("metadata") or {}).get("graph_id")
        if not graph:
            return None  # no such thread (the engine answers), or no run yet
        wanted = (
            assistant if assistant in self.agents else await _assistant_graph(app, scope, assistant)
        )
        if wanted is None or wanted == graph:
            return None
        return (
            f"thread {thread} belongs to agent {graph!r}; it cannot be continued with agent "
            f"{wanted!r} (start a new thread for {wanted!r})"
        )

    async def _inputs_refused(self, scope: Scope, body: dict[str, Any]) -> str | None:
        """The located message of the mistake in the run's inputs it would fail on as it
        starts, or None (then the engine answers the request)."""
        from runner.errors import RunnerError
        from runner.serve.factory import check_run_vars

        assistant = body.get("assistant_id")
        if not isinstance(assistant, str) or not assistant:
            return None
        configurable: dict[str, Any] = {}
        graph: str | None = assistant
        if assistant not in self.agents:
            found = await _assistant(scope.get("app", self.app), scope, assistant)
            graph = found.get("graph_id") if found else None
            configurable.update(_configurable(found) or {})
        path = self.agents.get(graph) if isinstance(graph, str) else None
        # The run's own: its config's `configurable`, or its `context` (which becomes it)
        given = _configurable(body)
        given = body.get("context") if given is None else given
        if path is None or not isinstance(given or {}, dict):
            return None  # not an agent served here, or a body the engine refuses
        configurable.update(given or {})
        refusal = _model_refused(configurable.get("model"))
        if refusal:
            return refusal
        try:
            await asyncio.to_thread(
                check_run_vars, path, base_vars=self.vars, vars=configurable.get("vars")
            )
        except RunnerError as exc:
            return str(exc)
        return None

    async def _answer_refused(self, scope: Scope, thread: str, command: Any) -> str | None:
        """Why the run's answer (`command.resume`) does not fit what the thread waits on, or
        None (then the engine answers the request)."""
        from runner.errors import DecisionError
        from runner.serve.resumes import check_resume

        if not isinstance(command, dict) or "resume" not in command or "/" in thread:
            return None
        status, body = await _call(
            scope.get("app", self.app), scope, "GET", f"/threads/{thread}/state"
        )
        state = json.loads(body) if status == 200 else None
        interrupts = state.get("interrupts") if isinstance(state, dict) else None
        if not isinstance(interrupts, list):
            return None
        if not interrupts:
            return await self._nothing_waits(scope, thread)
        try:
            check_resume([i for i in interrupts if isinstance(i, dict)], command["resume"])
        except DecisionError as exc:
            return str(exc)
        return None

    async def _nothing_waits(self, scope: Scope, thread: str) -> str | None:
        """Why an answer to a thread that waits on none is refused (the engines would fail
        the run with a traceback, or run it from the start), or None while a run of it is
        going (it may yet ask: the engine queues or refuses the answer)."""
        known = await visible_thread(scope.get("app", self.app), scope, thread)
        status = (known or {}).get("status")
        if known is None or status == "busy":
            return None
        return (
            f"thread {thread} waits on no answer: no approval or question is pending (status: "
            f"{status}); send a message as `input`, not an answer as `command.resume`"
        )


def _model_refused(model: Any) -> str | None:
    """Why `configurable.model` names no model the run could start with, or None (a model
    that is not text is the factory's to refuse)."""
    if not isinstance(model, str):
        return None
    from runner.spec.model import check_model_id

    try:
        check_model_id(model)
    except ValueError as exc:
        return f"configurable.model: {exc}"
    provider, _, cassette = model.partition(":")
    if provider == "replay" and not Path(cassette).is_file():
        return (
            f"configurable.model: replay cassette not found: {cassette} (looked for "
            f"{Path(cassette).resolve()}: a relative path is from the folder serve runs in)"
        )
    return None


def _is_uuid(text: str) -> bool:
    import uuid

    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


MESSAGE_EXAMPLE = '{"role": "user", "content": "Hello"}'


def _messages_refused(given: Any) -> str | None:
    """Why a run's `input.messages` is not messages, or None. The engines would start the run,
    fail it with LangChain's text and keep the value in the thread, whose state could then no
    longer be read."""
    if not isinstance(given, dict) or given.get("messages") is None:
        return None
    from langchain_core.messages import convert_to_messages

    from runner.spec.base import describe

    messages = given["messages"]
    listed = messages if isinstance(messages, list) else [messages]
    for index, message in enumerate(listed):
        try:
            ok = isinstance(message, str | dict | list) and bool(convert_to_messages([message]))
        except (NotImplementedError, ValueError, TypeError, KeyError):
            ok = False
        if not ok:
            where = f"input.messages[{index}]" if isinstance(messages, list) else "input.messages"
            return (
                f"{where}: expected a message such as {MESSAGE_EXAMPLE} (or its text), "
                f"found {describe(message)}"
            )
    return None


def _configurable(holder: Any) -> dict[str, Any] | None:
    """`config.configurable` of a run or an assistant, when it is a mapping."""
    config = holder.get("config") if isinstance(holder, dict) else None
    found = config.get("configurable") if isinstance(config, dict) else None
    return found if isinstance(found, dict) else None


async def _assistant(app: Any, scope: Scope, assistant: str) -> dict[str, Any] | None:
    """The assistant as the engine shows it to the caller of `scope`, or None."""
    if "/" in assistant or "?" in assistant:
        return None
    status, body = await _call(app, scope, "GET", f"/assistants/{assistant}")
    found = json.loads(body) if status == 200 else None
    return found if isinstance(found, dict) else None


async def _assistant_graph(app: Any, scope: Scope, assistant: str) -> str | None:
    found = await _assistant(app, scope, assistant)
    graph = found.get("graph_id") if found else None
    return graph if isinstance(graph, str) else None


async def _read_body(receive: Receive) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body"):
            return messages


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def guard_middleware(
    agents: Sequence[tuple[str, Path]] | Mapping[str, Path],
    *,
    vars: Mapping[str, Any] | None,
    persist: Callable[[], Awaitable[None]] | None,
) -> Any:
    """`ThreadGuard` as a Starlette `Middleware` entry for the web app. A mapping of `agents`
    ({graph id: agent file}) is read at each request (`runner.serve.live` changes it)."""
    from starlette.middleware import Middleware

    served = agents if isinstance(agents, Mapping) else dict(agents)
    return Middleware(ThreadGuard, agents=served, vars=vars, persist=persist)
