"""The example agents in agents/ load, validate, and match the committed JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

import runner
from runner.check.validate import find_specs
from tests.conftest import AGENTS, ROOT

EXAMPLES = sorted(path for path, _ in find_specs([AGENTS]))


def test_there_are_examples_of_every_backend_kind() -> None:
    kinds = set()
    for path in EXAMPLES:
        spec = runner.load_spec(path, require_inputs=False)
        backend = spec.backend
        if backend is not None:
            kinds.add(backend.kind)
    assert {"state", "filesystem", "store", "local_shell", "composite"} <= kinds


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_loads(path: Path) -> None:
    spec = runner.load_spec(path, require_inputs=False)  # validate needs no inputs
    assert spec.name == path.stem


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_starts_with_schema_line(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../schemas/agent.schema.json"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_matches_committed_json_schema(path: Path) -> None:
    schema = json.loads((ROOT / "schemas" / "agent.schema.json").read_text(encoding="utf-8"))
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(document)
