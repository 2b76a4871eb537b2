"""The JSON Schemas of agent, cassette and test files (generated from agentctl's spec models,
as `agentctl schema` writes them), walked along a key path: the keys allowed there and their
descriptions."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from runner.lsp._deps import KeyPath, file_schema, json_schema_text, test_json_schema_text

Schema = dict[str, Any]


@cache
def schema_of(kind: str) -> Schema:
    """`agent` (fragments too), `workflow`, `cassette` or `test`."""
    if kind == "test":
        return dict(json.loads(test_json_schema_text()))
    if kind == "cassette":
        return dict(json.loads(json_schema_text("cassette")))
    document = json.loads(json_schema_text("agent"))  # an agent or a workflow: the file's branch
    return file_schema(document, "workflow" if kind == "workflow" else "agent")


def _expand(root: Schema, node: Any, depth: int = 0) -> list[Schema]:
    """`node` with its `$ref`s followed and its `anyOf` / `oneOf` / `allOf` branches spread."""
    if not isinstance(node, dict) or depth > 20:
        return []
    if "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return [{**extra, **s} for s in _expand(root, target, depth + 1)] or [extra]
    branches = [b for k in ("anyOf", "oneOf", "allOf") for b in node.get(k, [])]
    if not branches:
        return [node]
    own = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf", "allOf")}
    return [own] + [s for b in branches for s in _expand(root, b, depth + 1)]


def at_path(kind: str, path: KeyPath) -> list[Schema]:
    """The schemas a value at `path` may follow (several where the spec allows several forms)."""
    root = schema_of(kind)
    current = _expand(root, root)
    for step in path:
        following: list[Schema] = []
        for node in current:
            if isinstance(step, int):
                items = node.get("items")
                if isinstance(items, dict):
                    following += _expand(root, items)
            else:
                props = node.get("properties", {})
                if step in props:
                    following += _expand(root, props[step])
                elif isinstance(node.get("additionalProperties"), dict):
                    following += _expand(root, node["additionalProperties"])
        current = following
        if not current:
            break
    return current


def keys_at(kind: str, path: KeyPath) -> dict[str, str]:
    """The keys a mapping at `path` may have, each with its description."""
    found: dict[str, str] = {}
    for node in at_path(kind, path):
        for key, prop in node.get("properties", {}).items():
            if key not in found or not found[key]:
                found[key] = description(kind, prop)
    return found


def description(kind: str, prop: Any) -> str:
    for node in _expand(schema_of(kind), prop):
        if node.get("description"):
            return str(node["description"])
    return ""


def key_description(kind: str, path: KeyPath) -> str:
    """The description of the key at the end of `path` ("" when the schema has none)."""
    if not path:
        return ""
    for node in at_path(kind, path[:-1]):
        prop = node.get("properties", {}).get(path[-1])
        if prop is not None:
            text = description(kind, prop)
            if text:
                return text
    return ""


def enum_values(kind: str, path: KeyPath) -> list[str]:
    """The fixed values (`enum`, `const`, booleans) a value at `path` may take."""
    found: list[str] = []
    for node in at_path(kind, path):
        for value in node.get("enum", []) + ([node["const"]] if "const" in node else []):
            if str(value) not in found:
                found.append(str(value).lower() if isinstance(value, bool) else str(value))
        if node.get("type") == "boolean":
            found += [v for v in ("true", "false") if v not in found]
    return found
