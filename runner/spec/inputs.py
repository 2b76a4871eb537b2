"""The `inputs:` key: typed, documented parameters of an agent, given with `--var NAME=VALUE`.

`vars:` are free template variables with a value in the file; `inputs:` declare what the caller
must or may pass: a type, a description, `required`, a `default`, bounds or choices. Both reach
prompts as `{{ vars.NAME }}`; a name may be in only one of them.

Values are checked and converted by `convert_input` (pure, no I/O except reading a `file`
input): a command-line value is text, parsed by the input's type (`--var depth=3` is the integer
3, `--var strict=yes` the boolean true); a value given as data (the Python API, a server's
`configurable.vars`) must already have the type (an integer for `number` is accepted).
"""

import math
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from runner.spec.base import SpecModel, describe

InputType = Literal["string", "integer", "number", "boolean", "enum", "file"]
INPUT_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean", "enum", "file")

MAX_FILE_INPUT_BYTES = 1_000_000
"""A `file` input's file may be this large at most (its text goes into the prompt)."""

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class CliText(str):
    """A `--var` value as typed on the command line: text, which a declared input parses by its
    type and a plain `vars:` name reads as a YAML scalar (`3`, `true`, `text`)."""


class InputSpec(SpecModel):
    """One typed input: `--var NAME=VALUE` sets it; prompts read it as `{{ vars.NAME }}`."""

    type: InputType | None = None
    """`string` (the default), `integer`, `number`, `boolean`, `enum` (one of `enum:`; implied
    by `enum:`), or `file`: the value is a path and prompts get the file's text (UTF-8, at most
    1 MB; a relative path is relative to the working directory)."""
    description: str | None = None
    """What the input is for (shown by `agentctl inspect` and in serve's config schema)."""
    required: bool = False
    """A run without a value for it fails (`agentctl validate` and `inspect` do not need one)."""
    enum: list[str | int | float | bool] | None = Field(default=None, min_length=1)
    """The allowed values (a select); implies `type: enum`."""
    minimum: float | None = None
    """Smallest allowed value (`integer` and `number`)."""
    maximum: float | None = None
    """Largest allowed value (`integer` and `number`)."""
    default: Any = None
    """The value when none is given; checked against the type."""

    @field_validator("default")
    @classmethod
    def _default_fits(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        probe = cls.model_construct(**{k: v for k, v in info.data.items() if k != "default"})
        if probe.kind == "file":
            raise ValueError("a `file` input has no default (its value is a path to read)")
        if probe.kind == "enum" and not probe.enum:
            return value  # reported once, for the input
        return check_value(probe, value)

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        kind = self.kind
        if kind == "enum" and not self.enum:
            raise ValueError("`type: enum` needs `enum:`, the list of allowed values")
        if self.enum is not None and kind != "enum":
            raise ValueError(f"`enum:` lists choices, so the type is `enum`, not `{kind}`")
        if kind not in ("integer", "number"):
            for key in ("minimum", "maximum"):
                if getattr(self, key) is not None:
                    raise ValueError(f"`{key}` applies to integer and number inputs, not {kind}")
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError(f"`minimum` ({self.minimum:g}) is above `maximum` ({self.maximum:g})")
        if self.required and "default" in self.model_fields_set:
            raise ValueError(
                "a required input has no default (the caller must give it); remove `default` "
                "or `required: true`"
            )
        return self

    @property
    def kind(self) -> str:
        """The input's type, `enum:` and the default (`string`) applied."""
        if self.type is not None:
            return self.type
        return "enum" if self.enum is not None else "string"

    def expected(self) -> str:
        """What a value must be, in words: "an integer of at least 1", "one of: formal, casual"."""
        kind = self.kind
        if kind == "enum":
            return "one of: " + ", ".join(str(c) for c in self.enum or ())
        words = {
            "string": "text",
            "integer": "an integer",
            "number": "a number",
            "boolean": "true or false",
            "file": "the path of a readable text file",
        }[kind]
        if self.minimum is not None and self.maximum is not None:
            words += f" from {self.minimum:g} to {self.maximum:g}"
        elif self.minimum is not None:
            words += f" of at least {self.minimum:g}"
        elif self.maximum is not None:
            words += f" of at most {self.maximum:g}"
        return words

    def stand_in(self, name: str) -> Any:
        """A value for a required input that has none, so `validate` and `inspect` can render
        the prompts: its first choice, its minimum, or `<name>`."""
        kind = self.kind
        if kind == "enum":
            return (self.enum or [""])[0]
        if kind in ("integer", "number"):
            low = self.minimum if self.minimum is not None else 0
            return math.ceil(low) if kind == "integer" else float(low)
        if kind == "boolean":
            return False
        return f"<{name}>"

    def json_schema(self) -> dict[str, Any]:
        """The input as a JSON Schema property (serve's config schema)."""
        kind = self.kind
        schema: dict[str, Any]
        if kind == "enum":
            schema = {"enum": list(self.enum or ())}
        elif kind == "file":
            schema = {"type": "string", "format": "path"}
        else:
            schema = {"type": kind}
        if self.description:
            schema["description"] = self.description
        if self.default is not None:
            schema["default"] = self.default
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return schema


def check_value(spec: InputSpec, value: Any) -> Any:
    """`value` converted to the input's type; ValueError saying what was expected and found.

    A `CliText` (or, for non-string types, any text) is parsed; other values must have the type
    already. A `file` input's value is returned as the path (see `read_file_input`)."""
    kind = spec.kind
    text = value if isinstance(value, str) else None
    found = repr(str(value)) if isinstance(value, CliText) else describe(value)
    if kind in ("string", "file"):
        if text is None:
            raise ValueError(f"expected {spec.expected()}, found {found}")
        return str(text)
    if kind == "enum":
        for choice in spec.enum or ():
            if value == choice and type(value) is type(choice):
                return choice
            if text is not None and str(choice).lower() == text.strip().lower():
                return choice
        raise ValueError(f"expected {spec.expected()}, found {found}")
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if text is not None and text.strip().lower() in _TRUE + _FALSE:
            return text.strip().lower() in _TRUE
        raise ValueError(f"expected {spec.expected()} (or yes/no), found {found}")
    number = _number(value, text, integer=kind == "integer")
    if number is None:
        raise ValueError(f"expected {spec.expected()}, found {found}")
    if (spec.minimum is not None and number < spec.minimum) or (
        spec.maximum is not None and number > spec.maximum
    ):
        raise ValueError(f"expected {spec.expected()}, found {number:g}")
    return number


def _number(value: Any, text: str | None, *, integer: bool) -> int | float | None:
    """`value` as an integer (or a number), parsing text; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if integer:
            return int(value) if value.is_integer() else None
        return value if math.isfinite(value) else None
    if text is None:
        return None
    try:
        parsed = int(text.strip()) if integer else float(text.strip())
    except ValueError:
        return None
    return parsed if integer or math.isfinite(parsed) else None


def read_file_input(path_text: str) -> str:
    """The text of a `file` input's file; ValueError saying why it cannot be read."""
    path = Path(path_text).expanduser()
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise ValueError(f"{path_text} is a directory; expected a text file")
        if size > MAX_FILE_INPUT_BYTES:
            raise ValueError(
                f"{path_text} is {size:,} bytes; a file input may be {MAX_FILE_INPUT_BYTES:,} "
                "bytes at most"
            )
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"no file {path_text}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path_text} is not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path_text}: {exc.strerror}") from None


__all__ = [
    "INPUT_TYPES",
    "CliText",
    "InputSpec",
    "check_value",
    "read_file_input",
]
