"""Deleting a thread's workspace folder, as a threat list: only the thread's own folder goes, a
symlink (the folder itself, or anything inside it) is never followed, an id that cannot name a
folder deletes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.serve.thread_guard import remove_thread_folders, thread_folder


def test_the_thread_folder_is_the_component_that_holds_the_id(tmp_path: Path) -> None:
    root = f"{tmp_path}/ws/{{thread_id}}/work"
    assert thread_folder(root, "t1") == (f"{tmp_path}/ws", "t1")
    assert thread_folder(f"{tmp_path}/ws-{{thread_id}}", "t1") == (str(tmp_path), "ws-t1")
    assert thread_folder(f"{tmp_path}/shared", "t1") is None


@pytest.mark.parametrize("thread", ["..", ".", "a/b", "", "../ws"])
def test_an_id_that_cannot_name_a_folder_deletes_nothing(tmp_path: Path, thread: str) -> None:
    (tmp_path / "ws" / "t1").mkdir(parents=True)
    assert remove_thread_folders([f"{tmp_path}/ws/{{thread_id}}"], thread) == []
    assert (tmp_path / "ws" / "t1").is_dir()


def test_the_folder_goes_and_nothing_a_symlink_inside_points_to(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("keep", encoding="utf-8")
    folder = tmp_path / "ws" / "t1" / "work"
    folder.mkdir(parents=True)
    (folder / "note.md").write_text("x", encoding="utf-8")
    os.symlink(outside, folder / "link")
    os.symlink(outside / "keep.md", folder / "file-link")
    (tmp_path / "ws" / "t2").mkdir()
    removed = remove_thread_folders([f"{tmp_path}/ws/{{thread_id}}/work"] * 2, "t1")
    assert removed == [str(tmp_path / "ws" / "t1")]
    assert not (tmp_path / "ws" / "t1").exists()
    assert (tmp_path / "ws" / "t2").is_dir()  # another thread's
    assert (outside / "keep.md").read_text(encoding="utf-8") == "keep"


def test_a_folder_that_is_a_symlink_loses_the_link_only(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("keep", encoding="utf-8")
    (tmp_path / "ws").mkdir()
    os.symlink(outside, tmp_path / "ws" / "t1")
    assert remove_thread_folders([f"{tmp_path}/ws/{{thread_id}}"], "t1") == [
        str(tmp_path / "ws" / "t1")
    ]
    assert not os.path.lexists(tmp_path / "ws" / "t1")
    assert (outside / "keep.md").read_text(encoding="utf-8") == "keep"


def test_no_folder_no_parent_nothing_to_do(tmp_path: Path) -> None:
    assert remove_thread_folders([f"{tmp_path}/missing/{{thread_id}}"], "t1") == []
    (tmp_path / "ws").mkdir()
    assert remove_thread_folders([f"{tmp_path}/ws/{{thread_id}}"], "t1") == []
