"""YAML with positions: plain Python values plus a parallel tree of where each came from.

PyYAML composes the node graph (so syntax errors carry a mark); we then build the values
ourselves, which lets us record the line and column of every key and value, report duplicate
keys, keep mapping keys as written (`on:` stays the string "on", not True), and interpolate
`${VAR}` / `${VAR:-default}` in every string with errors located at the string.

Positions form a `Pos` tree shaped like the value, so merging two files (`include:`) merges their
positions with the same rules, and each value keeps the file it came from.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import yaml

from runner.errors import Problem

KeyPath = tuple[str | int, ...]

BUILTIN_VARIABLES = {"AGENTCTL_PYTHON": sys.executable}
"""`${NAME}`s that have a value when the environment does not set them: `AGENTCTL_PYTHON` is the
Python running agentctl (in its virtualenv), for stdio MCP servers and scripts that need the
packages installed with it."""

INTERPOLATED: set[str] = set()
"""Every value a `${VAR}` took from the environment in this process: API keys and passwords
among them, which traces must never show (`runner.run.telemetry` masks them)."""


@dataclass(frozen=True)
class Loc:
    file: str
    line: int  # 1-based
    col: int  # 1-based

    def problem(self, path: str, message: str) -> Problem:
        return Problem(self.file, self.line, self.col, path, message)


@dataclass
class Pos:
    """Where a value came from; for mappings and lists also where each child came from."""

    loc: Loc
    key_locs: dict[str, Loc] = field(default_factory=dict)
    children: dict[str | int, Pos] = field(default_factory=dict)
    block: bool = False  # a `|` or `>` scalar: its text starts on the line after `loc`
    text_col: int = 1  # for a block scalar, the column where its lines start (its indentation)

    def key_loc(self, key: str) -> Loc:
        """Where the mapping's `key` is written (the mapping's own place when it is absent)."""
        return self.key_locs.get(key, self.loc)

    def value_loc(self, key: str) -> Loc:
        """Where the value of the mapping's `key` is (the mapping's own place when absent)."""
        child = self.children.get(key)
        return child.loc if child is not None else self.loc


def format_path(path: KeyPath) -> str:
    """`subagents[1].model`, `backend.routes["/memories/"].kind`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]".replace("'", '"')
    return out


class SourceMap:
    """Key path -> location, for a whole (possibly merged) document."""

    def __init__(self, root: Pos) -> None:
        self.root = root

    def _node(self, path: KeyPath) -> tuple[Pos, int]:
        node, depth = self.root, 0
        for part in path:
            child = node.children.get(part)
            if child is None:
                break
            node, depth = child, depth + 1
        return node, depth

    def value_loc(self, path: KeyPath) -> Loc:
        """Where the value at `path` is; the nearest enclosing value when it does not exist."""
        return self._node(path)[0].loc

    def key_loc(self, path: KeyPath) -> Loc:
        """Where the key naming `path` is written (for unknown keys), else the value's place."""
        if path:
            parent, depth = self._node(path[:-1])
            last = path[-1]
            if depth == len(path) - 1 and isinstance(last, str) and last in parent.key_locs:
                return parent.key_locs[last]
        return self.value_loc(path)

    def exists(self, path: KeyPath) -> bool:
        return self._node(path)[1] == len(path)

    def file_of(self, path: KeyPath) -> str:
        return self.value_loc(path).file

    def text_line(self, path: KeyPath, line_in_text: int) -> Loc:
        """Where line `line_in_text` (1-based) of the string at `path` is in the file."""
        node, depth = self._node(path)
        loc = node.loc
        if depth != len(path):
            return loc
        if node.block:
            return Loc(loc.file, loc.line + line_in_text, node.text_col)
        offset = max(line_in_text - 1, 0)
        return Loc(loc.file, loc.line + offset, 1 if offset else loc.col)

    def shown(self, path: KeyPath) -> str:
        """How a problem names `path` (`subagents[1].model`)."""
        return format_path(path)

    def problem(self, path: KeyPath, message: str, *, at_key: bool = False) -> Problem:
        loc = self.key_loc(path) if at_key else self.value_loc(path)
        return loc.problem(self.shown(path), message)


# --------------------------------------------------------------------------- interpolation

_VAR = re.compile(r"\$\$\{|\$\{([^}]*)\}?")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _split_default(body: str) -> tuple[str, str, str]:
    """`NAME:-default` or `NAME-default` -> (name, separator, default), as the shell reads them:
    `:-` gives the default when NAME is unset or empty, `-` only when it is unset."""
    name = _VAR_NAME.match(body)
    end = name.end() if name else 0
    for sep in (":-", "-"):
        if body.startswith(sep, end):
            return body[:end], sep, body[end + len(sep) :]
    return body, "", ""


def interpolate(
    text: str, env: Mapping[str, str], problems: list[tuple[int, str]] | None = None
) -> str:
    """Replace `${VAR}`, `${VAR:-default}` (unset or empty) and `${VAR-default}` (unset only),
    as the shell does; `$${` is a literal `${`.

    Problems (offset in `text`, message) are appended to `problems`; without a list the first
    problem raises ValueError.
    """
    out: list[str] = []
    pos = 0
    for match in _VAR.finditer(text):
        out.append(text[pos : match.start()])
        pos = match.end()
        if match.group(0) == "$${":
            out.append("${")
            continue
        body = match.group(1)
        message = None
        if not match.group(0).endswith("}"):
            message = f"unclosed '${{' in {text!r}; write '$${{' for a literal '${{'"
            value = match.group(0)
        else:
            name, sep, default = _split_default(body)
            if not _VAR_NAME.fullmatch(name):
                message = (
                    f"bad variable reference '${{{body}}}': expected ${{NAME}}, "
                    f"${{NAME:-default}} or ${{NAME-default}}; write '$${{' for a literal '${{'"
                )
                value = match.group(0)
            elif name in env and not (sep == ":-" and env[name] == ""):
                value = env[name]
                INTERPOLATED.add(value)
            elif name in BUILTIN_VARIABLES and name not in env:
                value = BUILTIN_VARIABLES[name]
            elif sep:
                value = default
            else:
                message = (
                    f"environment variable {name} is not set; set it, or give a default "
                    f"with ${{{name}:-default}}"
                )
                value = ""
        if message:
            if problems is None:
                raise ValueError(message)
            problems.append((match.start(), message))
        out.append(value)
    out.append(text[pos:])
    return "".join(out)


# --------------------------------------------------------------------------- reading

_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _loc(file: str, node: yaml.Node) -> Loc:
    return Loc(file, node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    def __init__(self, file: str, env: Mapping[str, str], text: str) -> None:
        self.file = file
        self.env = env
        self.text = text
        self.problems: list[Problem] = []
        self.failed_paths: set[KeyPath] = set()
        self._constructor = yaml.constructor.SafeConstructor()

    def build(self, node: yaml.Node, path: KeyPath) -> tuple[Any, Pos]:
        if isinstance(node, yaml.MappingNode):
            if _is_unquoted_template(node):
                return self._unquoted_template(node, path)
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            values, pos = [], Pos(_loc(self.file, node))
            for index, item in enumerate(node.value):
                value, child = self.build(item, (*path, index))
                values.append(value)
                pos.children[index] = child
            return values, pos
        assert isinstance(node, yaml.ScalarNode)
        pos = Pos(_loc(self.file, node))
        if node.style in ("|", ">"):
            pos.block, pos.text_col = True, self._block_indent(node) + 1
        return self._scalar(node, path), pos

    def _pairs(self, node: yaml.MappingNode) -> Iterator[tuple[yaml.Node, yaml.Node]]:
        """Key/value pairs with YAML merge keys (`<<: *base`) expanded, own keys last."""
        own = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                for base in merged:
                    if isinstance(base, yaml.MappingNode):
                        yield from self._pairs(base)
            else:
                own.append((key_node, value_node))
        yield from own

    def _mapping(self, node: yaml.MappingNode, path: KeyPath) -> tuple[dict[str, Any], Pos]:
        result: dict[str, Any] = {}
        pos = Pos(_loc(self.file, node))
        own_keys: dict[str, Loc] = {}
        direct = {id(k) for k, _ in node.value}
        for key_node, value_node in self._pairs(node):
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(
                    _loc(self.file, key_node).problem(
                        format_path(path), "a key must be plain text, not a list or mapping"
                    )
                )
                continue
            key = str(key_node.value)
            key_loc = _loc(self.file, key_node)
            if id(key_node) in direct:
                if key in own_keys:
                    first = own_keys[key]
                    self.problems.append(
                        key_loc.problem(
                            format_path((*path, key)),
                            f"duplicate key (first given at line {first.line})",
                        )
                    )
                    continue
                own_keys[key] = key_loc
            value, child = self.build(value_node, (*path, key))
            result[key] = value
            pos.key_locs[key] = key_loc
            pos.children[key] = child
        return result, pos

    def _scalar(self, node: yaml.ScalarNode, path: KeyPath) -> Any:
        if node.tag == _STR_TAG or node.tag == "tag:yaml.org,2002:timestamp":
            text = str(node.value)
            if "$" not in text:
                return text
            found: list[tuple[int, str]] = []
            value = interpolate(text, self.env, found)
            for offset, message in found:
                self.problems.append(
                    self._at_offset(node, text, offset).problem(format_path(path), message)
                )
            if found:
                self.failed_paths.add(path)
            return value
        try:
            return self._constructor.construct_object(node, deep=True)
        except Exception as exc:
            # An explicit tag the value does not fit (`!!int x`), or a tag PyYAML's safe
            # constructor does not know (`!Ref x`): any failure here is the author's to fix.
            tag = node.tag.removeprefix("tag:yaml.org,2002:")
            if "could not determine a constructor" in str(getattr(exc, "problem", "")):
                message = f"unknown YAML tag {node.tag!r}; agent files use plain values, remove it"
            else:
                message = f"{node.value!r} is not a valid !!{tag} value"
            self.problems.append(_loc(self.file, node).problem(format_path(path), message))
            self.failed_paths.add(path)
            return node.value

    def _block_indent(self, node: yaml.ScalarNode) -> int:
        source = self.text[node.start_mark.index : node.end_mark.index]
        for line in source.splitlines()[1:]:
            if line.strip():
                return len(line) - len(line.lstrip(" "))
        return 0

    def _at_offset(self, node: yaml.ScalarNode, text: str, offset: int) -> Loc:
        """Where the `${` at `offset` in the scalar's value is written in the file.

        The value and its source differ (quotes, folding, indentation), but `${...}` references
        are copied verbatim, so the n-th reference in the value is the n-th in the source."""
        ordinal = sum(1 for m in _VAR.finditer(text, 0, offset) if m.group(0) != "$${")
        source = self.text[node.start_mark.index : node.end_mark.index]
        refs = [m for m in _VAR.finditer(source) if m.group(0) != "$${"]
        if ordinal >= len(refs):
            return _loc(self.file, node)
        index = node.start_mark.index + refs[ordinal].start()
        line = self.text.count("\n", 0, index) + 1
        col = index - (self.text.rfind("\n", 0, index) + 1) + 1
        return Loc(self.file, line, col)

    def _unquoted_template(self, node: yaml.MappingNode, path: KeyPath) -> tuple[str, Pos]:
        """`prompt: {{ vars.x }}` is a YAML mapping inside a mapping, not text: report it once and
        keep the source text, so the rest of the spec is still checked."""
        loc = _loc(self.file, node)
        source = self.text[node.start_mark.index : node.end_mark.index]
        self.problems.append(loc.problem(format_path(path), _unquoted_template_message(source)))
        self.failed_paths.add(path)
        return source, Pos(loc)


def _unquoted_template_message(source: str) -> str:
    shown = source if len(source) <= 40 and "\n" not in source else "{{ ... }}"
    return (
        f"a value starting with '{{{{' must be quoted, as in \"{shown}\", or written as a `|` "
        "block: unquoted, YAML reads '{' as the start of a mapping"
    )


def _is_unquoted_template(node: yaml.MappingNode) -> bool:
    return (
        node.flow_style is True
        and len(node.value) >= 1
        and isinstance(node.value[0][0], yaml.MappingNode)
        and node.value[0][0].flow_style is True
    )


@dataclass
class Document:
    """One YAML file read: its value (usually a mapping), positions and problems."""

    file: str
    value: Any
    pos: Pos
    problems: list[Problem]
    failed_paths: set[KeyPath] = field(default_factory=set)
    """Values that could not be read (a failed `${VAR}`, a bad tag, an unquoted `{{`):
    validation errors there would only repeat the problem."""


def read_yaml(text: str, file: str, env: Mapping[str, str] | None = None) -> Document:
    """Parse `text` (named `file` in messages). Syntax errors become one located problem."""
    env = os.environ if env is None else env
    try:
        node = compose(text)
    except InputTooLarge as exc:
        mark = exc.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        return Document(
            file, None, Pos(Loc(file, 1, 1)), [Problem(file, line, col, "", str(exc.problem))]
        )
    except yaml.MarkedYAMLError as exc:
        return Document(file, None, Pos(Loc(file, 1, 1)), [syntax_problem(exc, text, file)])
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        message = f"YAML syntax error: character {exc.character!r} is not allowed in a YAML file"
        return Document(file, None, Pos(Loc(file, 1, 1)), [Problem(file, line, col, "", message)])
    except yaml.YAMLError as exc:
        return Document(
            file, None, Pos(Loc(file, 1, 1)), [Problem(file, 0, 0, "", f"YAML error: {exc}")]
        )
    if node is None:
        return Document(file, None, Pos(Loc(file, 1, 1)), [])
    builder = _Builder(file, env, text)
    value, pos = builder.build(node, ())
    return Document(file, value, pos, builder.problems, builder.failed_paths)


_FAST_LOADER: type[yaml.SafeLoader] | None = getattr(yaml, "CSafeLoader", None)

# --------------------------------------------------------------------------- bounds

MAX_SOURCE_BYTES = 8 * 1024 * 1024
"""Agent files, includes, prompt files and cassettes larger than this are not read."""
MAX_ALIAS_EXPANSION = 10_000
"""Nodes that aliases (`*name`) may copy into one document, counted as if expanded."""
MAX_DEPTH = 100
"""Lists and mappings nested in one another, at most."""


class SourceTooLarge(ValueError):
    """A file over `MAX_SOURCE_BYTES`: not read."""


class InputTooLarge(yaml.MarkedYAMLError):
    """A document over one of the bounds: an alias bomb, a loop of aliases, too deep nesting."""


SOURCE_OVERLAY: ContextVar[Mapping[str, str] | None] = ContextVar("SOURCE_OVERLAY", default=None)
"""Texts that `read_source` returns instead of the files' (keys: absolute, normalised paths):
the unsaved buffers of an editor (`agentctl lsp`), so that what is checked is what is typed."""


def read_source(path: os.PathLike[str] | str, *, limit: int | None = None) -> str:
    """The UTF-8 text of a file, refused (`SourceTooLarge`, with the reason) past `limit` bytes
    (default `MAX_SOURCE_BYTES`) before any of it is read into memory. OSError and
    UnicodeDecodeError pass through. A file in `SOURCE_OVERLAY` reads as its text there."""
    overlay = SOURCE_OVERLAY.get()
    if overlay:
        text = overlay.get(os.path.abspath(path))
        if text is not None:
            return text
    limit = MAX_SOURCE_BYTES if limit is None else limit
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise SourceTooLarge(
            f"the file is {_size(max(size, len(data)))}; files over {_size(limit)} are not read "
            "(is it the right file?)"
        )
    return data.decode("utf-8")


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count:,} bytes"


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's Python loader, stopping at the first alias past `MAX_ALIAS_EXPANSION` copied
    nodes, an alias inside the collection it names, or nesting past `MAX_DEPTH`; the error is
    placed at that alias or collection. Sizes are counted per node as composed, so a bomb is
    refused after reading a few hundred bytes of it, before anything is expanded."""

    def compose_document(self) -> yaml.Node | None:
        self._sizes: dict[int, int] = {}
        self._copied = 0
        self._depth = 0
        return super().compose_document()

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None:
                size = self._sizes.get(id(target))
                if size is None:
                    raise InputTooLarge(
                        None,
                        None,
                        f"'*{event.anchor}' is inside the '&{event.anchor}' it "
                        "names: the value would contain itself without end",
                        event.start_mark,
                    )
                self._copied += size
                if self._copied > MAX_ALIAS_EXPANSION:
                    raise InputTooLarge(
                        None,
                        None,
                        f"too many alias expansions (over {MAX_ALIAS_EXPANSION:,}); "
                        "is this an alias bomb?",
                        event.start_mark,
                    )
            return super().compose_node(parent, index)
        if self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _too_deep(self.peek_event().start_mark)
        node = super().compose_node(parent, index)
        if isinstance(node, yaml.SequenceNode):
            self._depth -= 1
            self._sizes[id(node)] = 1 + sum(self._sizes.get(id(c), 1) for c in node.value)
        elif isinstance(node, yaml.MappingNode):
            self._depth -= 1
            self._sizes[id(node)] = 1 + sum(
                self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1) for k, v in node.value
            )
        else:
            self._sizes[id(node)] = 1
        return node


def _out_of_bounds(root: yaml.Node) -> str | InputTooLarge | None:
    """Whether a node graph libyaml composed goes past the bounds `_BoundedLoader` enforces, by
    one walk over its distinct nodes (never the expanded tree): None when within them, the
    located error for nesting too deep, "aliases" for too many copies or a loop."""
    sizes: dict[int, int] = {}
    unique = 0
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    open_nodes: set[int] = set()
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if key in open_nodes:
            return "aliases"  # a loop
        if key in sizes:
            continue
        if depth > MAX_DEPTH and not isinstance(node, yaml.ScalarNode):
            return _too_deep(node.start_mark)
        unique += 1
        children = _children(node)
        if not children:
            sizes[key] = 1
            continue
        open_nodes.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in children)
    return "aliases" if sizes[id(root)] - unique > MAX_ALIAS_EXPANSION else None


def _too_deep(mark: Any) -> InputTooLarge:
    return InputTooLarge(None, None, f"lists and mappings nested more than {MAX_DEPTH} deep", mark)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


_PREFIX = re.compile(r"^[ ?:-]*", re.M)


def _may_exceed_bounds(text: str) -> bool:
    """False when `text` certainly stays within the bounds (no alias, and a depth bound from
    its brackets and its lines' leading indentation and indicators under `MAX_DEPTH`)."""
    if "*" in text:
        return True
    brackets = text.count("[") + text.count("{")
    if brackets > MAX_DEPTH:
        return True
    return brackets + max(map(len, _PREFIX.findall(text)), default=0) + 2 > MAX_DEPTH


def compose(text: str) -> yaml.Node | None:
    """The node graph of `text`, within the bounds above (else `InputTooLarge`, located).

    libyaml (in every PyYAML wheel) composes it ten times faster than PyYAML's Python parser.
    On any error the Python parser reads the text again, so errors and their wording are
    PyYAML's own. Text with a tab, or a byte-order mark past its start, goes to the Python
    parser only: libyaml accepts both in places where PyYAML reports them. What is left of the
    difference (`tests/spec/test_yaml_parsers.py`): libyaml also accepts `? ` inside a plain
    value, and places an empty value of a flow mapping (`{a: }`) at the next token.

    Aliases share nodes, so composing an alias bomb takes little memory on either path; the
    bounds are checked before anything expands it. libyaml's graph is checked with one walk
    over its distinct nodes (only when the text has an alias or may nest deeply); one out of
    bounds goes to the Python loader, which stops at the offending alias or bracket.
    """
    if _FAST_LOADER is not None and "\t" not in text and "\ufeff" not in text[1:]:
        try:
            node = yaml.compose(text, Loader=_FAST_LOADER)
        except yaml.MarkedYAMLError as exc:
            if "maximum nesting depth" in str(exc.problem):  # libyaml's own cap, at 1,000
                raise _too_deep(exc.problem_mark) from None
        except (yaml.YAMLError, UnicodeError):  # a lone surrogate cannot go to libyaml as UTF-8
            pass
        else:
            if node is None or not _may_exceed_bounds(text):
                return node
            found = _out_of_bounds(node)
            if found is None:
                return node
            if isinstance(found, InputTooLarge):
                raise found
    return yaml.compose(text, Loader=_BoundedLoader)


_INDENTATION = ("'<block mapping start>'", "'<block sequence start>'", "'?'")


def syntax_problem(exc: yaml.MarkedYAMLError, text: str, file: str) -> Problem:
    """One YAML syntax error as a located problem, in words a YAML author knows, placed where
    the mistake is (an unclosed quote at its opening quote, not at the end of the file)."""
    problem, context = exc.problem or "", exc.context or ""
    mark = exc.problem_mark or exc.context_mark
    opened = exc.context_mark
    line_text = text.splitlines()[mark.line] if mark and mark.line < len(text.splitlines()) else ""

    def at(m: yaml.Mark | None) -> tuple[int, int]:
        return (m.line + 1, m.column + 1) if m else (0, 0)

    where = at(mark)
    message: str
    if "{{" in line_text and ("'<scalar>'" in problem or "mapping values" in problem):
        brace = line_text.index("{{")
        where = (where[0], brace + 1)
        message = _unquoted_template_message(line_text[brace:].rstrip())
    elif "quoted scalar" in context and "end of stream" in problem and opened:
        quote = text.splitlines()[opened.line][opened.column : opened.column + 1] or '"'
        where, message = at(opened), f"this quoted text has no closing {quote}"
    elif "cannot start any token" in problem and "'\\t'" in problem:
        message = "a tab character; YAML indents with spaces only"
    elif "cannot start any token" in problem:
        char = problem.split("'")[1] if "'" in problem else "this character"
        message = f"a value cannot start with '{char}'; put the value in quotes"
    elif problem == "but found another document":
        message = "a second YAML document ('---'); an agent file holds exactly one"
    elif problem == "mapping values are not allowed here":
        message = (
            "unexpected ':'; is this line indented more than it should be? "
            "(a value that contains ': ' must be quoted)"
        )
    elif problem == "could not find expected ':'" and opened:
        where, message = at(opened), "expected 'key: value', found a line without ':'"
    elif problem.startswith("expected <block end>") and problem.endswith(_INDENTATION):
        message = "bad indentation: this line does not line up with the lines above it"
    elif problem == "expected <block end>, but found '-'":
        message = "a list item ('- ') where a key was expected; check the indentation"
    elif problem == "expected <block end>, but found '<scalar>'":
        message = "unexpected text after a value; to write a longer value, quote all of it"
    elif "flow sequence" in context or "flow mapping" in context:
        close = "]" if "sequence" in context else "}"
        start = "[" if close == "]" else "{"
        if "<stream end>" in problem and opened:
            where, message = at(opened), f"this '{start}' is never closed with '{close}'"
        else:
            found = problem.split("but got ", 1)[-1]
            message = (
                f"the '{start}' opened at line {at(opened)[0]} is not closed: expected ',' or "
                f"'{close}', found {found}"
            )
    elif problem.startswith("found undefined alias"):
        name = problem.split("'")[1] if "'" in problem else "?"
        message = f"'*{name}' refers to an anchor '&{name}' that is not defined before it"
    else:
        message = problem or "invalid YAML"
        if context:
            message = f"{message} ({context})" if "while" in context else f"{context}, {message}"
    return Problem(file, where[0], where[1], "", f"YAML syntax error: {message}")


# --------------------------------------------------------------------------- merging


def merge(
    base: Any, base_pos: Pos, over: Any, over_pos: Pos, *, concat: frozenset[str] = frozenset()
) -> tuple[Any, Pos]:
    """Merge `over` onto `base`: mappings key by key (a mapping whose `kind` differs replaces the
    whole), lists under a key in `concat` joined, anything else replaced by `over`."""
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return over, over_pos
    if "kind" in base and "kind" in over and base["kind"] != over["kind"]:
        return over, over_pos
    result = dict(base)
    pos = Pos(over_pos.loc, dict(base_pos.key_locs), dict(base_pos.children))
    for key, value in over.items():
        child_pos = over_pos.children[key]
        if key in result:
            old = result[key]
            if key in concat and isinstance(old, list) and isinstance(value, list):
                joined_pos = Pos(child_pos.loc)
                for index, item_pos in base_pos.children[key].children.items():
                    joined_pos.children[index] = item_pos
                offset = len(old)
                for index, item_pos in child_pos.children.items():
                    joined_pos.children[int(index) + offset] = item_pos
                result[key] = [*old, *value]
                pos.children[key] = joined_pos
                pos.key_locs[key] = over_pos.key_locs[key]
                continue
            value, child_pos = merge(old, base_pos.children[key], value, child_pos)
        result[key] = value
        pos.children[key] = child_pos
        pos.key_locs[key] = over_pos.key_locs[key]
    return result, pos
