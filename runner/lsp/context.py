"""Where the cursor is in a YAML file that may be half typed: the key path of the value being
written, and whether a key or a value is being written. Read from indentation, line by line, so
it works while the file does not parse (it rarely does while a key is typed)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from runner.lsp._deps import KeyPath

_LINE = re.compile(r"^(?P<indent>\s*)(?P<dashes>(?:-\s+)*)(?P<rest>.*)$")
_KEY = re.compile(
    r"""^(?P<key>[^\s:#'"\[\]{},][^:#]*?|"[^"]*"|'[^']*')\s*:(?:\s+|$)(?P<value>.*)$"""
)


@dataclass(frozen=True)
class Cursor:
    path: KeyPath
    """The key path of the mapping (kind `key`) or of the value (kind `value`) at the cursor."""
    kind: str
    """`key`: a key (or a list item) is being written; `value`: the value after `key:`."""
    prefix: str
    """The part of the word before the cursor."""
    in_list: bool = False
    """A list item (`- x`, or inside `[a, b]`)."""
    template: str | None = None
    """Inside `{{ ... }}`: the text from `{{` to the cursor."""


def _parse(line: str) -> tuple[int, list[int], int, str | None, str]:
    """(indent, columns of the `- ` markers, column of the content, key or None, value)."""
    match = _LINE.match(line)
    assert match is not None
    indent = len(match["indent"])
    dashes: list[int] = []
    col = indent
    for dash in re.finditer(r"-\s+", match["dashes"]):
        dashes.append(indent + dash.start())
        col = indent + dash.end()
    rest = match["rest"]
    key = _KEY.match(rest)
    if key is None:
        return indent, dashes, col, None, rest
    return indent, dashes, col, key["key"].strip("\"'"), key["value"]


def _meaningful(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#") and stripped not in ("---", "...")


def container_path(lines: list[str], lineno: int, col: int, *, in_item: bool = False) -> KeyPath:
    """The key path of the mapping or list holding content that starts at `col` on `lineno`,
    from the keys and list markers above it with less indentation. `in_item`: that content is
    a list item (`- x`), whose key may be at the same column as its marker."""
    path: list[str | int] = []
    limit = col
    for number in range(lineno - 1, -1, -1):
        if limit == 0 and not in_item:
            break
        line = lines[number]
        if not _meaningful(line):
            continue
        _, dashes, content, key, value = _parse(line)
        fits = content <= limit if in_item else content < limit
        if key is not None and fits and not value.strip():
            path.insert(0, key)
            limit, in_item = content, False
        elif content < limit and not dashes:
            continue  # the text of a block scalar, or a key with a value: not a parent
        for dash in reversed(dashes):
            if dash < limit:
                path.insert(0, _item_index(lines, number, dash) if dash == dashes[-1] else 0)
                limit, in_item = dash, True
    return tuple(path)


def cursor_at(text: str, line: int, character: int) -> Cursor:
    """The cursor at 0-based (`line`, `character`) of `text`."""
    lines = text.splitlines() or [""]
    while len(lines) <= line:
        lines.append("")
    before = lines[line][:character]
    template = None
    opened = before.rfind("{{")
    if opened >= 0 and "}}" not in before[opened:]:
        template = before[opened + 2 :]
    _, dashes, col, key, value = _parse(before)
    # the key being written on this line sits at `col`, inside the list of `dashes`
    base = container_path(lines, line, dashes[0] if dashes else col, in_item=bool(dashes))
    if dashes:
        base = (*base, _item_index(lines, line, dashes[0]), *[0 for _ in dashes[1:]])
    word = re.search(r"[^\s,\[\]{}:\"']*$", before)
    prefix = word.group(0) if word else ""
    if key is None:
        return Cursor(base, "key", prefix, in_list=bool(dashes), template=template)
    if value.rfind("{") > value.rfind("}"):  # inside `{a: 1, b: ...`
        inner = re.split(r"[{,]", value)[-1]
        pair = _KEY.match(inner.lstrip())
        if pair is None:
            return Cursor((*base, key), "key", inner.strip(), template=template)
        found = re.search(r"[^\s,\[\]{}\"']*$", pair["value"])
        inner_key = pair["key"].strip("\"'")
        return Cursor((*base, key, inner_key), "value", found.group(0) if found else "")
    flow = value.rfind("[") > value.rfind("]")
    found = re.search(r"[^\s,\[\]{}\"']*$", value)  # (a value's word may hold `:`)
    prefix = found.group(0) if found else ""
    return Cursor((*base, key), "value", prefix, in_list=flow, template=template)


def _item_index(lines: list[str], lineno: int, dash_col: int) -> int:
    """The index of the item whose marker is at `dash_col` on `lineno`: how many items of its
    list come before it."""
    count = 0
    for number in range(lineno - 1, -1, -1):
        line = lines[number]
        if not _meaningful(line):
            continue
        indent, dashes, *_ = _parse(line)
        if dash_col in dashes:
            count += 1
        elif indent <= dash_col:
            break
    return count
