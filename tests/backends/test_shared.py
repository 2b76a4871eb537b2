"""The behaviour every backend shares, checked on all of them, through sync and async methods.

Messages are asserted verbatim: they are what the agent reads.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from runner.backends import BackendError, PathError
from tests.backends.conftest import Subject


def message(subject: Subject, method: str, *args: object, **kwargs: object) -> str:
    with pytest.raises(BackendError) as caught:
        subject.call(method, *args, **kwargs)
    return str(caught.value)


# write / read


def test_write_then_read_round_trips(subject: Subject) -> None:
    path = subject.p("notes/a.txt")
    result = subject.call("write", path, "one\ntwo\nthree\n")
    assert result.path == path
    read = subject.call("read", path)
    assert (read.content, read.start_line, read.total_lines) == ("one\ntwo\nthree", 1, 3)


def test_read_pages_by_offset_and_limit(subject: Subject) -> None:
    path = subject.p("lines.txt")
    subject.call("write", path, "".join(f"line {n}\n" for n in range(1, 11)))
    page = subject.call("read", path, offset=3, limit=2)
    assert (page.content, page.start_line, page.total_lines) == ("line 4\nline 5", 4, 10)
    tail = subject.call("read", path, offset=8, limit=100)
    assert tail.content == "line 9\nline 10"


def test_read_past_the_end_names_the_length(subject: Subject) -> None:
    path = subject.p("short.txt")
    subject.call("write", path, "a\nb")
    assert message(subject, "read", path, offset=2) == (
        f"Line offset 2 is past the end of '{path}', which has 2 lines"
    )


def test_empty_file_reads_as_empty(subject: Subject) -> None:
    path = subject.p("empty.txt")
    subject.call("write", path, "")
    read = subject.call("read", path)
    assert (read.content, read.start_line, read.total_lines) == ("", 1, 0)


@pytest.mark.parametrize(
    ("offset", "limit", "expected"),
    [(-1, 10, "offset must be 0 or more, got -1"), (0, 0, "limit must be at least 1, got 0")],
)
def test_read_rejects_bad_paging(subject: Subject, offset: int, limit: int, expected: str) -> None:
    path = subject.p("x.txt")
    subject.call("write", path, "x")
    assert message(subject, "read", path, offset=offset, limit=limit) == expected


def test_read_missing_file(subject: Subject) -> None:
    path = subject.p("missing.txt")
    assert message(subject, "read", path) == f"File not found: '{path}'"


def test_read_directory(subject: Subject) -> None:
    subject.call("write", subject.p("d/x.txt"), "x")
    assert message(subject, "read", subject.p("d")) == (
        f"'{subject.p('d')}' is a directory, not a file; use ls to list it"
    )


def test_write_refuses_an_existing_file(subject: Subject) -> None:
    path = subject.p("exists.txt")
    subject.call("write", path, "first")
    assert message(subject, "write", path, "second") == (
        f"File '{path}' already exists; read it and use edit_file to change it"
    )
    assert subject.call("read", path).content == "first"


def test_write_refuses_a_path_under_a_file(subject: Subject) -> None:
    subject.call("write", subject.p("f"), "a file")
    assert message(subject, "write", subject.p("f/x.txt"), "x") == (
        f"Cannot create '{subject.p('f/x.txt')}': '{subject.p('f')}' is a file, not a directory"
    )


def test_write_normalises_the_path(subject: Subject) -> None:
    messy = subject.base.rstrip("/") + "//d/./n.txt"
    result = subject.call("write", messy, "x")
    assert result.path == subject.p("d/n.txt")
    assert subject.call("read", subject.p("d/n.txt")).content == "x"


def test_write_returns_only_the_changed_file(subject: Subject) -> None:
    for n in range(3):
        subject.call("write", subject.p(f"f{n}.txt"), str(n))
    result = subject.call("write", subject.p("new.txt"), "new")
    if subject.in_state:
        assert list(result.files_update) == [subject.p("new.txt")]
        data = result.files_update[subject.p("new.txt")]
        assert data["content"] == "new"
        assert data["created_at"] == data["modified_at"]
    else:
        assert result.files_update is None


def test_unicode_round_trips_and_sizes_count_bytes(subject: Subject) -> None:
    path = subject.p("uni.txt")
    subject.call("write", path, "héllo 世界\n")
    assert subject.call("read", path).content == "héllo 世界"
    [info] = subject.call("glob", "uni.txt", subject.base)
    assert info.size == len("héllo 世界\n".encode())


# edit


def test_edit_replaces_one_occurrence(subject: Subject) -> None:
    path = subject.p("e.txt")
    subject.call("write", path, "alpha\nbeta\ngamma\n")
    result = subject.call("edit", path, "beta", "BETA")
    assert (result.path, result.occurrences) == (path, 1)
    assert subject.call("read", path).content == "alpha\nBETA\ngamma"
    if subject.in_state:
        assert list(result.files_update) == [path]


def test_edit_not_unique_without_replace_all(subject: Subject) -> None:
    path = subject.p("dup.txt")
    subject.call("write", path, "x = 1\nx = 1\nx = 1\n")
    assert message(subject, "edit", path, "x = 1", "x = 2") == (
        f"old_string occurs 3 times in '{path}'; include more surrounding lines to make it "
        "unique, or set replace_all to replace every occurrence"
    )
    result = subject.call("edit", path, "x = 1", "x = 2", replace_all=True)
    assert result.occurrences == 3
    assert subject.call("read", path).content == "x = 2\nx = 2\nx = 2"


def test_edit_not_found(subject: Subject) -> None:
    path = subject.p("nf.txt")
    subject.call("write", path, "hello")
    assert message(subject, "edit", path, "  hello", "bye") == (
        f"old_string was not found in '{path}'; it must match the file exactly, including "
        "whitespace and indentation: read the file and copy the text"
    )


def test_edit_missing_file_and_silly_edits(subject: Subject) -> None:
    path = subject.p("none.txt")
    assert message(subject, "edit", path, "a", "b") == f"File not found: '{path}'"
    subject.call("write", path, "abc")
    assert message(subject, "edit", path, "", "b") == (
        "old_string must not be empty; to create a file use write_file"
    )
    assert message(subject, "edit", path, "abc", "abc") == (
        "old_string and new_string are identical; there is nothing to change"
    )


# ls


def test_ls_lists_files_and_directories_sorted(subject: Subject) -> None:
    subject.call("write", subject.p("d/b.txt"), "bb")
    subject.call("write", subject.p("d/a.txt"), "a")
    subject.call("write", subject.p("d/sub/deep.txt"), "deep")
    infos = subject.call("ls", subject.p("d"))
    assert [(i.path, i.is_dir) for i in infos] == [
        (subject.p("d/a.txt"), False),
        (subject.p("d/b.txt"), False),
        (subject.p("d/sub"), True),
    ]
    assert [i.size for i in infos[:2]] == [1, 2]
    for info in infos[:2]:
        assert info.modified_at is not None
        assert datetime.fromisoformat(info.modified_at).utcoffset() is not None


def test_ls_errors(subject: Subject) -> None:
    subject.call("write", subject.p("file.txt"), "x")
    assert (
        message(subject, "ls", subject.p("nope")) == f"Directory not found: '{subject.p('nope')}'"
    )
    assert message(subject, "ls", subject.p("file.txt")) == (
        f"'{subject.p('file.txt')}' is a file, not a directory; use read_file to read it"
    )


# glob


@pytest.fixture
def tree(subject: Subject) -> Subject:
    for path in [
        "a.py",
        "b.txt",
        "c.md",
        "src/main.py",
        "src/util.py",
        "src/data.json",
        "src/pkg/deep.py",
        "docs/readme.md",
        ".hidden/secret.py",
    ]:
        subject.call("write", subject.p(path), f"content of {path}\n")
    return subject


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", ["a.py"]),
        ("**/*.py", [".hidden/secret.py", "a.py", "src/main.py", "src/pkg/deep.py", "src/util.py"]),
        ("src/*.py", ["src/main.py", "src/util.py"]),
        ("src/**", ["src/data.json", "src/main.py", "src/pkg/deep.py", "src/util.py"]),
        ("*.{md,txt}", ["b.txt", "c.md"]),
        ("?.py", ["a.py"]),
        ("[ab].*", ["a.py", "b.txt"]),
        ("[!ab].*", ["c.md"]),
        ("**/readme.md", ["docs/readme.md"]),
        ("nothing*", []),
    ],
)
def test_glob_patterns(tree: Subject, pattern: str, expected: list[str]) -> None:
    infos = tree.call("glob", pattern, tree.base)
    assert [i.path for i in infos] == [tree.p(e) for e in expected]
    assert all(not i.is_dir for i in infos)


def test_glob_base_path_and_absolute_patterns(tree: Subject) -> None:
    under_src = tree.call("glob", "**/*.py", tree.p("src"))
    assert [i.path for i in under_src] == [
        tree.p(p) for p in ["src/main.py", "src/pkg/deep.py", "src/util.py"]
    ]
    absolute = tree.call("glob", tree.p("src") + "/*.py", tree.base)
    assert [i.path for i in absolute] == [tree.p("src/main.py"), tree.p("src/util.py")]
    assert (
        message(tree, "glob", "*", tree.p("missing"))
        == f"Directory not found: '{tree.p('missing')}'"
    )


def test_glob_refuses_traversal(tree: Subject) -> None:
    with pytest.raises(PathError) as caught:
        tree.call("glob", "../*", tree.base)
    assert str(caught.value) == "Path traversal is not allowed in glob patterns: '../*'"


# grep


def test_grep_is_literal_and_sorted(tree: Subject) -> None:
    tree.call("write", tree.p("src/re.py"), "a.c\nabc\n(x) [y]\nx.*\n")
    tree.call("write", tree.p("b2.txt"), "first a.c\r\nno\r\nsecond a.c\r\n")
    matches = tree.call("grep", "a.c", tree.base)
    assert [(m.path, m.line, m.text) for m in matches] == [
        (tree.p("b2.txt"), 1, "first a.c"),
        (tree.p("b2.txt"), 3, "second a.c"),
        (tree.p("src/re.py"), 1, "a.c"),
    ]
    assert [(m.line, m.text) for m in tree.call("grep", "(x) [y]", tree.base)] == [(3, "(x) [y]")]
    assert [m.text for m in tree.call("grep", "x.*", tree.base)] == ["x.*"]


def test_grep_searches_a_regular_expression_when_asked(tree: Subject) -> None:
    """`regex=True`: a Python regular expression searched in each line, on every backend (with
    ripgrep proposing the files, or the Python walk alone), with the same lines as literal
    search; a pattern only Python's syntax knows falls back to the walk, not to no results."""
    tree.call("write", tree.p("src/re.py"), "a.c\nabc\n(x) [y]\nx.*\n")
    tree.call("write", tree.p("b2.txt"), "first a.c\r\nno\r\nsecond abc\r\n")
    matches = tree.call("grep", r"^\w+ a.c$", tree.base, None, True)
    assert [(m.path, m.line, m.text) for m in matches] == [
        (tree.p("b2.txt"), 1, "first a.c"),
        (tree.p("b2.txt"), 3, "second abc"),
    ]
    assert [m.text for m in tree.call("grep", r"\(x\)", tree.base, None, True)] == ["(x) [y]"]
    lookbehind = tree.call("grep", r"(?<=x)\.\*", tree.base, None, True)
    assert [(m.path, m.text) for m in lookbehind] == [(tree.p("src/re.py"), "x.*")]
    assert tree.call("grep", "a.c", tree.base, None, False)[-1].text == "a.c"
    with pytest.raises(BackendError, match="not a valid regular expression"):
        tree.call("grep", "(", tree.base, None, True)


def test_grep_path_and_file_filter(tree: Subject) -> None:
    def paths(*args: object) -> list[str]:
        return [m.path for m in tree.call("grep", "content of", *args)]

    assert paths(tree.p("src")) == [
        tree.p(p) for p in ["src/data.json", "src/main.py", "src/pkg/deep.py", "src/util.py"]
    ]
    assert paths(tree.p("src/main.py")) == [tree.p("src/main.py")]
    assert paths(tree.p("src"), "*.py") == [
        tree.p(p) for p in ["src/main.py", "src/pkg/deep.py", "src/util.py"]
    ]
    assert paths(tree.base, "src/*.py") == [tree.p("src/main.py"), tree.p("src/util.py")]
    assert paths(tree.base, "*.{md,json}") == [
        tree.p(p) for p in ["c.md", "docs/readme.md", "src/data.json"]
    ]
    assert paths(tree.p("src/main.py"), "*.md") == []
    assert ".hidden" in " ".join(paths(tree.base))


def test_grep_skips_binary_files(subject: Subject) -> None:
    subject.call("write", subject.p("bin.dat"), "needle\0binary\n")
    subject.call("write", subject.p("late.dat"), "needle\n" + "x" * 100_000 + "\0")
    subject.call("write", subject.p("text.txt"), "needle\n")
    assert [m.path for m in subject.call("grep", "needle", subject.base)] == [subject.p("text.txt")]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("", "The grep pattern must not be empty"),
        ("a\nb", "The grep pattern must be a single line; grep matches one line at a time"),
        ("a\0b", "The grep pattern must not contain a NUL character"),
    ],
)
def test_grep_refuses_bad_patterns(subject: Subject, pattern: str, expected: str) -> None:
    assert message(subject, "grep", pattern, subject.base) == expected


def test_grep_missing_path(subject: Subject) -> None:
    assert (
        message(subject, "grep", "x", subject.p("nope")) == f"Path not found: '{subject.p('nope')}'"
    )


# paths


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ("../x", "Path traversal is not allowed: '../x'"),
        ("/a/../../x", "Path traversal is not allowed: '/a/../../x'"),
        ("~/x", "Home-directory paths are not allowed: '~/x'; use paths like /dir/file.txt"),
        ("C:\\x", "Windows paths are not supported: 'C:\\x'; use paths like /dir/file.txt"),
        (
            "relative.txt",
            "Path must be absolute (start with '/'): 'relative.txt'; use paths like /dir/file.txt",
        ),
    ],
)
def test_every_method_validates_paths(subject: Subject, bad: str, expected: str) -> None:
    calls: list[tuple[str, tuple[object, ...]]] = [
        ("ls", (bad,)),
        ("read", (bad,)),
        ("write", (bad, "x")),
        ("edit", (bad, "a", "b")),
        ("glob", ("*", bad)),
        ("grep", ("x", bad)),
    ]
    for method, args in calls:
        with pytest.raises(PathError) as caught:
            subject.call(method, *args)
        assert str(caught.value) == expected, method
