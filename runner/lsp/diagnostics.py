"""What `agentctl validate` (and, for test files, `agentctl test`) reports about a file, as LSP
diagnostics.

The checks are theirs, called on the editor's buffers; this module only places each problem: in
the file it names, from the problem's line and column to the end of the word written there, and,
for a problem in another file (an include, a ref'd agent), once more on the `include:` or `ref:`
line that leads to it, with the problem's full `file:line:col: ...` text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types as lsp

from runner.lsp._deps import (
    AgentSpec,
    LoadCache,
    Problem,
    SpecError,
    WorkflowSpec,
    check_file,
    is_agent_file_name,
    load_test_file,
    read_yaml,
)
from runner.lsp.documents import Overlay, overlaid, read_text


@dataclass
class Checked:
    """One check of one file: its problems by the absolute path of the file they are in, the
    files it read (for re-checking when one of them changes), and the agent it loaded."""

    problems: dict[str, list[Problem]] = field(default_factory=dict)
    reads: set[str] = field(default_factory=set)
    spec: AgentSpec | None = None
    workflow: WorkflowSpec | None = None


def check(path: Path, kind: str, overlay: Overlay, *, includers: Iterable[Path] = ()) -> Checked:
    """The problems `validate` (or `test`, for a test file) finds in `path`, with the buffers of
    `overlay` read instead of the disk. A fragment (`_base.yaml`) is checked through the agent
    files that include it (`includers`, and those in its folder naming it), as `validate`
    checks a folder; alone, as `validate FILE` does, when none does."""
    found = Checked()
    with overlaid(overlay):
        if kind == "test":
            try:
                load_test_file(path)
                problems: list[Problem] = []
            except SpecError as exc:
                problems = exc.problems
            _add(found, path, problems)
        elif kind == "fragment" and (agents := _includers(path, includers)):
            for agent in agents:
                checked = _check_file(agent)
                own = [p for p in checked[0] if _abs(p.file, agent) == str(path)]
                _add(found, path, own)
        else:
            problems, found.spec, found.workflow = _check_file(path)
            _add(found, path, problems)
    found.reads = set(overlay.reads) | {str(path)}
    return found


def _check_file(path: Path) -> tuple[list[Problem], AgentSpec | None, WorkflowSpec | None]:
    """`check_file` as `agentctl validate` calls it, and the agent or workflow it loaded on the
    way (from a cache of this one check: buffers change without the files' times changing)."""
    cache: LoadCache = {}
    problems = check_file(path, allow_unused_vars=True, cache=cache).problems
    own = [v for k, v in cache.items() if k[0] == str(path.resolve())]
    spec = next((v for v in own if isinstance(v, AgentSpec)), None)
    workflow = next((v for v in own if isinstance(v, WorkflowSpec)), None)
    return problems, spec, workflow


def _includers(fragment: Path, extra: Iterable[Path]) -> list[Path]:
    found = {p for p in extra if p != fragment}
    folder = fragment.parent
    for candidate in sorted(folder.iterdir()) if folder.is_dir() else []:
        if candidate.is_file() and is_agent_file_name(candidate):
            text = read_text(candidate)
            if text is not None and fragment.name in text:
                found.add(candidate)
    return sorted(found)


def _abs(file: str, default: Path) -> str:
    return os.path.abspath(file) if file else str(default)


def _add(found: Checked, path: Path, problems: Iterable[Problem]) -> None:
    for problem in problems:
        found.problems.setdefault(_abs(problem.file, path), []).append(problem)


# --------------------------------------------------------------------------- placing


WORD = re.compile(r"""[^\s,\[\]{}#"']+""")


def word_range(text: str | None, line: int, col: int) -> lsp.Range:
    """From 1-based (`line`, `col`) to the end of the word (or quoted string) there; line 0 is
    the file's first line. A key's range stops before its colon."""
    if line <= 0:
        return lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    start = lsp.Position(line - 1, max(col - 1, 0))
    lines = (text or "").splitlines()
    if line > len(lines):
        return lsp.Range(start, start)
    source = lines[line - 1]
    at = start.character
    if at < len(source) and source[at] in "\"'":
        close = source.find(source[at], at + 1)
        end = close + 1 if close > at else len(source)
    else:
        match = WORD.match(source, at)
        end = at if match is None else match.end()
        while end > at and source[end - 1] == ":":
            end -= 1
        if end == at:
            end = len(source.rstrip())
    return lsp.Range(start, lsp.Position(line - 1, max(end, at)))


def message_of(problem: Problem) -> str:
    """The words `validate` prints after `file:line:col: `."""
    return f"{problem.path}: {problem.message}" if problem.path else problem.message


def to_diagnostic(problem: Problem, text: str | None) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=word_range(text, problem.line, problem.col),
        message=message_of(problem),
        severity=lsp.DiagnosticSeverity.Error,
        source="agentctl",
        data={"line": problem.line, "col": problem.col},
    )


def diagnostics_by_file(
    path: Path, checked: Checked, overlay: Overlay
) -> dict[str, list[lsp.Diagnostic]]:
    """The diagnostics of one check, by absolute path: each problem in its file, and each one in
    another file also on the line of `path` that includes (or refs) it."""
    out: dict[str, list[lsp.Diagnostic]] = {str(path): []}
    with overlaid(Overlay(overlay)):
        for file, problems in checked.problems.items():
            text = read_text(Path(file))
            out.setdefault(file, []).extend(to_diagnostic(p, text) for p in problems)
        others = [p for f, ps in checked.problems.items() if f != str(path) for p in ps]
        if others:
            own_text = read_text(path)
            leads = leading_entries(path)
            for problem in others:
                entry = _leading(leads, os.path.abspath(problem.file))
                if entry is None:
                    continue
                line, col = entry
                out[str(path)].append(
                    lsp.Diagnostic(
                        range=word_range(own_text, line, col),
                        message=str(problem),
                        severity=lsp.DiagnosticSeverity.Error,
                        source="agentctl",
                    )
                )
    return out


def _leading(leads: dict[str, tuple[int, int]], file: str) -> tuple[int, int] | None:
    """The entry naming `file`, or else the folder holding it (a skills folder's SKILL.md)."""
    if file in leads:
        return leads[file]
    folders = [p for p in leads if file.startswith(p.rstrip(os.sep) + os.sep)]
    return leads[max(folders, key=len)] if folders else None


def leading_entries(path: Path, depth: int = 0) -> dict[str, tuple[int, int]]:
    """For each file reached from `path` through `include:` and `ref:` (directly or further
    on), the line and column in `path` of the entry that leads to it; and for each other path
    the file names (a prompt file, a cassette after `replay:`, a skills folder), where it is
    written."""
    text = read_text(path)
    if text is None or depth > 20:
        return {}
    doc = read_yaml(text, str(path), env={})
    found: dict[str, tuple[int, int]] = {}
    if depth == 0:
        for value, at in _strings(doc.value, doc.pos):
            name = value.removeprefix("replay:")
            if ".py:" in name:
                name = name.partition(".py:")[0] + ".py"
            if "\n" not in name and ("/" in name or re.search(r"\.(ya?ml|md|txt|json|py)$", name)):
                found.setdefault(str(resolve(name, path.parent)), at)
    for target, loc in _entries(doc.value, doc.pos, path.parent):
        found.setdefault(str(target), loc)
        for further in leading_entries(target, depth + 1):
            found.setdefault(further, loc)
    return found


def _strings(value: object, pos: object) -> list[tuple[str, tuple[int, int]]]:
    """Every string value of a document, with where it is written."""
    from runner.lsp._deps import Pos

    if not isinstance(pos, Pos):
        return []
    if isinstance(value, str):
        return [(value, (pos.loc.line, pos.loc.col))]
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    return [s for key, child in items for s in _strings(child, pos.children.get(key))]


def _entries(value: object, pos: object, base: Path) -> list[tuple[Path, tuple[int, int]]]:
    """The `include:` files and the `subagents[].ref` files of a document, with where each is
    written."""
    from runner.lsp._deps import Pos

    if not isinstance(value, dict) or not isinstance(pos, Pos):
        return []
    found: list[tuple[Path, tuple[int, int]]] = []
    includes = value.get("include")
    if isinstance(includes, list) and "include" in pos.children:
        for index, name in enumerate(includes):
            at = pos.children["include"].children.get(index)
            if isinstance(name, str) and at is not None:
                found.append((resolve(name, base), (at.loc.line, at.loc.col)))
    subagents = value.get("subagents")
    if isinstance(subagents, list) and "subagents" in pos.children:
        for index, entry in enumerate(subagents):
            at = pos.children["subagents"].children.get(index)
            if isinstance(entry, dict) and isinstance(entry.get("ref"), str) and at is not None:
                ref = at.children.get("ref")
                if ref is not None:
                    found.append((resolve(entry["ref"], base), (ref.loc.line, ref.loc.col)))
    return found


def resolve(name: str, base: Path) -> Path:
    """A path written in a spec, as the loader reads it: `~` expanded, relative to `base`."""
    path = Path(os.path.expanduser(name))
    return Path(os.path.abspath(path if path.is_absolute() else base / path))
