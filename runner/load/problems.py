"""Turn pydantic validation errors into located problems a YAML author can act on.

Pydantic reports `loc` tuples that mix keys of the data with names of union members
(`('subagents', 1, 'inline subagent', 'modle')`). We walk the loc against the data to recover the
key path the author wrote, walk it against the types to know which keys were allowed (for "did you
mean"), and phrase each error type the way a person who wrote YAML would read it.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError

from runner.errors import Problem, SpecError
from runner.load.source import Document, KeyPath, SourceMap, read_source, read_yaml
from runner.spec.agent import FILESYSTEM_TOOLS
from runner.spec.base import (
    ENTRY_ERROR,
    IMPORT_REF_PATTERN,
    JSON_SCHEMA_ERROR,
    NAME_PATTERN,
    NAME_RULE,
    describe,
)

# Keys people bring from other tools, and the key that means the same here.
KEY_SYNONYMS = {
    "system_prompt": "prompt",
    "instructions": "prompt",
    "instruction": "prompt",
    "sub_agents": "subagents",
    "subagent": "subagents",
    "agents": "subagents",
    "tool": "tools",
    "interruptOn": "interrupt_on",
    "interrupt": "interrupt_on",
    "approvals": "interrupt_on",
    "skill": "skills",
    "memories": "memory",
    "variables": "vars",
    "type": "kind",
    "path": "root_dir",
    "root": "root_dir",
    "dir": "root_dir",
    "directory": "root_dir",
    "mcp_servers": "tools",
    "mcpServers": "tools",
    "handoffs": "subagents",
    "llm": "model",
    "backstory": "prompt",
    "goal": "description",
}

# Unknown keys that deserve more than a "did you mean": where the thing they mean is written.
_KEY_HINTS = {
    "mcp_servers": "MCP servers are tools here: `tools: [{mcp: {name: docs, command: ...}}]`",
    "mcpServers": "MCP servers are tools here: `tools: [{mcp: {name: docs, command: ...}}]`",
}

# Settings of a chat model, often written next to `model:` instead of in its `params:`.
_MODEL_SETTINGS = frozenset(
    {"temperature", "max_tokens", "top_p", "top_k", "api_key", "base_url", "timeout", "seed"}
)

_EXPECTED = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "none_required": "nothing (null)",
}

_PATTERNS = {
    NAME_PATTERN: NAME_RULE,
    IMPORT_REF_PATTERN: "an import reference 'package.module:name' or 'path/to/file.py:name'",
    r"^[A-Za-z0-9_-]{1,64}$": "letters, digits, '_' and '-' (at most 64)",
}


_BUILT_IN_TOOLS = frozenset(FILESYSTEM_TOOLS)


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str | None:
    choices = list(choices)
    if word in KEY_SYNONYMS and KEY_SYNONYMS[word] in choices:
        return KEY_SYNONYMS[word]
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", word).lower()  # interruptOn -> interrupt_on
    if snake != word and snake in choices:
        return snake
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if close:
        return close[0]
    lowered = {c.lower(): c for c in choices}
    return lowered.get(word.lower().replace("-", "_"))


def _quoted(values: typing.Iterable[str]) -> str:
    return ", ".join(repr(v) for v in values)


# --------------------------------------------------------------------------- type walking


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _tags(tp: Any) -> list[str]:
    if get_origin(tp) is Annotated:
        return [m.tag for m in get_args(tp)[1:] if isinstance(m, Tag)]
    return []


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _model_field(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return (
                info.annotation
                if not info.metadata
                else Annotated[(info.annotation, *info.metadata)]
            )
    return None


def _kind_literal(model: Any) -> Any:
    if isinstance(model, type) and issubclass(model, BaseModel) and "kind" in model.model_fields:
        return get_args(model.model_fields["kind"].annotation)
    return ()


def _step(tp: Any, part: str | int) -> Any:
    """The type found at `part` inside a value of type `tp` (None when unknown)."""
    if tp is None:
        return None
    base = _unwrap(tp)
    if _is_union(base):
        members = [m for m in get_args(base) if _unwrap(m) is not type(None)]
        for member in members:
            if part in _tags(member) or part in _kind_literal(_unwrap(member)):
                return member
            if getattr(_unwrap(member), "__name__", None) == part:
                return member
        if len(members) == 1:
            return _step(members[0], part)
        return None
    origin = get_origin(base)
    if origin is list:
        return get_args(base)[0] if isinstance(part, int) else None
    if origin is dict:
        return get_args(base)[1]
    if isinstance(base, type) and issubclass(base, BaseModel) and isinstance(part, str):
        return _model_field(base, part)
    return None


def _is_tag(tp: Any, part: str | int) -> bool:
    """Whether `part` of an error's location is the tag of a member of the union `tp`."""
    base = _unwrap(tp) if tp is not None else None
    return _is_union(base) and any(
        part in _tags(member) or part in _kind_literal(_unwrap(member)) for member in get_args(base)
    )


def _models_in(tp: Any) -> list[type[BaseModel]]:
    base = _unwrap(tp)
    if _is_union(base):
        return [m for member in get_args(base) for m in _models_in(member)]
    if isinstance(base, type) and issubclass(base, BaseModel):
        return [base]
    return []


def allowed_keys(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


# --------------------------------------------------------------------------- translation


class _Located(typing.NamedTuple):
    path: KeyPath
    message: str
    at_key: bool
    is_type_error: bool
    expected: str
    unknown_key_hint: str | None = None  # for an unknown key: the allowed key it resembles


def _walk(loc: tuple[Any, ...], data: Any, root: type[BaseModel]) -> tuple[KeyPath, Any, Any, bool]:
    """(key path in the data, the value there, the type there, whether loc ended at a key)."""
    path: list[str | int] = []
    cur, tp = data, root
    at_key = False
    for part in loc:
        if part == "[key]":
            at_key = True
            continue
        tp_next = _step(tp, part)
        if _is_tag(tp, part):
            # A union member's tag names no value (a step's tag `agent` is also its key)
            tp = tp_next if tp_next is not None else tp
            continue
        in_mapping = isinstance(cur, dict) and isinstance(part, str) and part in cur
        in_list = isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        if in_mapping or in_list:
            cur = cur[part]
            path.append(part)
        elif (
            isinstance(cur, dict)
            and tp_next is not None
            and _unwrap(tp) is not None
            and not _is_union(_unwrap(tp))
        ):
            # A key the mapping lacks (a missing required key): name it, point at its parent.
            # (A scalar in a short form, like `backend: filesystem`, has no keys to name.)
            path.append(part)
            cur = None
        tp = tp_next if tp_next is not None else tp
    return tuple(path), cur, tp, at_key


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _literal_choices(tp: Any, ctx: dict[str, Any]) -> list[Any]:
    base = _unwrap(tp)
    if get_origin(base) is Literal:
        return list(get_args(base))
    return re.findall(r"'([^']*)'", str(ctx.get("expected", "")))


def _unknown_key(key: str, owner_tp: Any) -> tuple[str, str | None]:
    """The message for an unknown `key` in a mapping of type `owner_tp`, and its hint."""
    models = _models_in(owner_tp)
    choices = sorted(allowed_keys(models[0])) if len(models) == 1 else []
    if key in _KEY_HINTS and "tools" in choices:
        return f"unknown key; {_KEY_HINTS[key]}", None
    if key in _MODEL_SETTINGS and "model" in choices:
        where = f"`model: {{id: ..., params: {{{key}: ...}}}}`"
        return f"unknown key; settings of the model go under it: {where}", None
    hint = did_you_mean(key, choices) if choices else None
    if hint:
        return f"unknown key; did you mean {hint!r}?", hint
    if not choices:
        return "unknown key", None
    message = f"unknown key; expected one of: {', '.join(choices)}"
    if "params" in choices:
        message += f"; settings of the model such as {key!r} go under `params:`"
    elif "ref" in choices:
        message += "; set the rest in the ref'd file"
    return message, None


def _resembling(data: Any, key: str, owner_tp: Any) -> str | None:
    """A key of the mapping `data` that is not allowed there and looks like `key` (a typo of a
    required key reads better as "did you mean" than as a missing key)."""
    if not isinstance(data, dict):
        return None
    models = _models_in(owner_tp)
    allowed = set(allowed_keys(models[0])) if len(models) == 1 else set()
    for written in data:
        unknown = isinstance(written, str) and written not in allowed
        if unknown and did_you_mean(written, [key]) == key:
            return str(written)
    return None


def _list_hint(value: Any, path: KeyPath) -> str:
    if isinstance(value, dict):
        return "; start each item with '- '"
    if not isinstance(value, str) or not value.isprintable() or len(value) > 40:
        return ""
    if path and path[-1] == "args" and " " in value.strip():
        return f"; write each argument as an item: [{', '.join(value.split())}]"
    return f"; for a single item write [{value}]" if " " not in value.strip() else ""


def _translate(error: Any, data: Any, root: type[BaseModel]) -> _Located:  # noqa: C901 (one branch per kind of pydantic error)
    kind = error["type"]
    loc = tuple(error["loc"])
    ctx = error.get("ctx") or {}
    path, here, tp, at_key = _walk(loc, data, root)
    value = error.get("input")
    found = describe(value)

    if kind == "extra_forbidden":
        owner_path, _, owner_tp, _ = _walk(loc[:-1], data, root)
        key = str(loc[-1])
        message, hint = _unknown_key(key, owner_tp)
        return _Located((*owner_path, key), message, True, False, "", hint)
    if kind in ("missing", "union_tag_not_found"):
        if kind == "missing":
            owner_loc, key = loc[:-1], str(loc[-1])
        else:
            owner_loc, key = loc, str(ctx.get("discriminator", "")).strip("'")
        owner_path, owner, owner_tp, _ = _walk(owner_loc, data, root)
        written = _resembling(owner, key, owner_tp)
        if written is not None:
            message = f"unknown key; did you mean {key!r}?"
            return _Located((*owner_path, written), message, True, False, "", key)
        if isinstance(owner, dict) or owner is None:
            message = "missing required key"
            if key == "description" and "subagents" in owner_path:
                message += "; the main agent reads it to decide when to use this subagent"
            return _Located((*owner_path, key), message, False, False, "")
        # A short form such as `backend: filesystem` that needs more keys than the short form has.
        kinds = _kind_literal(_unwrap(owner_tp))
        if kinds and isinstance(owner, str):
            message = f"the {owner!r} backend needs `{key}`; write {{kind: {owner}, {key}: ...}}"
        else:
            message = f"needs `{key}`; write a mapping with `{key}:`"
        return _Located(owner_path, message, False, False, "")
    if kind == "list_type":
        message = f"expected a list, found {found}{_list_hint(value, path)}"
        return _Located(path, message, at_key, True, "a list")
    if kind in _EXPECTED:
        expected = _EXPECTED[kind]
        return _Located(path, f"expected {expected}, found {found}", at_key, True, expected)
    if kind == "literal_error":
        choices = _literal_choices(tp, ctx)
        if len(choices) == 1:
            message = f"expected {choices[0]!r}, found {found}"
        else:
            message = f"expected one of {', '.join(repr(c) for c in choices)}, found {found}"
        texts = [c for c in choices if isinstance(c, str)]
        if isinstance(value, str) and (hint := did_you_mean(value, texts)):
            message += f"; did you mean {hint!r}?"
        return _Located(path, message, at_key, False, "")
    if kind == "union_tag_invalid":
        discriminator = ctx.get("discriminator", "").strip("'")
        choices = re.findall(r"'([^']*)'", ctx.get("expected_tags", ""))
        tag = str(ctx.get("tag"))
        message = f"expected one of {_quoted(choices)}, found {describe(tag)}"
        if hint := did_you_mean(tag, choices):
            message += f"; did you mean {hint!r}?"
        # `backend: memory` (a short form) has no `kind` key to point at: point at the value.
        at = (*path, discriminator) if discriminator and isinstance(here, dict) else path
        return _Located(at, message, False, False, "")
    if kind == "string_pattern_mismatch":
        rule = _PATTERNS.get(ctx.get("pattern", ""), f"text matching {ctx.get('pattern')}")
        message = f"expected {rule}, found {found}"
        if ctx.get("pattern") == IMPORT_REF_PATTERN and value in _BUILT_IN_TOOLS:
            message = (
                f"{value!r} is built in, not imported: the file tools are always there "
                "(`filesystem.tools` chooses which); `tools:` lists import references like "
                "'package.module:name' or 'path/to/file.py:name'"
            )
        return _Located(path, message, at_key, False, "")
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return _Located(path, "must not be empty", at_key, False, "")
        return _Located(path, f"must be at least {ctx['min_length']} characters", at_key, False, "")
    if kind == "string_too_long":
        length = len(value) if isinstance(value, str) else "more"
        message = f"must be at most {ctx['max_length']} characters, found {length}"
        return _Located(path, message, at_key, False, "")
    if kind == "too_short":
        count = ctx.get("min_length")
        message = f"must have at least {count} item{'s' if count != 1 else ''}"
        return _Located(path, message, at_key, False, "")
    comparisons = {
        "greater_than": ("greater than", "gt"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "less_than_equal": ("at most", "le"),
    }
    if kind in comparisons:
        words, key = comparisons[kind]
        message = f"must be {words} {_number(ctx[key])}, found {found}"
        return _Located(path, message, at_key, False, "")
    if kind == "value_error":
        message = str(error["msg"]).removeprefix("Value error, ")
        return _Located(path, message, at_key, False, "")
    if kind == ENTRY_ERROR:
        message = str(error["msg"])
        if not isinstance(value, dict):
            message += f", found {found}"
        return _Located(path, message, at_key, False, "")
    if kind == JSON_SCHEMA_ERROR:
        return _Located((*path, *ctx.get("at", ())), str(error["msg"]), False, False, "")
    message = str(error["msg"])
    return _Located(path, message[:1].lower() + message[1:], at_key, False, "")


def _fold_missing_into_unknown(items: list[_Located]) -> list[_Located]:
    """`prompt: {text: hi}` is one mistake: a key written instead of the required one. When a
    mapping has an unknown key and misses exactly one required key, say both in one line."""
    missing: dict[KeyPath, list[_Located]] = {}
    for item in items:
        if item.message.startswith("missing required key") and item.path:
            missing.setdefault(item.path[:-1], []).append(item)
    folded: set[int] = set()
    result = []
    for item in items:
        owner = item.path[:-1]
        if (
            item.message.startswith("unknown key")
            and len(missing.get(owner, [])) == 1
            and id(missing[owner][0]) not in folded
        ):
            gone = missing[owner][0]
            folded.add(id(gone))
            item = item._replace(message=f"{item.message}; `{gone.path[-1]}` is missing")
        result.append(item)
    return [item for item in result if id(item) not in folded]


def problems_from_validation(
    exc: ValidationError, data: Any, smap: SourceMap, root: type[BaseModel]
) -> list[Problem]:
    """Every error of `exc` as a located problem, union noise folded away."""
    located = [_translate(error, data, root) for error in exc.errors()]

    # A union tried several members; when one member got further (an error deeper inside the
    # value, or a non-type error at the same place), the members that failed on the type alone
    # are noise.
    def has_better(item: _Located) -> bool:
        return any(
            other is not item
            and other.path[: len(item.path)] == item.path
            and (len(other.path) > len(item.path) or not other.is_type_error)
            for other in located
        )

    # A misspelled required key is one mistake: report the unknown key, not also the missing one.
    misspelled = {
        (*item.path[:-1], item.unknown_key_hint) for item in located if item.unknown_key_hint
    }
    kept = [
        item
        for item in located
        if not (item.is_type_error and has_better(item))
        and not (item.message.startswith("missing required key") and item.path in misspelled)
    ]
    kept = _fold_missing_into_unknown(kept)
    # Type errors at one place from several union members read as one: "expected A or B".
    type_errors: dict[KeyPath, _Located] = {}
    others: dict[tuple[KeyPath, str], _Located] = {}
    for item in kept:
        if not item.is_type_error:
            # One message per unknown key, the one with a "did you mean" when there is one.
            unknown = item.message.startswith("unknown key")
            slot = (item.path, "unknown key" if unknown else item.message)
            if slot not in others or (unknown and not others[slot].unknown_key_hint):
                others[slot] = item
        elif item.path not in type_errors:
            type_errors[item.path] = item
        elif item.expected not in type_errors[item.path].expected:
            first = type_errors[item.path]
            joiner = ", or " if " or " in first.expected else " or "
            expected = f"{first.expected}{joiner}{item.expected}"
            found = first.message.rsplit(", found ", 1)[1]
            type_errors[item.path] = first._replace(
                message=f"expected {expected}, found {found}", expected=expected
            )
    problems = {
        smap.problem(item.path, item.message, at_key=item.at_key)
        for item in [*others.values(), *type_errors.values()]
    }
    return sorted(problems)


__all__ = ["KEY_SYNONYMS", "allowed_keys", "did_you_mean", "problems_from_validation"]


def read_yaml_file(
    path: Path, shown: str, *, missing: str, unreadable: str, env: Mapping[str, str] | None = None
) -> Document:
    """Read and parse the YAML file at `path` (shown as `shown`), or raise `SpecError`: `missing`
    when there is no such file, `unreadable: <why>` when it cannot be read, else the YAML's
    located problems."""
    try:
        text = read_source(path)
    except FileNotFoundError:
        raise SpecError(Problem(shown, 0, 0, "", missing)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SpecError(Problem(shown, 0, 0, "", f"{unreadable}: {exc}")) from None
    doc = read_yaml(text, shown, env)
    if doc.problems:
        raise SpecError(doc.problems)
    return doc


def not_a_mapping(doc: Document, file: str, keys: str) -> Problem:
    """The problem of a file whose top level is not a mapping: `keys` names the ones expected
    (`name:, model:, prompt:, ...`)."""
    found = (
        "an empty file"
        if doc.value is None
        else "a list"
        if isinstance(doc.value, list)
        else repr(doc.value)
    )
    return Problem(
        file,
        doc.pos.loc.line,
        doc.pos.loc.col,
        "",
        f"expected a mapping of keys ({keys}), found {found}",
    )
