"""agentctl's JSON Schema check (`response_format`) against the `jsonschema` package's check of
the same schemas with the draft 2020-12 meta-schema: the same verdict, valid or not."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.spec.json_schema import _KEYWORDS, JSON_TYPES, json_schema_problem


def reference_verdict(schema: Any) -> bool:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        return False
    return True


def test_every_keyword_of_the_meta_schema_is_known() -> None:
    """The keywords checked are exactly the ones the 2020-12 meta-schema and its vocabularies
    describe, so a keyword is never skipped by mistake."""
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]

    known: set[str] = set()
    root = "https://json-schema.org/draft/2020-12/"
    for uri in [f"{root}schema"] + [
        f"{root}meta/{name}"
        for name in (
            [
                "core",
                "applicator",
                "unevaluated",
                "validation",
                "meta-data",
                "format-annotation",
                "content",
            ]
        )
    ]:
        known |= set(REGISTRY.contents(uri).get("properties", {}))
    assert known == set(_KEYWORDS)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(allow_nan=False, min_value=-2, max_value=2),
    st.sampled_from([*JSON_TYPES, "objekt", "", "a+", "(", "[a-", "x_1", "1x", "#frag", "a#b"]),
)


def schemas_of(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from([*_KEYWORDS, "x-extra", "name"])
    return st.dictionaries(keys, children, max_size=4)


values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        schemas_of(children),
        st.dictionaries(st.sampled_from(["a", "(", "b+", "type"]), children, max_size=2),
    ),
    max_leaves=12,
)


@settings(max_examples=800, deadline=None)
@given(schemas_of(values))
def test_same_verdict_as_the_meta_schema(schema: dict[str, Any]) -> None:
    problem = json_schema_problem(schema)
    assert (problem is None) == reference_verdict(schema), problem


def well_formed(schema: st.SearchStrategy[Any]) -> dict[str, st.SearchStrategy[Any]]:
    """For each keyword, values that are mostly of the right shape (valid schemas are rare in
    the draw above, and a check that rejects too much must fail here too)."""
    names = st.sampled_from(["a", "b", "c", "a"])
    count = st.one_of(st.integers(0, 3), st.just(2.0), st.just(-1))
    number = st.one_of(st.integers(-2, 2), st.floats(-1, 1), st.just(True))
    text = st.one_of(st.sampled_from(["x", "ab", "^a+$", "(", "a#", "_a.b-c"]), st.just(3))
    mapping_of = lambda v: st.dictionaries(names, v, max_size=2)  # noqa: E731
    lists_of_names = st.lists(names, max_size=3)
    by_check = {
        "_schema": schema,
        "_schemas": st.lists(schema, max_size=2),
        "_count": count,
        "_number": number,
        "_positive_number": number,
        "_string": text,
        "_boolean": st.one_of(st.booleans(), st.just(0)),
        "_list": st.one_of(st.lists(st.integers(), max_size=2), st.just("x")),
        "_anything": st.integers(),
        "_regex": text,
        "_anchor": text,
        "_id": text,
        "_strings": lists_of_names,
        "_type": st.one_of(
            st.sampled_from(JSON_TYPES), st.lists(st.sampled_from(JSON_TYPES), max_size=3)
        ),
    }
    out: dict[str, st.SearchStrategy[Any]] = {}
    for key, check in _KEYWORDS.items():
        name = check.__name__
        if name in by_check:
            out[key] = by_check[name]
        elif key == "patternProperties":
            out[key] = st.dictionaries(st.sampled_from(["a", "^b", "(", "c+"]), schema, max_size=2)
        elif key == "dependentRequired":
            out[key] = mapping_of(lists_of_names)
        elif key == "dependencies":
            out[key] = mapping_of(st.one_of(schema, lists_of_names))
        elif key == "$vocabulary":
            out[key] = mapping_of(st.one_of(st.booleans(), st.just("yes")))
        else:
            out[key] = mapping_of(schema)
    return out


def mostly_valid(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    shapes = well_formed(children)
    return st.one_of(
        st.booleans(),
        st.sampled_from(sorted(shapes)).flatmap(
            lambda first: st.fixed_dictionaries({first: shapes[first]})
        ),
        st.lists(st.sampled_from(sorted(shapes)), min_size=2, max_size=3, unique=True).flatmap(
            lambda keys: st.fixed_dictionaries({k: shapes[k] for k in keys})
        ),
    )


@settings(max_examples=800, deadline=None)
@given(
    st.recursive(st.booleans(), mostly_valid, max_leaves=10).filter(lambda s: isinstance(s, dict))
)
def test_same_verdict_on_mostly_valid_schemas(schema: dict[str, Any]) -> None:
    problem = json_schema_problem(schema)
    assert (problem is None) == reference_verdict(schema), problem


@pytest.mark.parametrize(
    ("schema", "at", "message"),
    [
        (
            {"properties": {"answer": {"type": "string", "minLength": -1}}, "required": "x"},
            ("properties", "answer", "minLength"),
            "expected a whole number of 0 or more, found the number -1",
        ),
        (
            {"type": "objekt"},
            ("type",),
            "expected a JSON Schema type (array, boolean, integer, null, number, object, "
            "string), found 'objekt'; did you mean 'object'?",
        ),
        ({"type": ["string", "string"]}, ("type",), "lists 'string' twice; each may appear once"),
        ({"required": ["a", 1]}, ("required", 1), "expected a name (text), found the number 1"),
        ({"anyOf": []}, ("anyOf",), "expected a list of one or more schemas, found a list"),
        (
            {"items": "string"},
            ("items",),
            "expected a schema (a mapping, or true / false), found text 'string'",
        ),
        (
            {"pattern": "("},
            ("pattern",),
            "'(' is not a valid regular expression: "
            "missing ), unterminated subpattern at position 0",
        ),
        (
            {"patternProperties": {"[a-": {}}},
            ("patternProperties", "[a-"),
            "'[a-' is not a valid regular expression: unterminated character set at position 0",
        ),
        (
            {"multipleOf": 0},
            ("multipleOf",),
            "expected a number greater than 0, found the number 0",
        ),
        (
            {"$id": "a#b"},
            ("$id",),
            "an `$id` may end in an empty '#' but not have a fragment, found 'a#b'",
        ),
    ],
)
def test_messages_name_the_keyword_and_what_to_write(
    schema: dict[str, Any], at: tuple[str | int, ...], message: str
) -> None:
    assert json_schema_problem(schema) == (at, message)
    assert not reference_verdict(schema)


def test_valid_schemas_pass() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "pattern": "^[A-Z]"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "score": {"type": ["number", "null"], "minimum": 0, "multipleOf": 0.5},
            "kind": {"enum": ["a", "b"]},
        },
        "required": ["title"],
        "additionalProperties": False,
        "$defs": {"name": {"type": "string", "$anchor": "name"}},
        "x-vendor": {"anything": ["goes"]},
    }
    assert json_schema_problem(schema) is None
    assert reference_verdict(schema)
