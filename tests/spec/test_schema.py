"""The committed JSON Schema is current, and rejects what the loader rejects at several depths
(editors show the same mistakes as `agentctl validate`)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
import yaml

from runner.spec import json_schema_text
from tests.conftest import AGENTS, ROOT

SCHEMA_PATH = ROOT / "schemas" / "agent.schema.json"


def committed_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def test_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == json_schema_text(), (
        "schemas/agent.schema.json is stale: run `agentctl schema -o schemas/agent.schema.json`"
    )


def test_committed_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(committed_schema())


def _researcher() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(
        (AGENTS / "researcher.yaml").read_text(encoding="utf-8")
    )
    return document


def _set(document: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target: Any = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return changed


def _all_errors(
    errors: Iterator[jsonschema.ValidationError],
) -> Iterator[jsonschema.ValidationError]:
    """Every error, including those of each alternative of an anyOf / oneOf."""
    for error in errors:
        yield error
        yield from _all_errors(iter(error.context or []))


# (where to write, what, the path of the error the schema must report, its validator)
MUTATIONS = {
    "unknown top-level key": (("modle",), "openai:gpt-4.1", (), "additionalProperties"),
    "typo in model": (("model", "temprature"), 0.1, ("model",), "additionalProperties"),
    "typo in a backend route": (
        ("backend", "routes", "/memories/", "namespce"),
        ["x"],
        ("backend", "routes", "/memories/"),
        "additionalProperties",
    ),
    "typo in a subagent": (
        ("subagents", 0, "descripton"),
        "x",
        ("subagents", 0),
        "additionalProperties",
    ),
    "typo in interrupt_on": (
        ("interrupt_on", "write_file", "whne"),
        {},
        ("interrupt_on", "write_file"),
        "additionalProperties",
    ),
    "typo in a summarization threshold": (
        ("summarization", "trigger"),
        {"fracton": 0.85},
        ("summarization", "trigger"),
        "additionalProperties",
    ),
    "typo in an mcp server": (
        ("tools", 0),
        {"mcp": {"name": "docs", "comand": "python"}},
        ("tools", 0, "mcp"),
        "additionalProperties",
    ),
    "bad decision": (
        ("interrupt_on", "write_file", "allowed_decisions"),
        ["aprove"],
        ("interrupt_on", "write_file", "allowed_decisions", 0),
        "enum",
    ),
    "bad backend kind": (
        ("backend", "default"),
        {"kind": "filesytem", "root_dir": "."},
        ("backend", "default", "kind"),
        "const",
    ),
    "bad filesystem tool": (("filesystem", "tools"), ["read"], ("filesystem", "tools", 0), "enum"),
    "bad mcp transport": (
        ("tools", 0),
        {"mcp": {"name": "docs", "url": "https://x", "transport": "http"}},
        ("tools", 0, "mcp", "transport"),
        "enum",
    ),
    "bad version": (("version",), 2, ("version",), "const"),
}


def test_the_unmutated_example_is_valid() -> None:
    jsonschema.Draft202012Validator(committed_schema()).validate(_researcher())


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_schema_rejects_typos_and_bad_enum_values(name: str) -> None:
    where, value, error_path, kind = MUTATIONS[name]
    document = _set(_researcher(), where, value)
    validator = jsonschema.Draft202012Validator(committed_schema())
    errors = [
        (tuple(e.absolute_path), e.validator) for e in _all_errors(validator.iter_errors(document))
    ]
    assert errors, f"the schema accepts: {name}"
    assert (error_path, kind) in errors


WORKFLOW_DOC = {
    "name": "wf",
    "state": {"draft": {"type": "string"}},
    "agents": {"writer": {"model": "openai:gpt-4.1", "prompt": "You write."}},
    "workflow": {
        "steps": [
            {"id": "draft", "agent": "writer", "input": "x", "output": "draft"},
            {"id": "again", "loop": {"to": "draft", "while": "true", "max": 2}},
        ]
    },
}


def test_the_schema_takes_a_workflow_file_too() -> None:
    validator = jsonschema.Draft202012Validator(committed_schema())
    validator.validate(WORKFLOW_DOC)
    typo = copy.deepcopy(WORKFLOW_DOC)
    typo["workflow"]["steps"][0]["inptu"] = "x"
    errors = [
        (tuple(e.absolute_path), e.validator) for e in _all_errors(validator.iter_errors(typo))
    ]
    assert (("workflow", "steps", 0), "additionalProperties") in errors
    # an agent's key in a workflow, or `workflow:` in an agent, is no file of either kind
    assert not validator.is_valid({**WORKFLOW_DOC, "subagents": []})
    assert not validator.is_valid({**_researcher(), "workflow": WORKFLOW_DOC["workflow"]})
