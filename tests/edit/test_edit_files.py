"""What the editor may read and write: files of the served folder only (threat list: `..`,
absolute paths, backslashes, NUL, symlinks out, non-YAML files), and a save never overwrites a
file that changed since the editor loaded it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from runner.edit.folder import AgentsFolder, Conflict, OutsideFolder, version_of

ATTACKS = [
    "../outside.yaml",
    "planner/../../outside.yaml",
    "/etc/passwd",
    str(Path("/tmp/outside.yaml")),
    "C:/outside.yaml",
    "planner\\..\\..\\outside.yaml",
    "planner/./agent.yaml",
    "planner//agent.yaml",
    "outside.yaml\x00.yaml",
    "",
    "escape/outside.yaml",
    "link.yaml",
]


@pytest.fixture
def outside(folder: Path) -> Path:
    """A file beside the served folder, and symlinks pointing at it from inside."""
    target = folder.parent / "outside.yaml"
    target.write_text("name: secret\n", encoding="utf-8")
    os.symlink(folder.parent, folder / "escape")
    os.symlink(target, folder / "link.yaml")
    return target


@pytest.mark.parametrize("path", ATTACKS)
def test_a_path_out_of_the_folder_is_refused_for_reading_and_writing(
    client: TestClient, outside: Path, path: str
) -> None:
    read = client.get("/web/api/edit/file", params={"path": path})
    assert read.status_code == 400, read.text
    assert "secret" not in read.text
    saved = client.post(
        "/web/api/edit/save",
        json={"path": path, "text": "name: pwned\n", "base": version_of("name: secret\n")},
    )
    assert saved.status_code == 400, saved.text
    assert outside.read_text(encoding="utf-8") == "name: secret\n"
    for route in ("check", "try", "test"):
        answer = client.post(
            f"/web/api/edit/{route}", json={"path": path, "text": "", "message": "hi"}
        )
        assert answer.status_code == 400, (route, answer.text)


def test_a_symlink_inside_the_folder_to_a_file_inside_is_followed(folder: Path) -> None:
    os.symlink(folder / "planner" / "agent.yaml", folder / "alias.yaml")
    assert (
        AgentsFolder(folder).resolve("alias.yaml") == (folder / "planner" / "agent.yaml").resolve()
    )


def test_only_yaml_files_are_written(client: TestClient, folder: Path) -> None:
    answer = client.post(
        "/web/api/edit/save", json={"path": "planner/AGENTS.md", "text": "x", "base": None}
    )
    assert answer.status_code == 400
    assert "only YAML files" in answer.json()["error"]
    assert (folder / "planner" / "AGENTS.md").read_text(encoding="utf-8") != "x"


def test_the_files_are_listed_relative_to_the_folder(client: TestClient, outside: Path) -> None:
    files = client.get("/web/api/edit/files").json()["files"]
    assert "planner/agent.yaml" in files
    assert "planner/agent.cassette.yaml" in files
    assert not any("outside" in f or f.startswith("escape") for f in files)


def test_a_save_from_the_version_on_disk_writes_and_returns_the_new_version(
    client: TestClient, folder: Path
) -> None:
    opened = client.get("/web/api/edit/file", params={"path": "planner/agent.yaml"}).json()
    text = opened["text"].replace("a small team", "the docs team")
    saved = client.post(
        "/web/api/edit/save",
        json={"path": "planner/agent.yaml", "text": text, "base": opened["version"]},
    )
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] == version_of(text)
    assert (folder / "planner" / "agent.yaml").read_text(encoding="utf-8") == text


def test_a_file_changed_on_disk_meanwhile_is_not_overwritten(
    client: TestClient, folder: Path
) -> None:
    opened = client.get("/web/api/edit/file", params={"path": "planner/agent.yaml"}).json()
    theirs = opened["text"] + "# someone else's line\n"
    (folder / "planner" / "agent.yaml").write_text(theirs, encoding="utf-8")
    saved = client.post(
        "/web/api/edit/save",
        json={"path": "planner/agent.yaml", "text": "name: mine\n", "base": opened["version"]},
    )
    assert saved.status_code == 409
    assert saved.json()["text"] == theirs
    assert saved.json()["version"] == version_of(theirs)
    assert (folder / "planner" / "agent.yaml").read_text(encoding="utf-8") == theirs


def test_a_new_file_is_created_only_when_it_does_not_exist(
    client: TestClient, folder: Path
) -> None:
    new = {"path": "extra.yaml", "text": "name: extra\n", "base": None}
    assert client.post("/web/api/edit/save", json=new).status_code == 200
    again = client.post("/web/api/edit/save", json={**new, "text": "name: other\n"})
    assert again.status_code == 409
    assert (folder / "extra.yaml").read_text(encoding="utf-8") == "name: extra\n"


def test_a_deleted_file_is_a_conflict_too(folder: Path) -> None:
    agents = AgentsFolder(folder)
    text, version = agents.read("planner/agent.yaml")
    (folder / "planner" / "agent.yaml").unlink()
    with pytest.raises(Conflict) as caught:
        agents.save("planner/agent.yaml", text, base=version)
    assert caught.value.content is None
    assert not (folder / "planner" / "agent.yaml").exists()


def test_a_folder_made_into_a_symlink_out_is_refused_at_save(folder: Path) -> None:
    agents = AgentsFolder(folder)
    os.symlink(folder.parent, folder / "later")
    with pytest.raises(OutsideFolder):
        agents.save("later/x.yaml", "name: x\n", base=None)
    assert not (folder.parent / "x.yaml").exists()


def test_a_new_agent_is_the_starter_in_a_folder_of_its_name(
    client: TestClient, folder: Path
) -> None:
    made = client.post("/web/api/edit/new", json={"name": "helper"})
    assert made.status_code == 201, made.text
    assert made.json()["path"] == "helper/agent.yaml"
    assert "name: helper" in made.json()["text"]
    assert (folder / "helper" / "agent.cassette.yaml").is_file()
    assert (folder / "helper" / "agent.test.yaml").is_file()
    assert client.post("/web/api/edit/new", json={"name": "helper"}).status_code == 409
    for bad in ("../up", "Has Space", "", "a/b"):
        assert client.post("/web/api/edit/new", json={"name": bad}).status_code == 400


def test_edit_takes_one_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    from runner.cli.serve import _edited_folder

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.yaml").write_text("name: x\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert _edited_folder(["a"]) == (tmp_path / "a").resolve()
    assert _edited_folder(["a/x.yaml"]) == (tmp_path / "a").resolve()
    with pytest.raises(click.BadParameter, match="edits one folder"):
        _edited_folder(["a", "b"])
