"""Is this value a valid JSON Schema (draft 2020-12)? The check behind `response_format`.

What the 2020-12 meta-schema asks of a schema, keyword by keyword: a schema is a mapping or
`true`/`false`; each keyword it knows has a value of the right shape (`properties` maps names to
schemas, `minLength` is a whole number of 0 or more, `pattern` is a regular expression, ...);
keywords it does not know are allowed. Checking it here rather than with the `jsonschema`
package keeps `agentctl validate` fast (that package and its meta-schemas cost more to import
than the whole check) and lets each message say what to write instead. URIs (`$id`, `$ref`,
`$schema`) are not checked for URI syntax, as `jsonschema` does not check them either unless an
optional package is installed. `tests/spec/test_json_schema.py` holds the two to the same
verdicts on generated schemas.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from runner.spec.base import describe

KeyPath = tuple[str | int, ...]
Problem = tuple[KeyPath, str]

JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")

_ANCHOR = re.compile(r"^[A-Za-z_][-A-Za-z0-9._]*$")
_ID = re.compile(r"^[^#]*#?$")


def json_schema_problem(schema: Any) -> Problem | None:
    """The first problem in `schema`, in the order it is written: its key path inside the schema
    and a message; None when it is a valid JSON Schema."""
    return next(_schema(schema, ()), None)


def json_type_message(found: str) -> str:
    import difflib

    close = difflib.get_close_matches(found, JSON_TYPES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"expected a JSON Schema type ({', '.join(JSON_TYPES)}), found {found!r}{hint}"


def _schema(value: Any, at: KeyPath) -> Iterator[Problem]:
    if isinstance(value, bool):
        return
    if not isinstance(value, dict):
        yield at, f"expected a schema (a mapping, or true / false), found {describe(value)}"
        return
    for key, item in value.items():
        check = _KEYWORDS.get(key)
        if check is not None:
            yield from check(item, (*at, key))


# --- the shapes keyword values take -------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    return _is_number(value) and (isinstance(value, int) or value.is_integer())


def _number(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not _is_number(value):
        yield at, f"expected a number, found {describe(value)}"


def _positive_number(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not _is_number(value) or value <= 0:
        yield at, f"expected a number greater than 0, found {describe(value)}"


def _count(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not _is_integer(value) or value < 0:
        yield at, f"expected a whole number of 0 or more, found {describe(value)}"


def _string(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not isinstance(value, str):
        yield at, f"expected text, found {describe(value)}"


def _boolean(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not isinstance(value, bool):
        yield at, f"expected true or false, found {describe(value)}"


def _list(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not isinstance(value, list):
        yield at, f"expected a list, found {describe(value)}"


def _anything(value: Any, at: KeyPath) -> Iterator[Problem]:
    return iter(())


def _regex_problem(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"{pattern!r} is not a valid regular expression: {exc}"
    return None


def _regex(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not isinstance(value, str):
        yield at, f"expected a regular expression (text), found {describe(value)}"
    elif (problem := _regex_problem(value)) is not None:
        yield at, problem


def _anchor(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not isinstance(value, str) or not _ANCHOR.search(value):
        yield (
            at,
            (
                f"expected a name of letters, digits, '-', '.' and '_' that starts with a letter "
                f"or '_', found {describe(value)}"
            ),
        )


def _id(value: Any, at: KeyPath) -> Iterator[Problem]:
    if not isinstance(value, str):
        yield at, f"expected a URI (text), found {describe(value)}"
    elif not _ID.search(value):
        yield at, f"an `$id` may end in an empty '#' but not have a fragment, found {value!r}"


def _schemas(value: Any, at: KeyPath) -> Iterator[Problem]:
    """A non-empty list of schemas (`allOf`, `anyOf`, `oneOf`, `prefixItems`)."""
    if not isinstance(value, list) or not value:
        yield at, f"expected a list of one or more schemas, found {describe(value)}"
        return
    for index, item in enumerate(value):
        yield from _schema(item, (*at, index))


def _unique(items: list[Any], at: KeyPath) -> Iterator[Problem]:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            yield at, f"lists {item!r} twice; each may appear once"
            return
        seen.add(item)


def _strings(value: Any, at: KeyPath) -> Iterator[Problem]:
    """A list of distinct strings (`required`, the lists of `dependentRequired`)."""
    if not isinstance(value, list):
        yield at, f"expected a list of names, found {describe(value)}"
        return
    for index, item in enumerate(value):
        if not isinstance(item, str):
            yield (*at, index), f"expected a name (text), found {describe(item)}"
            return
    yield from _unique(value, at)


def _type(value: Any, at: KeyPath) -> Iterator[Problem]:
    if isinstance(value, str):
        if value not in JSON_TYPES:
            yield at, json_type_message(value)
        return
    if not isinstance(value, list) or not value:
        yield (
            at,
            (
                f"expected a JSON Schema type ({', '.join(JSON_TYPES)}) or a list of them, "
                f"found {describe(value)}"
            ),
        )
        return
    for index, item in enumerate(value):
        if not isinstance(item, str) or item not in JSON_TYPES:
            found = json_type_message(item) if isinstance(item, str) else None
            yield (
                (*at, index),
                found
                or (
                    f"expected a JSON Schema type ({', '.join(JSON_TYPES)}), found {describe(item)}"
                ),
            )
            return
    yield from _unique(value, at)


def _mapping_of(
    check: Callable[[Any, KeyPath], Iterator[Problem]], what: str, keys: str | None = None
) -> Callable[[Any, KeyPath], Iterator[Problem]]:
    """A mapping whose values each pass `check`; `keys="regex"` also checks its keys."""

    def mapping(value: Any, at: KeyPath) -> Iterator[Problem]:
        if not isinstance(value, dict):
            yield at, f"expected a mapping of {what}, found {describe(value)}"
            return
        for key, item in value.items():
            if keys == "regex" and (problem := _regex_problem(key)) is not None:
                yield (*at, key), problem
                return
            yield from check(item, (*at, key))

    return mapping


def _schema_or_names(value: Any, at: KeyPath) -> Iterator[Problem]:
    """A value of the old `dependencies`: a schema, or a list of distinct names."""
    if isinstance(value, list):
        yield from _strings(value, at)
    else:
        yield from _schema(value, at)


_KEYWORDS: dict[str, Callable[[Any, KeyPath], Iterator[Problem]]] = {
    # core
    "$id": _id,
    "$schema": _string,
    "$ref": _string,
    "$anchor": _anchor,
    "$dynamicRef": _string,
    "$dynamicAnchor": _anchor,
    "$vocabulary": _mapping_of(_boolean, "vocabulary URIs to true or false"),
    "$comment": _string,
    "$defs": _mapping_of(_schema, "names to schemas"),
    # applicator
    "prefixItems": _schemas,
    "items": _schema,
    "contains": _schema,
    "additionalProperties": _schema,
    "properties": _mapping_of(_schema, "property names to schemas"),
    "patternProperties": _mapping_of(_schema, "regular expressions to schemas", keys="regex"),
    "dependentSchemas": _mapping_of(_schema, "property names to schemas"),
    "propertyNames": _schema,
    "if": _schema,
    "then": _schema,
    "else": _schema,
    "allOf": _schemas,
    "anyOf": _schemas,
    "oneOf": _schemas,
    "not": _schema,
    # unevaluated
    "unevaluatedItems": _schema,
    "unevaluatedProperties": _schema,
    # validation
    "type": _type,
    "const": _anything,
    "enum": _list,
    "multipleOf": _positive_number,
    "maximum": _number,
    "exclusiveMaximum": _number,
    "minimum": _number,
    "exclusiveMinimum": _number,
    "maxLength": _count,
    "minLength": _count,
    "pattern": _regex,
    "maxItems": _count,
    "minItems": _count,
    "uniqueItems": _boolean,
    "maxContains": _count,
    "minContains": _count,
    "maxProperties": _count,
    "minProperties": _count,
    "required": _strings,
    "dependentRequired": _mapping_of(_strings, "property names to lists of names"),
    # meta-data
    "title": _string,
    "description": _string,
    "default": _anything,
    "deprecated": _boolean,
    "readOnly": _boolean,
    "writeOnly": _boolean,
    "examples": _list,
    # format-annotation and content
    "format": _string,
    "contentEncoding": _string,
    "contentMediaType": _string,
    "contentSchema": _schema,
    # kept by the 2020-12 meta-schema from earlier drafts
    "definitions": _mapping_of(_schema, "names to schemas"),
    "dependencies": _mapping_of(_schema_or_names, "property names to schemas or lists of names"),
    "$recursiveAnchor": _anchor,
    "$recursiveRef": _string,
}
