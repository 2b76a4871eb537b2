"""The one check of a declared tool's arguments against its JSON Schema, before it runs.

`script:`, `http:` and `openapi:` tools all show the model a JSON Schema of their arguments
(`ToolArg.json_schema` for the first two, the OpenAPI document's schemas for the third); a model
may still send a value outside it (`"opened"` for an enum of `open`/`closed`, text for an
integer, `-1` below a `minimum`, an array for a string). Each call is checked here with
`jsonschema` (the schema's own vocabulary: `type`, `enum`, `minimum`/`maximum`,
`exclusiveMinimum`/`exclusiveMaximum`, `minLength`/`maxLength`, `pattern`, `items`, nested
`properties` ...) and a violation is a `ToolException` naming the argument: the model reads it
and retries; nothing is sent or run.

OpenAPI 3.0 documents write `exclusiveMinimum: true` (JSON Schema draft 4); 3.1 documents, and
our own schemas, are JSON Schema 2020-12: a schema that is not valid 2020-12 is read as draft 4.
A schema valid under neither (a document mistake) is not checked rather than failing every call.
Missing and unknown arguments are the callers' own checks (their messages name the tool's
arguments); `null` stands for "not given" and is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.tools import ToolException

__all__ = ["ArgumentCheck"]

SHOWN = 200
"""Characters of a violation's message shown to the model (a huge value is cut)."""


class ArgumentCheck:
    """A compiled check of one tool's arguments (`properties` of an object schema)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        from jsonschema import Draft4Validator, Draft202012Validator
        from jsonschema.exceptions import SchemaError

        self.validators: dict[str, Any] = {}
        for name, sub in (schema.get("properties") or {}).items():
            if not isinstance(sub, Mapping):
                continue
            for kind in (Draft202012Validator, Draft4Validator):
                try:
                    kind.check_schema(sub)
                except SchemaError:
                    continue
                self.validators[name] = kind(sub)
                break

    def check(self, given: Mapping[str, Any]) -> None:
        """Raise a `ToolException` for the first argument whose value its schema refuses."""
        from jsonschema.exceptions import best_match

        for name, value in given.items():
            validator = self.validators.get(name)
            if validator is None or value is None:
                continue
            error = best_match(validator.iter_errors(value))
            if error is None:
                continue
            where = "".join(f"[{p!r}]" for p in error.absolute_path)
            message = error.message
            if len(message) > SHOWN:
                message = message[: SHOWN // 2] + " … " + message[-SHOWN // 2 :]
            raise ToolException(f"Error: argument {name!r}{where}: {message}")
