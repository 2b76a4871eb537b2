"""What only the directory backends do: symlinks, size limit, encodings, the walk rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.backends import BackendError, FilesystemBackend, PathError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def error(call: object, *args: object) -> str:
    with pytest.raises(BackendError) as caught:
        call(*args)  # type: ignore[operator]
    return str(caught.value)


def test_root_is_created_and_seen_as_slash(root: Path) -> None:
    backend = FilesystemBackend(root / "nested")
    assert (root / "nested").is_dir()
    backend.write("/a/b.txt", "x")
    assert (root / "nested" / "a" / "b.txt").read_text() == "x"
    assert backend.ls("/") == backend.ls("//")


def test_symlinks_inside_are_followed_outside_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    backend = FilesystemBackend(root)
    backend.write("/real/file.txt", "inside")
    os.symlink(root / "real", root / "inner_link")
    os.symlink(outside, root / "escape")
    os.symlink("../outside/secret.txt", root / "relative_escape")
    os.symlink(root / "missing", root / "dangling")
    assert backend.read("/inner_link/file.txt").content == "inside"
    expected = (
        "Path '/escape/secret.txt' leads outside the root directory through a symbolic link; "
        "only paths inside it can be used"
    )
    with pytest.raises(PathError) as caught:
        backend.read("/escape/secret.txt")
    assert str(caught.value) == expected
    for call, args in [
        (backend.read, ("/relative_escape",)),
        (backend.write, ("/escape/new.txt", "x")),
        (backend.edit, ("/relative_escape", "secret", "x")),
        (backend.ls, ("/escape",)),
        (backend.glob, ("*", "/escape")),
        (backend.grep, ("secret", "/escape")),
    ]:
        with pytest.raises(PathError):
            call(*args)  # type: ignore[operator]
    assert not (outside / "new.txt").exists()
    assert (outside / "secret.txt").read_text() == "secret"
    listed = {(i.path, i.is_dir, i.size) for i in backend.ls("/")}
    assert listed == {
        ("/real", True, None),
        ("/inner_link", True, None),
        ("/dangling", False, None),
    }


def test_walks_do_not_follow_links_and_obey_no_ignore_files(root: Path) -> None:
    backend = FilesystemBackend(root)
    backend.write("/src/a.py", "needle")
    backend.write("/.hidden/h.py", "needle")
    backend.write("/build/out.py", "needle")
    backend.write("/.gitignore", "build/\n*.py\n")
    backend.write("/.git/config.py", "needle")
    backend.write("/sub/.git", "needle: a worktree's .git file is a file, not metadata\n")
    os.symlink(root / "src", root / "linked_src")
    os.symlink(root / "src" / "a.py", root / "linked.py")
    expected = ["/.hidden/h.py", "/build/out.py", "/src/a.py"]
    assert [i.path for i in backend.glob("**/*.py")] == expected
    assert [m.path for m in backend.grep("needle", glob="*.py")] == expected
    assert [m.path for m in backend.grep("needle")] == [*expected[:2], "/src/a.py", "/sub/.git"]
    assert backend.read("/linked.py").content == "needle"
    assert [m.path for m in backend.grep("needle", "/linked.py")] == ["/linked.py"]


@pytest.mark.parametrize("ripgrep", [True, False])
def test_size_limit(root: Path, ripgrep: bool) -> None:
    backend = FilesystemBackend(root, max_file_size_bytes=1000, ripgrep=ripgrep)
    (root / "big.txt").write_text("needle\n" * 200)
    (root / "edge.txt").write_text("needle".ljust(999) + "\n")
    assert error(backend.read, "/big.txt") == (
        "'/big.txt' is 0.00134 MB, over the 0.000954 MB limit for reading files"
    )
    assert error(backend.edit, "/big.txt", "needle", "x").startswith("'/big.txt' is 0.00134 MB")
    assert [m.path for m in backend.grep("needle")] == ["/edge.txt"]
    assert backend.grep("needle", "/big.txt") == []
    assert [i.path for i in backend.glob("*.txt")] == ["/big.txt", "/edge.txt"]


def test_default_size_limit_message(root: Path) -> None:
    backend = FilesystemBackend(root)
    with open(root / "huge.log", "wb") as file:
        file.truncate(12 * 1024 * 1024)
    assert error(backend.read, "/huge.log") == (
        "'/huge.log' is 12 MB, over the 10 MB limit for reading files"
    )


def test_binary_and_non_utf8_files(root: Path) -> None:
    backend = FilesystemBackend(root)
    (root / "image.bin").write_bytes(b"\x89PNG\0\0data")
    (root / "latin1.txt").write_bytes("café au lait\n".encode("latin-1"))
    assert error(backend.read, "/image.bin") == (
        "'/image.bin' is a binary file (it contains NUL bytes) and cannot be read as text"
    )
    assert backend.read("/latin1.txt").content == "caf\ufffd au lait"
    assert error(backend.edit, "/latin1.txt", "au", "with") == (
        "'/latin1.txt' is not valid UTF-8 text, so edit_file cannot change it safely"
    )
    assert (root / "latin1.txt").read_bytes() == "café au lait\n".encode("latin-1")
    assert [m.text for m in backend.grep("lait")] == ["caf\ufffd au lait"]


def test_special_files_and_directories(root: Path) -> None:
    backend = FilesystemBackend(root)
    os.mkfifo(root / "pipe")
    assert error(backend.read, "/pipe") == "'/pipe' is not a regular file"
    backend.write("/dir/x.txt", "x")
    assert error(backend.write, "/dir", "x") == (
        "'/dir' is a directory, not a file; choose a file path inside it"
    )
    assert error(backend.write, "/", "x") == (
        "'/' is a directory, not a file; choose a file path inside it"
    )
    assert backend.grep("x", "/pipe") == []


def test_os_errors_are_reported_with_the_agents_path(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = FilesystemBackend(root)
    backend.write("/locked.txt", "x")

    def denied(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)  # tests run as root here, so chmod would not do
    assert error(backend.read, "/locked.txt") == "Cannot read '/locked.txt': Permission denied"
    assert error(backend.write, "/new.txt", "x") == "Cannot write '/new.txt': Permission denied"


def test_without_virtual_mode_paths_are_host_paths(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_text("host file\n")
    backend = FilesystemBackend(tmp_path / "root", virtual_mode=False)
    assert backend.read(str(elsewhere / "f.txt")).content == "host file"
    assert [i.path for i in backend.ls(str(elsewhere))] == [str(elsewhere / "f.txt")]
    assert [m.path for m in backend.grep("host", str(elsewhere))] == [str(elsewhere / "f.txt")]
    with pytest.raises(PathError):
        backend.read(str(elsewhere) + "/../elsewhere/f.txt")
