"""Shared building blocks of the spec: the base model, names, import references, source paths.

Every model forbids unknown keys (a typo is an error, not a silently ignored key) and turns its
attribute docstrings into JSON Schema descriptions, so editors show them on hover.
"""

import ast
import functools
import importlib.util
import inspect
import marshal
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"
NAME_RULE = "lowercase letters, digits, '-' and '_', starting with a letter or digit"

Name = Annotated[str, Field(pattern=NAME_PATTERN, min_length=1, max_length=64)]
"""An agent, subagent or server name."""

IMPORT_REF_PATTERN = r"^[^:\s]+:[A-Za-z_][A-Za-z0-9_.]*$"
ImportRef = Annotated[
    str,
    Field(
        pattern=IMPORT_REF_PATTERN,
        examples=["my_pkg.tools:search", "./tools.py:search"],
    ),
]
"""`package.module:attribute`, or `path/to/file.py:attribute` relative to the spec file."""

ENTRY_ERROR = "entry_kind"
"""Error type of a list entry whose kind (inline, ref, import, mcp) cannot be told; the message
says what an entry looks like, the loader adds what was found."""

JSON_SCHEMA_ERROR = "json_schema"
"""Error type of a problem inside a JSON Schema value; its context `at` is the key path in it."""


def json_schema_error(message: str, at: tuple[str | int, ...] = ()) -> PydanticCustomError:
    """A validation error located at key path `at` inside the JSON Schema being validated."""
    return PydanticCustomError(JSON_SCHEMA_ERROR, "{message}", {"message": message, "at": at})


_IMPORT_FILE = re.compile(r"\.py$")


def import_ref_is_file(ref: str) -> bool:
    """True for `path/to/file.py:name` refs, false for `package.module:name` refs."""
    target = ref.rsplit(":", 1)[0]
    return bool(_IMPORT_FILE.search(target)) or "/" in target or "\\" in target


def empty_list() -> list[Any]:
    """The default factory of a list field: `list`, without its cost. Pydantic asks for a default
    factory's signature (does it take the validated data?) each time it builds a schema with it
    and each time it makes a default without validating (`model_construct`), and the signature of
    the builtin `list` is parsed from its text with `ast`: 0.1 ms a time, 17 times in building
    `AgentSpec`'s validator."""
    return []


class SpecModel(BaseModel):
    """Base of every spec model: unknown keys are errors; docstrings become descriptions.

    The descriptions are what pydantic's `use_attribute_docstrings` would give, found another
    way: pydantic looks for each class's source by walking frames with `inspect.getmodule`,
    which resolves the path of every loaded module (0.1 s per process once LangChain is loaded,
    on every `agentctl run`); reading each spec module's source once costs a few milliseconds,
    and is cached (`_docstrings_in`).
    `defer_build` lets them be set before the validators are built, on first use.

    A settings field a file may leave out (`permissions`, `limits`, ...) defaults to
    `default_factory=TheSettings.model_construct`: the settings' own defaults, as `TheSettings()`
    gives them (there is nothing to validate in no input, and a default is not validated), without
    building a validator for the settings model at the first default made (0.1-0.8 ms each, for
    every agent that leaves them out; tests/spec/test_settings_defaults.py).
    """

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        validate_default=False,
        defer_build=True,
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        docstrings = attribute_docstrings(cls)
        for name, field in cls.model_fields.items():
            if field.description is None and name in docstrings:
                field.description = docstrings[name]


def attribute_docstrings(cls: type) -> dict[str, str]:
    """`{attribute: docstring}` for the annotated attributes of `cls` followed by a string
    (pydantic's rule for `use_attribute_docstrings`)."""
    return _docstrings_in(cls.__module__).get(cls.__qualname__, {})


@functools.cache
def _docstrings_in(module: str) -> dict[str, dict[str, str]]:
    """`{class qualified name: {attribute: docstring}}` for the classes of a module's source.

    Parsing the source costs about 2 ms a spec module, some 25 ms of every `agentctl validate`
    and `run`, so the result is kept beside the module's bytecode, as Python keeps the bytecode
    (and in its format, `marshal`, which needs no import): in `__pycache__`, valid while the
    source's size and modification time are the ones it was read at, written unless
    `sys.dont_write_bytecode`. A cache that cannot be read or written means a parse, as without
    one."""
    path = getattr(sys.modules.get(module), "__file__", None)
    if not path:
        return {}
    try:
        stat = os.stat(path)
        cache = Path(importlib.util.cache_from_source(path)).with_suffix(".docstrings")
    except (OSError, NotImplementedError, ValueError):
        return _parse_docstrings(path)
    source = [stat.st_mtime_ns, stat.st_size]
    try:
        kept = marshal.loads(cache.read_bytes())
        if kept["source"] == source and isinstance(kept["classes"], dict):
            return dict(kept["classes"])
    except (OSError, EOFError, ValueError, KeyError, TypeError):
        pass
    found = _parse_docstrings(path)
    if not sys.dont_write_bytecode:
        _write_atomically(cache, marshal.dumps({"source": source, "classes": found}))
    return found


def _write_atomically(path: Path, data: bytes) -> None:
    """Write `path` by renaming a whole file over it (a reader never sees half of one); give up
    silently if the folder cannot be written."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)


def _parse_docstrings(path: str) -> dict[str, dict[str, str]]:
    """What `_docstrings_in` keeps, read from the source ({} without a readable one)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    found: dict[str, dict[str, str]] = {}

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                found[prefix + node.name] = _class_docstrings(node)
                collect(node.body, f"{prefix}{node.name}.")

    collect(tree.body, "")
    return found


def _class_docstrings(node: ast.ClassDef) -> dict[str, str]:
    docstrings: dict[str, str] = {}
    target: str | None = None
    for statement in node.body:
        if (
            target is not None
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            docstrings[target] = inspect.cleandoc(statement.value.value)
        target = (
            statement.target.id
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
            else None
        )
    return docstrings


class SourcePath(SpecModel):
    """A file or folder, either on the host or inside the agent's backend.

    Written as a string: `./AGENTS.md`, `notes/AGENTS.md` and `~/.agentctl/AGENTS.md` are host paths
    (relative ones resolve against the spec file); a string starting with `/` is a path inside the
    agent's backend, such as `/memories/AGENTS.md`. For an absolute host path write `{host: /abs}`.
    """

    host: str | None = None
    """A path on the host machine."""
    backend: str | None = None
    """A path inside the agent's backend (starts with `/`)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.host is None) == (self.backend is None):
            raise ValueError("give exactly one of `host` or `backend`")
        if self.backend is not None and not self.backend.startswith("/"):
            raise ValueError(f"a backend path must start with '/', found {self.backend!r}")
        return self

    @property
    def path(self) -> str:
        return self.host if self.host is not None else self.backend  # type: ignore[return-value]

    def __str__(self) -> str:
        return self.path


def _parse_source_path(value: Any) -> Any:
    if isinstance(value, str):
        return {"backend": value} if value.startswith("/") else {"host": value}
    if isinstance(value, dict | BaseModel):
        return value
    raise ValueError(f"expected a path, found {describe(value)}")


SourcePathInput = Annotated[
    SourcePath,
    BeforeValidator(_parse_source_path, json_schema_input_type=str | SourcePath),
]


def describe(value: Any) -> str:
    """How a YAML author would name a value they wrote: "text 'abc'", "the number 3", "a list"."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"text {shown!r}" if value else "empty text"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def shorthand(key: str, scalar: type | tuple[type, ...], expected: str) -> Any:
    """A `mode="before"` function: a scalar of type `scalar` means `{key: scalar}`; any other
    non-mapping is an error saying `expected`."""

    def expand(value: Any) -> Any:
        if isinstance(value, dict | BaseModel):
            return value
        if isinstance(value, scalar) and not (
            isinstance(value, bool) and bool not in _types(scalar)
        ):
            return {key: value}
        raise ValueError(f"expected {expected}, found {describe(value)}")

    return expand


def _types(scalar: type | tuple[type, ...]) -> tuple[type, ...]:
    return scalar if isinstance(scalar, tuple) else (scalar,)


def seed_names(data: Any, names: dict[str, str]) -> Any:
    """A `mode="before"` check for keys the seeds (deepagents) name differently: `names` maps
    the seeds' name to ours. Each is accepted through a `validation_alias`; writing both is an
    error here, rather than the seeds' one being reported as an unknown key."""
    if isinstance(data, dict):
        for seed, ours in names.items():
            if seed in data and ours in data:
                raise ValueError(f"`{seed}` is the seeds' name for `{ours}`; give only one of them")
    return data


def is_workflow_document(value: Any) -> bool:
    """True for a YAML document that is a workflow (it has `workflow:`)."""
    return isinstance(value, dict) and "workflow" in value


CASSETTE_SUFFIXES = (".cassette.yaml", ".cassette.yml")
"""How a cassette file's name ends (`agentctl validate` tells cassettes from agents by it). Here,
not with the cassette's models (`runner.spec.cassette`), so telling a file's kind by its name
does not create them."""
