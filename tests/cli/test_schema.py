"""`agentctl schema`: print, write (-o) and check (--check) the agent JSON Schema."""

from __future__ import annotations

from pathlib import Path

from runner.spec import json_schema_text
from tests.conftest import ROOT, run_cli


def test_schema_prints_the_generated_schema() -> None:
    result = run_cli("schema")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == json_schema_text()
    assert result.stdout == (ROOT / "schemas" / "agent.schema.json").read_text(encoding="utf-8")


def test_schema_writes_a_file_creating_its_folder(tmp_path: Path) -> None:
    result = run_cli("schema", "-o", "out/agent.schema.json", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "wrote out/agent.schema.json\n",
        "",
    )
    assert (tmp_path / "out" / "agent.schema.json").read_text(encoding="utf-8") == (
        json_schema_text()
    )


def test_check_passes_on_the_committed_schema() -> None:
    result = run_cli("schema", "--check", process=True)  # the program itself
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "ok: schemas/agent.schema.json is up to date\n",
        "",
    )


def test_check_fails_on_a_stale_or_missing_schema(tmp_path: Path) -> None:
    stale = json_schema_text().replace('"Spec format version."', '"An older description."')
    assert stale != json_schema_text()
    (tmp_path / "stale.json").write_text(stale, encoding="utf-8")
    result = run_cli("schema", "--check", "-o", "stale.json", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "stale.json: out of date; run `agentctl schema -o stale.json`\n"
    result = run_cli("schema", "--check", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "schemas/agent.schema.json: missing; run `agentctl schema -o schemas/agent.schema.json`\n"
    )


def test_a_path_it_cannot_write_is_a_clear_error_not_a_bug(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("a file, not a folder")
    result = run_cli("schema", "-o", "notes/agent.schema.json", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "notes/agent.schema.json: cannot write the schema there (a folder on its path is a file)\n",
    )


def test_the_cassette_schema_is_generated_committed_and_fits_the_example_cassettes() -> None:
    import json

    import jsonschema
    import yaml

    result = run_cli("schema", "--cassette", "--check")
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "ok: schemas/cassette.schema.json is up to date\n",
        "",
    )
    committed = (ROOT / "schemas" / "cassette.schema.json").read_text(encoding="utf-8")
    assert committed == json_schema_text("cassette")
    schema = json.loads(committed)
    cassettes = sorted((ROOT / "agents").glob("*.cassette.yaml"))
    assert cassettes
    for path in cassettes:
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# yaml-language-server: $schema=../schemas/cassette.schema.json")
        jsonschema.validate(yaml.safe_load(text), schema)
    jsonschema.validate([{"content": "hi", "tool_calls": [{"name": "ls"}]}], schema)
    try:
        jsonschema.validate({"agents": {"a": [{"contnet": "typo"}]}}, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("a typo in a reply passed the cassette schema")
