"""Subagents and files: what they write reaches the parent's backend, and nothing else leaks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import runner
from tests.middleware.helpers import MODES, call, reply, run, spec_file, timeless


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
    texts = [(m.name, timeless(m.text)) for m in result["messages"] if m.type == "tool"]
    assert texts == [
        ("write_file", "Updated file /mine.md"),
        ("task", "Filed at /2024/note.md in the archive."),
        ("ls", "/mine.md (19 bytes, modified <time>)"),
    ]
    # the archivist's folder is relative to ITS spec file, and its files stay out of the parent's
    assert (refs / "archive" / "2024" / "note.md").read_text() == "ship it\n"
    assert list(result["files"]) == ["/mine.md"]


@pytest.mark.parametrize("mode", MODES)
def test_two_subagents_changing_one_file_keep_both_versions(tmp_path: Path, mode: str) -> None:
    """Parallel subagents on the state backend each edit their own copy of the parent's files:
    the first to finish keeps its version of the file, the later one's goes beside it, and its
    report tells the parent (before, the later silently replaced the earlier)."""
    draft = "# Embedded databases\nIntro: TODO\nList: TODO\n"
    model = write_cassette(
        tmp_path,
        {
            "lead": [
                reply("", call("write_file", file_path="/draft.md", content=draft)),
                reply(
                    "Both sections at once.",
                    task("t_scout", "scout", "Fill in the list in /draft.md."),
                    task("t_scribe", "scribe", "Fill in the intro in /draft.md."),
                ),
                reply("Merged."),
            ],
            "scout": [
                reply(
                    "",
                    call(
                        "edit_file",
                        file_path="/draft.md",
                        old_string="List: TODO",
                        new_string="List: SQLite, DuckDB",
                    ),
                ),
                reply("Filled in the list."),
            ],
            "scribe": [
                {
                    "delay": 0.3,
                    **reply(
                        "",
                        call(
                            "edit_file",
                            file_path="/draft.md",
                            old_string="Intro: TODO",
                            new_string="Intro: small and local",
                        ),
                    ),
                },
                reply("Filled in the intro."),
            ],
        },
    )
    subagents = [
        {"name": "scout", "description": "Finds facts"},
        {"name": "scribe", "description": "Writes prose"},
    ]
    spec = spec_file(tmp_path, name="lead", model=model, subagents=subagents)
    result = run(runner.build_agent(spec), "Write the draft.", mode)
    files = {p: f["content"] for p, f in result["files"].items()}
    assert files == {
        "/draft.md": draft.replace("List: TODO", "List: SQLite, DuckDB"),
        "/draft.md.from-scribe-1": draft.replace("Intro: TODO", "Intro: small and local"),
    }
    reports = {m.tool_call_id: m.text for m in result["messages"] if m.type == "tool"}
    assert reports["t_scout"] == "Filled in the list."
    assert reports["t_scribe"] == (
        "Filled in the intro.\n\n[agentctl] /draft.md: a parallel task also changed it, and its "
        "version was kept; this subagent's version is in /draft.md.from-scribe-1. Compare the "
        "two and merge them."
    )


def test_parallel_changes_keep_the_first_version_and_forget_settled_messages() -> None:
    from runner.middleware.subagents import ParallelChanges

    changes = ParallelChanges(keep=2)
    old = {"/a.md": {"content": "old"}}
    one = {"content": "one"}
    applied, notes = changes.settle("m1", 3, old, {"/a.md": one, "/b.md": one}, "x")
    assert (applied, notes) == ({"/a.md": one, "/b.md": one}, [])
    # the same content twice is no conflict; a deletion of a changed file is not applied
    applied, notes = changes.settle("m1", 3, old, {"/b.md": one, "/a.md": None}, "y")
    assert applied == {}
    assert notes == [
        "/a.md was also changed by a parallel task, whose version was kept; this subagent's "
        "deletion of it was not applied."
    ]
    two = {"content": "two"}
    applied, notes = changes.settle("m1", 3, {"/a.md.from-z-1": two}, {"/a.md": two}, "z")
    assert applied == {"/a.md.from-z-2": two}
    # all three calls of m1 reported: a new call under the same id starts afresh
    assert changes.settle("m1", 2, old, {"/a.md": two}, "z") == ({"/a.md": two}, [])
    changes.settle("m2", 2, old, {}, "z")
    changes.settle("m3", 2, old, {}, "z")  # m1 is dropped: at most two unsettled messages
    assert changes.settle("m1", 2, old, {"/a.md": one}, "z") == ({"/a.md": one}, [])
