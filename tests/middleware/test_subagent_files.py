"""Subagents and files: what they write reaches the parent's backend, and nothing else leaks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import runner
from tests.middleware.helpers import MODES, call, reply, run, spec_file


def task(call_id: str, subagent: str, description: str) -> dict[str, Any]:
    return call("task", call_id, description=description, subagent_type=subagent)


def write_cassette(directory: Path, agents: dict[str, list[dict[str, Any]]]) -> str:
    path = directory / "team.cassette.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "agents": agents}, sort_keys=False))
    return "replay:team.cassette.yaml"


@pytest.mark.parametrize("mode", MODES)
def test_two_subagents_write_in_parallel_and_the_parent_reads_both(
    tmp_path: Path, mode: str
) -> None:
    model = write_cassette(
        tmp_path,
        {
            "lead": [
                reply(
                    "Splitting the work.",
                    task("t_scout", "scout", "List three embedded databases in /facts.md."),
                    task("t_scribe", "scribe", "Draft a one-line intro in /intro.md."),
                ),
                reply(
                    "Reading what they wrote.",
                    call("read_file", "r_facts", file_path="/facts.md"),
                    call("read_file", "r_intro", file_path="/intro.md"),
                ),
                reply("Both parts are ready: /facts.md and /intro.md."),
            ],
            "scout": [
                reply(
                    "", call("write_file", file_path="/facts.md", content="SQLite\nDuckDB\nLMDB\n")
                ),
                reply("Wrote three databases to /facts.md."),
            ],
            "scribe": [
                reply(
                    "Drafting.",
                    call("write_file", file_path="/intro.md", content="Small, fast, local.\n"),
                ),
                reply("The intro is in /intro.md."),
            ],
        },
    )
    subagents = [
        {"name": "scout", "description": "Finds facts"},
        {"name": "scribe", "description": "Writes prose"},
    ]
    spec = spec_file(tmp_path, name="lead", model=model, subagents=subagents)
    result = run(runner.build_agent(spec), "Write about embedded databases.", mode)
    messages = result["messages"]
    assert [(m.type, m.text) for m in messages] == [
        ("human", "Write about embedded databases."),
        ("ai", "Splitting the work."),
        ("tool", "Wrote three databases to /facts.md."),
        ("tool", "The intro is in /intro.md."),
        ("ai", "Reading what they wrote."),
        ("tool", "     1\tSQLite\n     2\tDuckDB\n     3\tLMDB"),
        ("tool", "     1\tSmall, fast, local."),
        ("ai", "Both parts are ready: /facts.md and /intro.md."),
    ]
    assert [(m.name, m.tool_call_id) for m in messages if m.type == "tool"] == [
        ("task", "t_scout"),
        ("task", "t_scribe"),
        ("read_file", "r_facts"),
        ("read_file", "r_intro"),
    ]
    assert {p: f["content"] for p, f in result["files"].items()} == {
        "/facts.md": "SQLite\nDuckDB\nLMDB\n",
        "/intro.md": "Small, fast, local.\n",
    }


def test_a_ref_subagent_with_its_own_filesystem_backend_writes_in_its_folder(
    tmp_path: Path,
) -> None:
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "archivist.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "archivist",
                "description": "Files documents in the archive folder",
                "backend": {"kind": "filesystem", "root_dir": "./archive"},
                "todos": False,
                "general_purpose_agent": False,
            }
        )
    )
    model = write_cassette(
        tmp_path,
        {
            "lead": [
                reply("", call("write_file", file_path="/mine.md", content="the lead's own file")),
                reply(
                    "", task("t_arch", "archivist", "Archive the note 'ship it' as /2024/note.md.")
                ),
                reply("", call("ls", path="/")),
                reply("Archived."),
            ],
            "archivist": [
                reply("", call("write_file", file_path="/2024/note.md", content="ship it\n")),
                reply("Filed at /2024/note.md in the archive."),
            ],
        },
    )
    spec = spec_file(
        tmp_path, name="lead", model=model, subagents=[{"ref": "./refs/archivist.yaml"}]
    )
    result = run(runner.build_agent(spec), "Archive this note: ship it")
    texts = [(m.name, m.text) for m in result["messages"] if m.type == "tool"]
    assert texts == [
        ("write_file", "Updated file /mine.md"),
        ("task", "Filed at /2024/note.md in the archive."),
        ("ls", "/mine.md (19 bytes)"),
    ]
    # the archivist's folder is relative to ITS spec file, and its files stay out of the parent's
    assert (refs / "archive" / "2024" / "note.md").read_text() == "ship it\n"
    assert list(result["files"]) == ["/mine.md"]
