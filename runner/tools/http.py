"""`http:` and `openapi:` tools: HTTP calls made with httpx, sync and async.

Where an argument goes: into the URL path (`{number}`, percent-encoded, so a value cannot add
path segments or a query), a query parameter, a header, or the JSON body. The answer comes back
as text: a 2xx response's body (large ones are evicted to a file like any large tool result, by
the filesystem middleware), and for a 4xx/5xx response, a timeout or a network failure an error
the model can act on (`HTTP 404 Not Found from GET ...` with the start of the body). The async
path uses `httpx.AsyncClient`, so no call blocks the event loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from langchain_core.tools import StructuredTool, ToolException

from runner.load.openapi import Operation, Param
from runner.spec import HttpTool, OpenApiTool
from runner.spec.declared_tools import HttpToolSpec, fill, placeholders

__all__ = ["HttpCall", "tools_from_http"]

BODY_SHOWN = 2000
"""Characters of an error response's body shown to the model."""
_QUERY_METHODS = ("GET", "HEAD", "DELETE")


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
        path: dict[str, str] = {}
        query: dict[str, Any] = {}
        headers = dict(self.headers)
        body: Any = None
        for param in self.params:
            value = given.get(
                param.arg, self.schema["properties"].get(param.arg, {}).get("default")
            )
            if value is None:
                continue
            if param.location == "path":
                path[param.name] = quote(_text(value), safe="")
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
        options: dict[str, Any] = {"params": query, "headers": headers}
        if body is not None:
            options["json"] = body
        return url, options

    def answer(self, url: str, response: httpx.Response) -> str:
        if response.status_code >= 400:
            text = response.text
            shown = text[:BODY_SHOWN] + ("..." if len(text) > BODY_SHOWN else "")
            raise ToolException(
                f"Error: HTTP {response.status_code} {response.reason_phrase} from "
                f"{self.method} {url}" + (f"\n{shown}" if shown else "")
            )
        return response.text or f"HTTP {response.status_code} {response.reason_phrase} (no body)"

    def failure(self, url: str, exc: httpx.HTTPError) -> ToolException:
        if isinstance(exc, httpx.TimeoutException):
            return ToolException(
                f"Error: {self.method} {url} timed out after {self.timeout:g} seconds"
            )
        return ToolException(f"Error: {self.method} {url} failed: {type(exc).__name__}: {exc}")

    def call(self, **given: Any) -> str:
        url, options = self.request(given)
        try:
            with httpx.Client(timeout=self.timeout) as client:
                response = client.request(self.method, url, **options)
        except httpx.HTTPError as exc:
            raise self.failure(url, exc) from None
        return self.answer(url, response)

    async def acall(self, **given: Any) -> str:
        url, options = self.request(given)
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.request(self.method, url, **options)
        except httpx.HTTPError as exc:
            raise self.failure(url, exc) from None
        return self.answer(url, response)

    def tool(self) -> StructuredTool:
        return StructuredTool(
            name=self.name,
            description=self.description,
            args_schema={**self.schema, "title": self.name, "description": self.description},
            func=self.call,
            coroutine=self.acall,
            handle_tool_error=True,
        )


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
    )


def http_calls(entry: HttpTool | OpenApiTool) -> list[HttpCall]:
    """The calls one `http:` or `openapi:` entry declares."""
    if isinstance(entry, HttpTool):
        return [_http_call(entry.http)]
    return [_operation_call(entry, op) for op in entry.openapi._operations.values()]


def tools_from_http(entry: HttpTool | OpenApiTool) -> list[StructuredTool]:
    """The tools of one `http:` or `openapi:` entry (the loader read the OpenAPI document)."""
    return [call.tool() for call in http_calls(entry)]
