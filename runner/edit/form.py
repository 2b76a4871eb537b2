"""The common settings of an agent file as a form, and the form written back into the file.

The file is read and written with ruamel.yaml's round trip, which keeps comments, key order,
quotes and flow style: a change made in the form changes the lines of the keys it touched and
no others. A key the form adds goes where a person would put it (after the nearest key that
comes before it in `ORDER`), a key emptied in the form is removed. Settings the form does not
show (and tool entries, approvals and backends in a shape it does not edit) are left as they
are. A file ruamel.yaml could not write back unchanged (an unusual layout) is refused, so the
form never re-lays out lines the author did not touch.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import LiteralScalarString
from ruamel.yaml.util import load_yaml_guess_indent

__all__ = [
    "FIELDS",
    "FormError",
    "available_agents",
    "available_tools",
    "read_form",
    "write_form",
]

FIELDS = (
    "name",
    "description",
    "model",
    "prompt",
    "tools",
    "interrupt_on",
    "backend",
    "inputs",
    "subagents",
)
"""What the form edits. Of `tools` and `subagents`, the form edits the entries that name a file
(`import: ./file.py:function`, `ref: ./agent.yaml`); the others are listed and kept."""

ORDER = (
    "version",
    "name",
    "description",
    "model",
    "prompt",
    "vars",
    "inputs",
    "tools",
    "backend",
    "memory",
    "skills",
    "subagents",
    "interrupt_on",
)
"""Where a key the file lacks is added: after the last of those before it that the file has."""

BACKENDS = ("state", "store", "filesystem")
INPUT_TYPES = ("string", "integer", "number", "boolean", "enum", "file")
INPUT_KEYS = ("type", "description", "required", "default")
_FUNCTION = re.compile(r"^def ([A-Za-z]\w*)\s*\(", re.M)


class FormError(ValueError):
    """The file (or the form's values) cannot go through the form; the YAML view still works."""


def _yaml(text: str) -> tuple[YAML, Any]:
    try:
        _, indent, sequence_dash = load_yaml_guess_indent(text)
    except YAMLError as exc:
        raise FormError(f"the YAML does not parse: {_first_line(exc)}") from None
    indent, dash = indent or 2, sequence_dash or 0
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long line the author wrote on one
    yaml.indent(mapping=indent - dash if dash else indent, sequence=indent, offset=dash)
    try:
        data = yaml.load(text)
    except YAMLError as exc:
        raise FormError(f"the YAML does not parse: {_first_line(exc)}") from None
    if data is None:
        data = CommentedMap()
    if not isinstance(data, CommentedMap):
        raise FormError("the file is not a mapping of keys")
    if "workflow" in data:
        raise FormError("a workflow file: edit it in the YAML view")
    if text.strip() and _dump(yaml, data) != text:
        raise FormError(
            "the form cannot keep this file's layout exactly (an unusual indentation or "
            "style): edit it in the YAML view"
        )
    return yaml, data


def _dump(yaml: YAML, data: Any) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def read_form(text: str) -> dict[str, Any]:
    """The form's values for the file's text (FormError when the form cannot edit it)."""
    _, data = _yaml(text)
    model = data.get("model")
    backend = data.get("backend")
    backend_kind = str(backend.get("kind", "")) if isinstance(backend, dict) else _text(backend)
    tools = data.get("tools") or []
    approvals = data.get("interrupt_on") or {}
    inputs = data.get("inputs") or {}
    subagents = data.get("subagents") or []
    return {
        "name": _text(data.get("name")),
        "description": _text(data.get("description")),
        "model": _text(model.get("id") if isinstance(model, dict) else model),
        "prompt": data.get("prompt") if isinstance(data.get("prompt"), str) else None,
        "tools": [str(t["import"]) for t in tools if isinstance(t, dict) and "import" in t],
        "other_tools": [
            _describe_tool(t) for t in tools if not (isinstance(t, dict) and "import" in t)
        ],
        "interrupt_on": [str(k) for k, v in approvals.items() if v]
        if isinstance(approvals, dict)
        else [],
        "backend": backend_kind,
        "backend_editable": backend is None or backend_kind in BACKENDS,
        "inputs": [
            {
                "name": str(name),
                **{key: (spec or {}).get(key) for key in INPUT_KEYS},
            }
            for name, spec in (inputs.items() if isinstance(inputs, dict) else [])
        ],
        "subagents": [str(s["ref"]) for s in subagents if isinstance(s, dict) and "ref" in s],
        "other_subagents": [
            _describe_subagent(s) for s in subagents if not (isinstance(s, dict) and "ref" in s)
        ],
    }


def _describe_tool(entry: Any) -> str:
    if isinstance(entry, dict) and entry:
        kind = next(iter(entry))
        body = entry[kind]
        name = body.get("name") if isinstance(body, dict) else body
        return f"{kind}: {name}" if name else str(kind)
    return str(entry)


def _describe_subagent(entry: Any) -> str:
    if isinstance(entry, dict):
        return str(entry.get("name") or entry.get("ref") or entry.get("import") or "?")
    return str(entry)


def write_form(text: str, values: dict[str, Any]) -> str:
    """`text` with the settings of `values` (a subset of `FIELDS`) changed, and nothing else."""
    yaml, data = _yaml(text)
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise FormError(f"not a setting of the form: {', '.join(unknown)}")
    for key in ("name", "description"):
        if key in values:
            _set(data, key, _text(values[key]).strip() or None)
    if "model" in values:
        model = _text(values["model"]).strip() or None
        if isinstance(data.get("model"), dict) and model:
            data["model"]["id"] = model
        else:
            _set(data, "model", model)
    if "prompt" in values:
        prompt = _text(values["prompt"])
        if prompt and not prompt.endswith("\n") and "\n" in prompt:
            prompt += "\n"
        _set(data, "prompt", LiteralScalarString(prompt) if "\n" in prompt else prompt or None)
    if "tools" in values:
        _write_entries(data, "tools", "import", [str(t) for t in values["tools"]])
    if "subagents" in values:
        _write_entries(data, "subagents", "ref", [str(t) for t in values["subagents"]])
    if "interrupt_on" in values:
        _write_approvals(data, [str(t) for t in values["interrupt_on"]])
    if "backend" in values:
        _write_backend(data, _text(values["backend"]))
    if "inputs" in values:
        _write_inputs(data, list(values["inputs"]))
    return _without(yaml, _dump(yaml, data))


def _set(data: CommentedMap, key: str, value: Any) -> None:
    """Set `key` in place, add it at its place in ORDER, or mark it to be removed (value None:
    `_without` removes its lines once the rest is written)."""
    if value is None or (isinstance(value, (list, dict)) and not value):
        if key in data:
            data[key] = _REMOVED
        return
    if key in data:
        data[key] = value
        return
    position = len(data)
    if key in ORDER:
        keys = list(data)
        # after the nearest key before it in ORDER that the file has (at the top without one)
        before = [k for k in reversed(ORDER[: ORDER.index(key)]) if k in data]
        position = keys.index(before[0]) + 1 if before else 0
    data.insert(position, key, value)


_REMOVED = "\x00removed"
"""The value of a top-level key the form removes, until `_without` takes its lines out."""


def _without(yaml: YAML, text: str) -> str:
    """`text` without the top-level keys valued `_REMOVED`: their lines (value and end-of-line
    comment) go, and the comments and blank lines after them stay, above the next key (they
    belong to it; ruamel.yaml would drop them with the key)."""
    data = yaml.load(text)
    lines = text.splitlines(keepends=True)
    starts = sorted(data.lc.key(k)[0] for k in data)
    gone: set[int] = set()
    for key in [k for k, v in data.items() if v == _REMOVED]:
        start = data.lc.key(key)[0]
        later = [line for line in starts if line > start]
        end = later[0] if later else len(lines)
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
            end -= 1
        gone.update(range(start, end))
    return "".join(line for number, line in enumerate(lines) if number not in gone)


def _write_entries(data: CommentedMap, key: str, kind: str, chosen: list[str]) -> None:
    """The `kind:` entries of the list `key` (`import:` tools, `ref:` subagents) made `chosen`:
    those not chosen removed, new ones appended; the other entries kept as they are."""
    current = data.get(key)
    entries = current if isinstance(current, CommentedSeq) else CommentedSeq()
    have = {str(e[kind]) for e in entries if isinstance(e, dict) and kind in e}
    # Removed from the end, so the comments of the entries kept stay on their lines.
    for index in reversed(range(len(entries))):
        entry = entries[index]
        if isinstance(entry, dict) and kind in entry and str(entry[kind]) not in chosen:
            del entries[index]
    for ref in chosen:
        if ref not in have:
            entries.append(CommentedMap([(kind, ref)]))
    _set(data, key, entries if entries else None)


def _write_approvals(data: CommentedMap, chosen: list[str]) -> None:
    current = data.get("interrupt_on")
    approvals = current if isinstance(current, CommentedMap) else CommentedMap()
    for name in list(approvals):
        if str(name) not in chosen:
            del approvals[name]
    for name in chosen:
        if not approvals.get(name):  # a mapping of settings is kept as it is
            approvals[name] = True
    _set(data, "interrupt_on", approvals if approvals else None)


def _write_backend(data: CommentedMap, kind: str) -> None:
    current = data.get("backend")
    current_kind = current.get("kind") if isinstance(current, dict) else current
    if kind == (current_kind or ""):
        return
    if kind and kind not in BACKENDS:
        raise FormError(f"backend: expected one of {', '.join(BACKENDS)}, found {kind!r}")
    if current is not None and current_kind not in BACKENDS:
        raise FormError(f"backend: a {current_kind} backend is edited in the YAML view")
    if kind == "filesystem":
        _set(data, "backend", CommentedMap([("kind", "filesystem"), ("root_dir", "./workspace")]))
    else:
        _set(data, "backend", kind or None)


def _write_inputs(data: CommentedMap, rows: list[Any]) -> None:
    current = data.get("inputs")
    inputs = current if isinstance(current, CommentedMap) else CommentedMap()
    names = []
    for row in rows:
        if not isinstance(row, dict) or not _text(row.get("name")).strip():
            raise FormError("inputs: each input needs a name")
        name = _text(row["name"]).strip()
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise FormError(f"inputs: {name!r} is not a name (letters, digits, '_')")
        if row.get("type") and row["type"] not in INPUT_TYPES:
            raise FormError(f"inputs.{name}.type: expected one of {', '.join(INPUT_TYPES)}")
        names.append(name)
        spec = inputs.get(name)
        if not isinstance(spec, CommentedMap):
            spec = CommentedMap()
            inputs[name] = spec
        for key in INPUT_KEYS:
            value = row.get(key)
            if value in (None, "") or (key == "required" and value is False):
                spec.pop(key, None)
            elif spec.get(key) != value:
                spec[key] = value
    for name in list(inputs):
        if name not in names:
            del inputs[name]
    _set(data, "inputs", inputs if inputs else None)


def available_agents(agent: Path) -> list[str]:
    """`./other.yaml` for each agent file beside `agent` (as serve finds them): what the form
    offers as subagents."""
    from runner.check.validate import find_specs

    return [
        f"./{path.name}"
        for path, problem in find_specs([agent.parent])
        if problem is None and path.resolve() != agent.resolve()
    ]


def available_tools(folder: Path) -> list[str]:
    """`./file.py:function` for each public top-level function of the Python files beside the
    agent: what the form offers to add to `tools:` (read, never imported)."""
    found = []
    for source in sorted(folder.glob("*.py"))[:50]:
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += [f"./{source.name}:{name}" for name in _FUNCTION.findall(text)]
    return found
