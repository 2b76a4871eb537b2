"""OpenAPI 3.x documents read into tool definitions, with located problems; no langchain here.

The loader reads the document an `openapi:` tool entry names (so `agentctl validate` reports a
missing file, an invalid document or an unknown `operationId` with file, line and key), and keeps
the operations it lists on the entry. `runner.tools.http` makes them into tools.

An operation's tool arguments: its path, query and header parameters (path-level ones too), and
its JSON request body. A body whose schema is an object with `properties` gives one argument per
property (unless a name is taken by a parameter: then the body is one `body` argument); any other
body is one `body` argument. Local `$ref`s (`#/components/...`) are resolved; a recursive schema
is cut at its second appearance (accepting any value there). Names that a model API would refuse
as argument names (`filter[tag]`, `X-Trace-Id` is fine) are rewritten to `[A-Za-z0-9_-]` and
mapped back when calling.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import Problem
from runner.load.source import SourceMap, read_source, read_yaml

if TYPE_CHECKING:
    from runner.spec import OpenApiSpec

__all__ = ["ApiDocument", "Operation", "Param", "read_document", "read_operations"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_ARG_NAME = re.compile(r"[^A-Za-z0-9_-]")
_MAX_REF_DEPTH = 50


@dataclass(frozen=True)
class Param:
    """One tool argument and where it goes in the request."""

    arg: str
    """The argument's name in the tool's schema."""
    name: str
    """Its name in the request (the parameter's, or the body property's)."""
    location: str
    """`path`, `query`, `header`, `body` (one property of a JSON body) or `body*` (the whole
    body)."""


@dataclass
class Operation:
    """One operation of the document, as a tool."""

    id: str
    method: str
    path: str
    description: str
    params: list[Param] = field(default_factory=list)
    schema: dict[str, Any] = field(default_factory=dict)
    """The JSON Schema of the tool's arguments (an object)."""

    @property
    def required(self) -> list[str]:
        return list(self.schema.get("required") or [])


@dataclass
class ApiDocument:
    """A read document: its operations by id and its `servers` URLs, or its problems."""

    operations: dict[str, Operation] = field(default_factory=dict)
    servers: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def read_document(path: Path, shown: str) -> ApiDocument:
    """The OpenAPI document at `path` (named `shown` in messages). A file that cannot be read
    gives one problem without a location (the caller locates it at its `spec:` key)."""
    found = ApiDocument()
    try:
        text = read_source(path)
    except FileNotFoundError:
        found.problems.append(Problem(shown, 0, 0, "", "OpenAPI document not found"))
        return found
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        found.problems.append(
            Problem(shown, 0, 0, "", f"cannot read the OpenAPI document: {reason}")
        )
        return found
    # `$${` and friends are read as in agent files; a document rarely has any.
    doc = read_yaml(text, shown, {})
    if doc.problems:
        found.problems.extend(doc.problems)
        return found
    smap = SourceMap(doc.pos)
    _Reader(doc.value, smap, found).read()
    return found


def read_operations(
    entry: OpenApiSpec, locate: Callable[[tuple[str | int, ...], str], Problem]
) -> list[Problem]:
    """Read the document of an `openapi:` entry (`entry.spec`, an absolute path) and keep the
    operations it lists on the entry. The problems: a missing file (located by `locate` at the
    entry's `spec` key), an invalid document (located in the document), an unknown
    `operationId` (at its place in `operations`), no server and no `base_url`."""
    from runner.errors import display_path
    from runner.load.problems import did_you_mean

    shown = display_path(entry.spec)
    document = read_document(Path(entry.spec), shown)
    if document.problems:
        return [
            locate(("spec",), f"{p.message}: {shown}") if p.line == 0 else p
            for p in document.problems
        ]
    problems: list[Problem] = []
    known = sorted(document.operations)
    for index, op_id in enumerate(entry.operations):
        operation = document.operations.get(op_id)
        if operation is None:
            hint = did_you_mean(op_id, known)
            fix = f"did you mean {hint!r}?" if hint else f"its operations: {', '.join(known)}"
            problems.append(
                locate(("operations", index), f"no operation {op_id!r} in {shown}; {fix}")
            )
            continue
        entry._operations[op_id] = operation
    entry._servers = document.servers
    if entry.base_url is None and not document.servers:
        message = f"{shown} lists no `servers:`; set `base_url:` (e.g. https://api.example.com)"
        problems.append(locate((), message))
    return problems


class _Reader:
    def __init__(self, value: Any, smap: SourceMap, out: ApiDocument) -> None:
        self.value = value
        self.smap = smap
        self.out = out

    def problem(self, at: tuple[str | int, ...], message: str) -> None:
        self.out.problems.append(self.smap.problem(at, message))

    def read(self) -> None:
        doc = self.value
        if not isinstance(doc, dict):
            self.problem((), "an OpenAPI document is a mapping with `openapi:` and `paths:`")
            return
        version = doc.get("openapi")
        if not (isinstance(version, str) and version.startswith("3.")):
            found = "nothing" if version is None else repr(version)
            hint = (
                " (Swagger 2.0 documents need converting to OpenAPI 3)" if "swagger" in doc else ""
            )
            self.problem(
                ("openapi",) if "openapi" in doc else (),
                f"expected an OpenAPI 3.x document (`openapi: 3.x.y`), found {found}{hint}",
            )
            return
        for index, server in enumerate(doc.get("servers") or []):
            if isinstance(server, dict) and isinstance(server.get("url"), str):
                self.out.servers.append(server["url"])
            else:
                self.problem(("servers", index), "a server is a mapping with `url:`")
        paths = doc.get("paths")
        if not isinstance(paths, dict):
            self.problem(("paths",) if "paths" in doc else (), "`paths:` must be a mapping")
            return
        for path, item in paths.items():
            if not isinstance(item, dict):
                self.problem(("paths", path), "a path item must be a mapping")
                continue
            shared = item.get("parameters") or []
            for method in METHODS:
                operation = item.get(method)
                if operation is None:
                    continue
                at = ("paths", path, method)
                if not isinstance(operation, dict):
                    self.problem(at, "an operation must be a mapping")
                    continue
                op_id = operation.get("operationId")
                if not isinstance(op_id, str) or not op_id:
                    continue  # only operations with ids can be named in `operations:`
                if op_id in self.out.operations:
                    self.problem((*at, "operationId"), f"operationId {op_id!r} is used twice")
                    continue
                made = self.operation(op_id, method, str(path), operation, shared, at)
                if made is not None:
                    self.out.operations[op_id] = made

    def resolve(self, value: Any, at: tuple[str | int, ...], seen: tuple[str, ...] = ()) -> Any:
        """`value` with local `$ref`s replaced (recursively); a problem for a broken one."""
        if isinstance(value, list):
            return [self.resolve(v, (*at, i), seen) for i, v in enumerate(value)]
        if not isinstance(value, dict):
            return value
        ref = value.get("$ref")
        if isinstance(ref, str):
            if ref in seen or len(seen) > _MAX_REF_DEPTH:
                return {}  # a recursive schema: any value from here down
            target = self.lookup(ref, (*at, "$ref"))
            if target is None:
                return {}
            return self.resolve(target, _ref_path(ref), (*seen, ref))  # problems: where written
        return {k: self.resolve(v, (*at, k), seen) for k, v in value.items()}

    def lookup(self, ref: str, at: tuple[str | int, ...]) -> Any:
        if not ref.startswith("#/"):
            self.problem(at, f"only local references (`#/...`) are supported, found {ref!r}")
            return None
        node: Any = self.value
        for part in _ref_path(ref):
            if not isinstance(node, dict) or part not in node:
                self.problem(at, f"{ref!r} points at nothing in this document")
                return None
            node = node[part]
        return node

    def operation(
        self,
        op_id: str,
        method: str,
        path: str,
        operation: dict[str, Any],
        shared: list[Any],
        at: tuple[str | int, ...],
    ) -> Operation | None:
        description = str(
            operation.get("description") or operation.get("summary") or f"{method.upper()} {path}"
        ).strip()
        made = Operation(op_id, method.upper(), path, description)
        properties: dict[str, Any] = {}
        required: list[str] = []
        by_key: dict[tuple[str, str], dict[str, Any]] = {}
        for where, items in (((*at[:2], "parameters"), shared), ((*at, "parameters"), None)):
            items = operation.get("parameters") or [] if items is None else items
            if not isinstance(items, list):
                self.problem(where, "`parameters:` must be a list")
                return None
            for index, raw in enumerate(items):
                param = self.resolve(raw, (*where, index))
                if not isinstance(param, dict) or not isinstance(param.get("name"), str):
                    self.problem((*where, index), "a parameter needs `name:` and `in:`")
                    return None
                location = param.get("in")
                if location not in ("path", "query", "header", "cookie"):
                    self.problem(
                        (*where, index, "in"), "`in:` must be path, query, header or cookie"
                    )
                    return None
                by_key[(param["name"], location)] = param  # the operation's overrides the path's
        for (name, location), param in by_key.items():
            if location == "cookie":
                continue  # not sent by these tools; a cookie header can go under `headers:`
            arg = _arg_name(name, properties)
            schema = dict(param.get("schema") or {"type": "string"})
            if param.get("description"):
                schema["description"] = str(param["description"])
            properties[arg] = schema
            if location == "path" or param.get("required"):
                required.append(arg)
            made.params.append(Param(arg, name, location))
        body = self.resolve(operation.get("requestBody"), (*at, "requestBody"))
        if isinstance(body, dict):
            content = body.get("content") or {}
            body_schema: Any = None
            for media, entry in content.items() if isinstance(content, dict) else ():
                if "json" in str(media) and isinstance(entry, dict):
                    body_schema = entry.get("schema") or {}
                    break
            if body_schema is None and content:
                self.problem(
                    (*at, "requestBody", "content"),
                    f"operation {op_id!r}: only JSON request bodies are supported, found "
                    f"{', '.join(map(str, content))}",
                )
                return None
            if body_schema is not None:
                body_required = bool(body.get("required"))
                fields = body_schema.get("properties") if isinstance(body_schema, dict) else None
                if (
                    isinstance(fields, dict)
                    and fields
                    and not any(_ARG_NAME.sub("_", n) in properties for n in fields)
                ):
                    inner = set(body_schema.get("required") or [])
                    for name, sub in fields.items():
                        arg = _arg_name(name, properties)
                        properties[arg] = sub if isinstance(sub, dict) else {}
                        if body_required and name in inner:
                            required.append(arg)
                        made.params.append(Param(arg, name, "body"))
                else:
                    arg = _arg_name("body", properties)
                    properties[arg] = body_schema if isinstance(body_schema, dict) else {}
                    if body_required:
                        required.append(arg)
                    made.params.append(Param(arg, "body", "body*"))
        made.schema = {"type": "object", "properties": properties, "required": required}
        return made


def _ref_path(ref: str) -> tuple[str, ...]:
    """The key path a local `$ref` (`#/components/schemas/Item`) points at."""
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/"))


def _arg_name(name: str, taken: dict[str, Any]) -> str:
    arg = _ARG_NAME.sub("_", name)[:64] or "arg"
    candidate, n = arg, 1
    while candidate in taken:
        n += 1
        candidate = f"{arg}_{n}"
    return candidate
