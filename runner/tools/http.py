"""`http:` and `openapi:` tools: HTTP calls made with httpx, sync and async.

Where an argument goes: into the URL path (`{number}`), a query parameter, a header, or the JSON
body. A model's arguments are hostile input, so before anything is sent:

- every value is checked against the argument's schema (`type`, `enum`, bounds, ...: the same
  check as `script:` tools, `runner.tools.arguments`);
- a path value is percent-encoded as exactly one segment (`/`, `?`, `#` and `%` included), and
  `.`, `..`, their percent-encoded forms and the empty value are refused: none could change
  which resource the path names.

The answer comes back as text: a 2xx response's body, and for a 4xx/5xx response, a timeout or a
network failure an error the model can act on (`HTTP 404 Not Found from GET ...` with the start
of the body). Two limits hold whatever the server does:

- `timeout` is a deadline for the whole call (connecting, the headers, the body): a server that
  trickles its body a byte at a time is cut off at the deadline;
- at most `max_response_bytes` of the body are read (streamed, so no more than that and one
  network chunk is ever in memory); a longer body is cut there and the result begins with a
  line telling the model so. We ask for an uncompressed body (`Accept-Encoding: identity`,
  unless the tool's headers say otherwise), so the cap counts what the model gets.

Large results are evicted to a file like any large tool result, by the filesystem middleware.
The async path uses `httpx.AsyncClient` under `asyncio.timeout`; the sync path runs the same
coroutine on an event loop of its own (a tool's sync call runs on a worker thread), so the two
cannot drift apart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import quote, unquote

import httpx
from langchain_core.tools import StructuredTool, ToolException

from runner.load.openapi import Operation, Param
from runner.spec import HttpTool, OpenApiTool
from runner.spec.declared_tools import MAX_RESPONSE_BYTES, HttpToolSpec, fill, placeholders
from runner.tools.arguments import ArgumentCheck

__all__ = ["HttpCall", "tools_from_http"]

BODY_SHOWN = 2000
"""Characters of an error response's body shown to the model."""
_QUERY_METHODS = ("GET", "HEAD", "DELETE")
_DOT_SEGMENTS = (".", "..")


@dataclass(frozen=True)
class HttpCall:
    """How one tool makes its request: the method, the URL template (`{arg}` in the path) and
    where each argument goes."""

    name: str
    description: str
    method: str
    url: str
    params: list[Param]
    schema: dict[str, Any]
    headers: dict[str, str]
    timeout: float
    max_response_bytes: int = MAX_RESPONSE_BYTES

    @cached_property
    def _check(self) -> ArgumentCheck:
        return ArgumentCheck(self.schema)

    def request(self, given: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The URL and httpx keyword arguments for one call with the arguments `given`."""
        missing = [a for a in self.schema.get("required") or () if given.get(a) is None]
        if missing:
            raise ToolException(f"Error: missing argument {missing[0]!r}")
        known = {p.arg for p in self.params}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ToolException(
                f"Error: {self.name} has no argument {unknown[0]!r}; its arguments: "
                f"{', '.join(sorted(known)) or 'none'}"
            )
        self._check.check(given)
        path: dict[str, str] = {}
        query: dict[str, Any] = {}
        headers = {"Accept-Encoding": "identity", **self.headers}
        body: Any = None
        for param in self.params:
            value = given.get(
                param.arg, self.schema["properties"].get(param.arg, {}).get("default")
            )
            if value is None:
                continue
            if param.location == "path":
                path[param.name] = path_segment(param.arg, _text(value))
            elif param.location == "query":
                query[param.name] = _text(value) if not isinstance(value, list) else value
            elif param.location == "header":
                headers[param.name] = _text(value)
            elif param.location == "body*":
                body = value
            else:
                body = body if isinstance(body, dict) else {}
                body[param.name] = value
        try:
            url = fill(self.url, path)
        except KeyError as exc:  # a `{name}` in the document's path that no parameter declares
            raise ToolException(f"Error: the URL {self.url} needs {exc.args[0]!r}") from None
        # httpx replaces a URL's query with `params`: keep the one the author wrote
        options: dict[str, Any] = {"params": httpx.URL(url).params.merge(query), "headers": headers}
        if body is not None:
            options["json"] = body
        return url, options

    def answer(self, url: str, response: httpx.Response, body: bytes, cut: bool) -> str:
        try:
            text = body.decode(response.charset_encoding or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            text = body.decode("utf-8", errors="replace")
        if response.status_code >= 400:
            shown = text[:BODY_SHOWN] + ("..." if len(text) > BODY_SHOWN or cut else "")
            raise ToolException(
                f"Error: HTTP {response.status_code} {response.reason_phrase} from "
                f"{self.method} {url}" + (f"\n{shown}" if shown else "")
            )
        if cut:
            return (
                f"[The response of {self.method} {url} is longer than {self.max_response_bytes} "
                f"bytes (`max_response_bytes`): only its first {self.max_response_bytes} bytes "
                "follow. Ask for less (a page, a filter, a range) to see the rest.]\n" + text
            )
        return text or f"HTTP {response.status_code} {response.reason_phrase} (no body)"

    def failure(self, url: str, exc: httpx.HTTPError) -> ToolException:
        return ToolException(f"Error: {self.method} {url} failed: {type(exc).__name__}: {exc}")

    def timed_out(self, url: str) -> ToolException:
        return ToolException(f"Error: {self.method} {url} timed out after {self.timeout:g} seconds")

    async def _fetch(self, url: str, options: dict[str, Any]) -> tuple[httpx.Response, bytes, bool]:
        """The response, at most `max_response_bytes` of its body, and whether it was cut."""
        cap = self.max_response_bytes
        async with (
            httpx.AsyncClient(timeout=self.timeout) as client,
            client.stream(self.method, url, **options) as response,
        ):
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > cap:
                    return response, b"".join(chunks)[:cap], True
            return response, b"".join(chunks), False

    async def acall(self, **given: Any) -> str:
        url, options = self.request(given)
        try:
            async with asyncio.timeout(self.timeout):
                response, body, cut = await self._fetch(url, options)
        except (TimeoutError, httpx.TimeoutException):
            raise self.timed_out(url) from None
        except httpx.HTTPError as exc:
            raise self.failure(url, exc) from None
        return self.answer(url, response, body, cut)

    def call(self, **given: Any) -> str:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the usual case: a tool worker thread, no loop of its own
            return asyncio.run(self.acall(**given))
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called on a loop's thread
            return pool.submit(asyncio.run, self.acall(**given)).result()

    def tool(self) -> StructuredTool:
        return StructuredTool(
            name=self.name,
            description=self.description,
            args_schema={**self.schema, "title": self.name, "description": self.description},
            func=self.call,
            coroutine=self.acall,
            handle_tool_error=True,
        )


def path_segment(arg: str, text: str) -> str:
    """`text` percent-encoded as one path segment; a ToolException for a value that would
    name another resource (`.`, `..`, in any percent-encoding, or nothing)."""
    decoded, previous = text, None
    while decoded != previous:  # %252e%252e is `..` to a server that decodes twice
        previous, decoded = decoded, unquote(decoded)
    if decoded in _DOT_SEGMENTS or not text:
        shown = "an empty value" if not text else repr(text)
        raise ToolException(
            f"Error: argument {arg!r} goes into the URL path, where {shown} would change which "
            "resource is requested; give the name of one item (not `.`, `..` or empty)"
        )
    return quote(text, safe="")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _http_call(spec: HttpToolSpec) -> HttpCall:
    in_url = set(placeholders(spec.url)[0])
    if spec.body is not None:
        in_body = set(spec.body)
    elif spec.method in _QUERY_METHODS:
        in_body = set()
    else:
        in_body = set(spec.args) - in_url
    params = [
        Param(name, name, "path" if name in in_url else "body" if name in in_body else "query")
        for name in spec.args
    ]
    return HttpCall(
        name=spec.name,
        description=spec.description,
        method=spec.method,
        url=spec.url,
        params=params,
        schema=spec.args_schema(),
        headers=dict(spec.headers),
        timeout=spec.timeout,
        max_response_bytes=spec.max_response_bytes,
    )


def _operation_call(entry: OpenApiTool, operation: Operation) -> HttpCall:
    api = entry.openapi
    base = api.base_url or (api._servers[0] if api._servers else "")
    # the path's `{name}` placeholders are the parameters' names: rename them to the arguments'
    url = base.rstrip("/") + operation.path
    for param in operation.params:
        if param.location == "path" and param.arg != param.name:
            url = url.replace("{" + param.name + "}", "{" + param.arg + "}")
    params = [
        Param(p.arg, p.arg if p.location == "path" else p.name, p.location)
        for p in operation.params
    ]
    return HttpCall(
        name=operation.id,
        description=operation.description,
        method=operation.method,
        url=url,
        params=params,
        schema=operation.schema,
        headers=dict(api.headers),
        timeout=api.timeout,
        max_response_bytes=api.max_response_bytes,
    )


def http_calls(entry: HttpTool | OpenApiTool) -> list[HttpCall]:
    """The calls one `http:` or `openapi:` entry declares."""
    if isinstance(entry, HttpTool):
        return [_http_call(entry.http)]
    return [_operation_call(entry, op) for op in entry.openapi._operations.values()]


def tools_from_http(entry: HttpTool | OpenApiTool) -> list[StructuredTool]:
    """The tools of one `http:` or `openapi:` entry (the loader read the OpenAPI document)."""
    return [call.tool() for call in http_calls(entry)]
