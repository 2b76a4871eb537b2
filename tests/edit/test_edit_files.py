"""What the editor may read and write: files of the served folder only (threat list: `..`,
absolute paths, backslashes, NUL, symlinks out, non-YAML files), and a save never overwrites a
file that changed since the editor loaded it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from runner.check.validate import validate_file
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
    os.symlink(folder / "planner.yaml", folder / "alias.yaml")
    assert AgentsFolder(folder).resolve("alias.yaml") == (folder / "planner.yaml").resolve()


def test_only_yaml_files_are_written(client: TestClient, folder: Path) -> None:
    answer = client.post(
        "/web/api/edit/save", json={"path": "planner/AGENTS.md", "text": "x", "base": None}
    )
    assert answer.status_code == 400
    assert "only YAML files" in answer.json()["error"]
    assert (folder / "planner" / "AGENTS.md").read_text(encoding="utf-8") != "x"


def test_the_files_are_listed_relative_to_the_folder(client: TestClient, outside: Path) -> None:
    files = client.get("/web/api/edit/files").json()["files"]
    assert "planner.yaml" in files
    assert "planner.cassette.yaml" in files
    assert not any("outside" in f or f.startswith("escape") for f in files)


def test_a_save_from_the_version_on_disk_writes_and_returns_the_new_version(
    client: TestClient, folder: Path
) -> None:
    opened = client.get("/web/api/edit/file", params={"path": "planner.yaml"}).json()
    text = opened["text"].replace("a small team", "the docs team")
    saved = client.post(
        "/web/api/edit/save",
        json={"path": "planner.yaml", "text": text, "base": opened["version"]},
    )
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] == version_of(text)
    assert (folder / "planner.yaml").read_text(encoding="utf-8") == text


def test_a_file_changed_on_disk_meanwhile_is_not_overwritten(
    client: TestClient, folder: Path
) -> None:
    opened = client.get("/web/api/edit/file", params={"path": "planner.yaml"}).json()
    theirs = opened["text"] + "# someone else's line\n"
    (folder / "planner.yaml").write_text(theirs, encoding="utf-8")
    saved = client.post(
        "/web/api/edit/save",
        json={"path": "planner.yaml", "text": "name: mine\n", "base": opened["version"]},
    )
    assert saved.status_code == 409
    assert saved.json()["text"] == theirs
    assert saved.json()["version"] == version_of(theirs)
    assert (folder / "planner.yaml").read_text(encoding="utf-8") == theirs


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
    text, version = agents.read("planner.yaml")
    (folder / "planner.yaml").unlink()
    with pytest.raises(Conflict) as caught:
        agents.save("planner.yaml", text, base=version)
    assert caught.value.content is None
    assert not (folder / "planner.yaml").exists()


def test_a_folder_made_into_a_symlink_out_is_refused_at_save(folder: Path) -> None:
    agents = AgentsFolder(folder)
    os.symlink(folder.parent, folder / "later")
    with pytest.raises(OutsideFolder):
        agents.save("later/x.yaml", "name: x\n", base=None)
    assert not (folder.parent / "x.yaml").exists()


def test_a_new_agent_is_the_starter_laid_out_as_the_served_agents_are(
    client: TestClient, folder: Path
) -> None:
    made = client.post("/web/api/edit/new", json={"name": "helper"})
    assert made.status_code == 201, made.text
    assert made.json()["path"] == "helper.yaml"
    text = made.json()["text"]
    assert "name: helper" in text
    assert "model: replay:helper.cassette.yaml" in text
    assert "memory: [./helper/AGENTS.md]" in text
    assert "agent.yaml" not in text and "agent.cassette.yaml" not in text
    assert "agent: ./helper.yaml" in (folder / "helper.test.yaml").read_text(encoding="utf-8")
    assert (folder / "helper" / "skills" / "planning" / "SKILL.md").is_file()
    # served as the others are (serve takes the agent files directly in its folder), and sound
    from runner.check.validate import find_specs

    assert folder / "helper.yaml" in [path for path, _ in find_specs([folder])]
    assert list(validate_file(folder / "helper.yaml")) == []
    results = client.post("/web/api/edit/test", json={"path": "helper.yaml"}).json()
    assert results["summary"]["passed"] == 1, results
    # never over what is there
    again = client.post("/web/api/edit/new", json={"name": "helper"})
    assert again.status_code == 409
    assert "helper.yaml" in again.json()["error"]
    for bad in ("../up", "Has Space", "", "a/b", ".hidden"):
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


def test_with_edit_an_empty_folder_is_served(tmp_path: Path) -> None:
    from runner.errors import SpecError
    from runner.serve.agents import collect_agents

    assert collect_agents([tmp_path], allow_empty=True) == []
    with pytest.raises(SpecError, match="no agent files"):
        collect_agents([tmp_path])
    with pytest.raises(SpecError, match=r"missing\.yaml"):
        collect_agents([tmp_path / "missing.yaml"], allow_empty=True)


def test_what_is_not_a_text_file_is_refused_with_the_reason(
    client: TestClient, folder: Path
) -> None:
    (folder / "binary.yaml").write_bytes(b"\xff\xfe\x00name")
    (folder / "sub.yaml").mkdir()
    for path, reason in (
        ("binary.yaml", "not UTF-8 text"),
        ("sub.yaml", "a folder"),
        ("missing.yaml", "no such file"),
    ):
        answer = client.get("/web/api/edit/file", params={"path": path})
        assert answer.status_code in (400, 404), answer.text
        assert reason in answer.json()["error"]
    saved = client.post("/web/api/edit/save", json={"path": "sub.yaml", "text": "", "base": None})
    assert saved.status_code == 400


def test_a_save_always_moves_the_files_mtime_forward(folder: Path) -> None:
    """Serve rebuilds an agent when its file's mtime changes: a save must change it even when
    the clock has not (a coarse clock, or a file dated in the future)."""
    agents = AgentsFolder(folder)
    path = folder / "planner.yaml"
    ahead = path.stat().st_mtime_ns + 3600 * 10**9
    os.utime(path, ns=(ahead, ahead))
    text, version = agents.read("planner.yaml")
    agents.save("planner.yaml", text + "# more\n", base=version)
    assert path.stat().st_mtime_ns > ahead
