"""Turn pydantic validation errors into located problems a YAML author can act on.

Pydantic reports `loc` tuples that mix keys of the data with names of union members
(`('subagents', 1, 'inline subagent', 'modle')`). We walk the loc against the data to recover the
key path the author wrote, walk it against the types to know which keys were allowed (for "did you
mean"), and phrase each error type the way a person who wrote YAML would read it.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError

from runner.errors import Problem
from runner.spec.base import IMPORT_REF_PATTERN, NAME_PATTERN, NAME_RULE, describe
from runner.yamlsource import KeyPath, SourceMap

# Keys people bring from other tools, and the key that means the same here.
KEY_SYNONYMS = {
    "system_prompt": "prompt",
    "instructions": "prompt",
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
}

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
    IMPORT_REF_PATTERN: "'package.module:name' or 'path/to/file.py:name'",
    r"^[A-Za-z0-9_-]{1,64}$": "letters, digits, '_' and '-' (at most 64)",
}


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str | None:
    choices = list(choices)
    if word in KEY_SYNONYMS and KEY_SYNONYMS[word] in choices:
        return KEY_SYNONYMS[word]
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
        in_mapping = isinstance(cur, dict) and isinstance(part, str) and part in cur
        in_list = isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        if in_mapping or in_list:
            cur = cur[part]
            path.append(part)
        elif tp_next is not None and _unwrap(tp) is not None and not _is_union(_unwrap(tp)):
            # A key the data lacks (a missing required key): name it, point at its parent.
            path.append(part)
            cur = None
        tp = tp_next if tp_next is not None else tp
    return tuple(path), cur, tp, at_key


def _translate(error: Any, data: Any, root: type[BaseModel]) -> _Located:
    kind = error["type"]
    loc = tuple(error["loc"])
    ctx = error.get("ctx") or {}
    path, _, _, at_key = _walk(loc, data, root)
    found = describe(error.get("input"))

    if kind == "extra_forbidden":
        owner_path, _, owner_tp, _ = _walk(loc[:-1], data, root)
        models = _models_in(owner_tp)
        key = str(loc[-1])
        choices = sorted(allowed_keys(models[0])) if len(models) == 1 else []
        hint = did_you_mean(key, choices) if choices else None
        if hint:
            message = f"unknown key; did you mean {hint!r}?"
        elif choices:
            message = f"unknown key; expected one of: {', '.join(choices)}"
        else:
            message = "unknown key"
        return _Located((*owner_path, key), message, True, False, "")
    if kind == "missing":
        return _Located(path, "missing required key", False, False, "")
    if kind in _EXPECTED:
        expected = _EXPECTED[kind]
        return _Located(path, f"expected {expected}, found {found}", at_key, True, expected)
    if kind == "literal_error":
        expected_text = str(ctx.get("expected", ""))
        choices = re.findall(r"'([^']*)'", expected_text)
        shown = _quoted(choices) if choices else expected_text
        message = (
            f"expected one of {shown}, found {found}"
            if choices
            else f"expected {shown}, found {found}"
        )
        if isinstance(error.get("input"), str) and (hint := did_you_mean(error["input"], choices)):
            message += f"; did you mean {hint!r}?"
        return _Located(path, message, at_key, False, "")
    if kind == "union_tag_invalid":
        discriminator = ctx.get("discriminator", "").strip("'")
        choices = re.findall(r"'([^']*)'", ctx.get("expected_tags", ""))
        tag = str(ctx.get("tag"))
        message = f"expected one of {_quoted(choices)}, found {describe(tag)}"
        if hint := did_you_mean(tag, choices):
            message += f"; did you mean {hint!r}?"
        return _Located(
            (*path, discriminator) if discriminator else path, message, False, False, ""
        )
    if kind == "union_tag_not_found":
        discriminator = ctx.get("discriminator", "").strip("'")
        return _Located((*path, discriminator), "missing required key", False, False, "")
    if kind == "string_pattern_mismatch":
        rule = _PATTERNS.get(ctx.get("pattern", ""), f"text matching {ctx.get('pattern')}")
        return _Located(path, f"expected {rule}, found {found}", at_key, False, "")
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return _Located(path, "must not be empty", at_key, False, "")
        return _Located(path, f"must be at least {ctx['min_length']} characters", at_key, False, "")
    if kind == "string_too_long":
        length = len(error["input"]) if isinstance(error.get("input"), str) else "more"
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
        limit = ctx[key]
        if isinstance(limit, float) and limit.is_integer():
            limit = int(limit)
        return _Located(path, f"must be {words} {limit}, found {found}", at_key, False, "")
    if kind == "value_error":
        message = str(error["msg"]).removeprefix("Value error, ")
        return _Located(path, message, at_key, False, "")
    message = str(error["msg"])
    return _Located(path, message[:1].lower() + message[1:], at_key, False, "")


def problems_from_validation(
    exc: ValidationError, data: Any, smap: SourceMap, root: type[BaseModel]
) -> list[Problem]:
    """Every error of `exc` as a located problem, union noise folded away."""
    located = [_translate(error, data, root) for error in exc.errors()]

    # A union tried several members; when one member got further (a deeper or non-type error at
    # the same place), the members that failed on the type alone are noise.
    def has_better(item: _Located) -> bool:
        return any(
            other is not item
            and not other.is_type_error
            and other.path[: len(item.path)] == item.path
            for other in located
        )

    kept = [item for item in located if not (item.is_type_error and has_better(item))]
    # Type errors at one place from several union members read as one: "expected A or B".
    type_errors: dict[KeyPath, _Located] = {}
    others: list[_Located] = []
    for item in kept:
        if not item.is_type_error:
            others.append(item)
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
        for item in [*others, *type_errors.values()]
    }
    return sorted(problems)


__all__ = ["KEY_SYNONYMS", "allowed_keys", "did_you_mean", "problems_from_validation"]
