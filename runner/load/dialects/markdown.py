"""Markdown agents: YAML front matter between `---` lines, then the prompt.

The front matter is read with positions (`read_yaml`) and its lines shifted to the file's, so a
problem in it points at the line in the `.md` file. `${...}` in it is text, not a variable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from runner.errors import Problem
from runner.load.source import Loc, Pos, read_yaml


@dataclass
class FrontMatter:
    value: dict[str, Any]
    pos: Pos
    body: str
    """The text after the closing `---`, without the blank lines that start and end it."""
    body_line: int
    """The line of the file where `body` starts."""
    problems: list[Problem]
    found: bool = True
    """Whether the file starts with front matter at all."""


def split(text: str, file: str) -> FrontMatter:
    """The front matter and body of a markdown agent (an empty front matter when it has none).
    A byte order mark and CRLF line ends (Windows editors write them) are not part of the text."""
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    end = None
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        body, body_line = _trimmed(lines, 0)
        return FrontMatter({}, Pos(Loc(file, 1, 1)), body, body_line, [], found=False)
    head = "\n".join(lines[1:end]).replace("${", "$${")  # text, not a variable
    doc = read_yaml(head, file, env={})
    pos = _shift(doc.pos, 1)
    problems = [replace(p, line=p.line + 1) if p.line else p for p in doc.problems]
    body, body_line = _trimmed(lines, end + 1)
    value = doc.value if isinstance(doc.value, dict) else {}
    if doc.value is not None and not isinstance(doc.value, dict):
        problems.append(Problem(file, 2, 1, "", "the front matter must be a mapping (key: value)"))
    return FrontMatter(
        value, pos if doc.value is not None else Pos(Loc(file, 1, 1)), body, body_line, problems
    )


def _trimmed(lines: list[str], start: int) -> tuple[str, int]:
    first = start
    while first < len(lines) and not lines[first].strip():
        first += 1
    return "\n".join(lines[first:]).rstrip("\n"), first + 1


def _shift(pos: Pos, lines: int) -> Pos:
    loc = pos.loc
    return Pos(
        Loc(loc.file, loc.line + lines, loc.col),
        {k: Loc(v.file, v.line + lines, v.col) for k, v in pos.key_locs.items()},
        {k: _shift(child, lines) for k, child in pos.children.items()},
        pos.block,
        pos.text_col,
    )


def write(fields: list[tuple[str, str]], body: str) -> str:
    """A markdown agent: `fields` as front matter lines (already YAML), a blank line, the body."""
    head = "\n".join(f"{key}: {value}" for key, value in fields)
    return f"---\n{head}\n---\n\n{body.rstrip()}\n"


def scalar(value: str) -> str:
    """A YAML scalar for one front matter line: plain when it reads back the same, else quoted."""
    import yaml

    dumped = yaml.safe_dump(value, default_flow_style=True, width=10_000, allow_unicode=True)
    return dumped.removesuffix("\n").removesuffix("\n...")
