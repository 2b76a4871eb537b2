"""A dialect file as an agentctl YAML file: the translated keys, each commented where the
original had no exact equivalent, and the original fields agentctl does not run listed at the
end, so nothing is lost without a word."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import yaml

from runner.load.dialects.common import Translation, path_from

ORDER = (
    "name",
    "description",
    "model",
    "tools",
    "filesystem",
    "todos",
    "general_purpose_agent",
    "ask_user",
    "backend",
    "limits",
    "subagents",
    "prompt",
)

_JINJA = re.compile(r"\{\{|\{%|\{#")
LABELS = {
    "claude": "Claude Code",
    "copilot": "GitHub Copilot",
    "codex": "Codex CLI",
    "adk": "Google ADK",
}


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(value: Any) -> str:
    """YAML for `value`: block style, keys in the given order, multi-line text as `|` blocks."""
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _escape(value: Any) -> Any:
    """`${` is a variable in agentctl YAML; the original meant the text."""
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, list):
        return [_escape(v) for v in value]
    if isinstance(value, dict):
        return {k: _escape(v) for k, v in value.items()}
    return value


def write(tr: Translation, *, out_dir: Path, source_dir: Path) -> str:
    assert tr.value is not None
    value = copy.deepcopy(tr.value)
    comments = {k: list(v) for k, v in tr.comments.items()}
    backend = value.get("backend")
    if isinstance(backend, dict) and isinstance(backend.get("root_dir"), str):
        value["backend"] = {
            **backend,
            "root_dir": _rebase(backend["root_dir"], source_dir, out_dir),
        }
    for entry in value.get("tools") or []:
        server = entry.get("mcp") if isinstance(entry, dict) else None
        if isinstance(server, dict) and isinstance(server.get("cwd"), str):
            server["cwd"] = _rebase(server["cwd"], source_dir, out_dir)
    for entry in value.get("subagents") or []:
        if isinstance(entry, dict) and isinstance(entry.get("ref"), str):
            entry["ref"] = _rebase(entry["ref"], source_dir, out_dir)
    prompt = value.get("prompt")
    if isinstance(prompt, str) and _JINJA.search(prompt):
        value["prompt"] = "{% raw %}" + prompt + "{% endraw %}"
        comments.setdefault("prompt", []).append(
            "the original's {{ / {% are text: kept as text by {% raw %}"
        )
    lines = [
        f"# Converted from {LABELS.get(tr.dialect, tr.dialect)} agent {tr.file} by agentctl "
        "convert.",
        "# A comment marks each key that is not an exact copy of the original.",
    ]
    keys = [k for k in ORDER if k in value] + [k for k in value if k not in ORDER]
    for key in keys:
        for text in comments.pop(key, []):
            lines.append(f"# {key}: {text}")
        lines.append(dump({key: _escape(value[key])}).rstrip("\n"))
    for key, texts in comments.items():
        lines += [f"# {key}: {text}" for text in texts]
    if tr.dropped:
        lines.append("# Not converted (agentctl does not run these fields of the original):")
        lines += [f"#   {line}" for line in tr.dropped]
    return "\n".join(lines) + "\n"


def _rebase(relative: str, source_dir: Path, out_dir: Path) -> str:
    if os.path.isabs(relative):
        return relative
    return path_from(Path(os.path.normpath(source_dir.resolve() / relative)), out_dir)
