"""A ref'd subagent with its own backend and skills; a call to the general-purpose subagent."""

from __future__ import annotations

from pathlib import Path

import yaml

from runner.events import ToolResult
from runner.run import Session


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump(data, sort_keys=False) if not isinstance(data, str) else data,
        encoding="utf-8",
    )
    return path


def test_a_ref_subagent_uses_its_own_backend_and_skills(tmp_path: Path) -> None:
    write(
        tmp_path / "team" / "skills" / "tidy" / "SKILL.md",
        "---\nname: tidy\ndescription: Tidy a folder.\n---\nSort files by theme.\n",
    )
    write(
        tmp_path / "team" / "archivist.yaml",
        {
            "name": "archivist",
            "description": "Files documents in the archive",
            "model": "replay:team.cassette.yaml",
            "backend": {"kind": "filesystem", "root_dir": "./archive"},
            "skills": ["./skills"],
            "general_purpose_agent": False,
        },
    )
    write(
        tmp_path / "team" / "team.cassette.yaml",
        {
            "agents": {
                "lead": [
                    {
                        "content": "",
                        "tool_calls": [
                            {
                                "name": "task",
                                "args": {
                                    "description": "archive the memo",
                                    "subagent_type": "archivist",
                                },
                            }
                        ],
                    },
                    {"content": "Archived."},
                ],
                "archivist": [
                    {
                        "content": "",
                        "tool_calls": [
                            {"name": "read_file", "args": {"file_path": "/skills/tidy/SKILL.md"}}
                        ],
                    },
                    {
                        "content": "",
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "args": {"file_path": "/memo.md", "content": "filed"},
                            }
                        ],
                    },
                    {"content": "The memo is in /memo.md of the archive."},
                ],
            }
        },
    )
    lead = write(
        tmp_path / "team" / "lead.yaml",
        {
            "name": "lead",
            "model": "replay:team.cassette.yaml",
            "subagents": [{"ref": "./archivist.yaml"}],
        },
    )
    with Session(lead, db=tmp_path / "db") as session:
        events = list(session.stream("archive the memo"))
        files = session.values(events[0].thread_id).get("files", {})
    skill = next(e for e in events if isinstance(e, ToolResult) and e.name == "read_file")
    assert skill.agent == "archivist" and "Sort files by theme." in skill.content
    assert (tmp_path / "team" / "archive" / "memo.md").read_text() == "filed"  # its own backend
    assert "/memo.md" not in files  # not the lead's (state) backend
    assert events[-1].content == "Archived."  # type: ignore[attr-defined]


def test_the_general_purpose_subagent_has_the_main_agents_tools(tmp_path: Path) -> None:
    write(
        tmp_path / "c.cassette.yaml",
        {
            "agents": {
                "main": [
                    {
                        "content": "",
                        "tool_calls": [
                            {
                                "name": "task",
                                "args": {
                                    "description": "note it",
                                    "subagent_type": "general-purpose",
                                },
                            }
                        ],
                    },
                    {"content": "Noted by the helper."},
                ],
                "general-purpose": [
                    {
                        "content": "",
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "args": {"file_path": "/note.md", "content": "from gp"},
                            }
                        ],
                    },
                    {"content": "Wrote /note.md."},
                ],
            }
        },
    )
    spec = write(tmp_path / "main.yaml", {"name": "main", "model": "replay:c.cassette.yaml"})
    with Session(spec, db=tmp_path / "db") as session:
        events = list(session.stream("take a note"))
        values = session.values(events[0].thread_id)
    task = next(e for e in events if isinstance(e, ToolResult) and e.name == "task")
    assert task.content == "Wrote /note.md."
    assert (
        values["files"]["/note.md"]["content"] == "from gp"
    )  # the subagent's state write merged back
