"""`validate_path` (the one path gate) and the glob syntax shared by every backend."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runner.backends import BackendError, PathError, validate_path
from runner.backends.paths import (
    compile_glob,
    file_filter,
    join_path,
    normalize_glob,
    parent_dirs,
    relative_to,
)
from runner.backends.protocol import quote_path


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("/", "/"),
        ("/a", "/a"),
        ("/a/", "/a"),
        ("//a//b/", "/a/b"),
        ("/./a/./b/.", "/a/b"),
        ("/a b/c~d.txt", "/a b/c~d.txt"),
        ("/~", "/~"),
        ("/.hidden/x", "/.hidden/x"),
        ("/a..b/..c", "/a..b/..c"),
    ],
)
def test_normal_forms(raw: str, normal: str) -> None:
    assert validate_path(raw) == normal


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", "Path must not be empty; use paths like /dir/file.txt"),
        ("   ", "Path must not be empty; use paths like /dir/file.txt"),
        ("../x", "Path traversal is not allowed: '../x'"),
        ("/a/..", "Path traversal is not allowed: '/a/..'"),
        ("/a/../b", "Path traversal is not allowed: '/a/../b'"),
        ("~", "Home-directory paths are not allowed: '~'; use paths like /dir/file.txt"),
        (
            "~root/x",
            "Home-directory paths are not allowed: '~root/x'; use paths like /dir/file.txt",
        ),
        ("C:\\x", "Windows paths are not supported: 'C:\\x'; use paths like /dir/file.txt"),
        ("C:/x", "Windows paths are not supported: 'C:/x'; use paths like /dir/file.txt"),
        ("d:", "Windows paths are not supported: 'd:'; use paths like /dir/file.txt"),
        (
            "\\\\server\\share",
            "Windows paths are not supported: '\\\\server\\share'; use paths like /dir/file.txt",
        ),
        (
            "/dir\\file",
            "Backslashes are not allowed in paths: '/dir\\file'; separate directories with '/'",
        ),
        ("/a\0b", "Path contains a NUL byte: '/a\\x00b'"),
        ("a/b", "Path must be absolute (start with '/'): 'a/b'; use paths like /dir/file.txt"),
        ("./a", "Path must be absolute (start with '/'): './a'; use paths like /dir/file.txt"),
    ],
)
def test_refusals(raw: str, expected: str) -> None:
    with pytest.raises(PathError) as caught:
        validate_path(raw)
    assert str(caught.value) == expected
    assert not str(caught.value).startswith("Error")


def test_allowed_prefixes() -> None:
    assert validate_path("/memories/a.md", allowed_prefixes=["/memories/"]) == "/memories/a.md"
    assert validate_path("/memories", allowed_prefixes=["/memories/"]) == "/memories"
    with pytest.raises(PathError) as caught:
        validate_path("/memoriesX/a", allowed_prefixes=["/memories/", "/skills"])
    assert str(caught.value) == (
        "Path '/memoriesX/a' is outside the allowed directories: /memories/, /skills/"
    )


def test_helpers() -> None:
    assert join_path("/", "a") == "/a"
    assert join_path("/m", "/a/b") == "/m/a/b"
    assert join_path("/m", "/") == "/m"
    assert relative_to("/a/b", "/") == "a/b"
    assert relative_to("/a/b", "/a") == "b"
    assert relative_to("/a", "/a") == ""
    assert parent_dirs("/a/b/c") == ["/a", "/a/b"]
    assert parent_dirs("/a") == []
    assert quote_path("/a b") == "'/a b'"
    assert quote_path("/a\nb") == "'/a\\nb'"


def test_rerooted_errors_move_only_absolute_paths() -> None:
    error = BackendError("Cannot create {0}: {1} is a file, not a directory", "/x/y", "/x")
    assert str(error.rerooted("/mem")) == (
        "Cannot create '/mem/x/y': '/mem/x' is a file, not a directory"
    )
    assert str(BackendError("File not found: {0}", "/").rerooted("/mem")) == (
        "File not found: '/mem'"
    )
    assert str(PathError("Path traversal is not allowed: {0}", "../x").rerooted("/m")) == (
        "Path traversal is not allowed: '../x'"
    )
    assert type(PathError("x").rerooted("/m")) is PathError


def test_errors_without_paths_keep_their_text_and_survive_pickling() -> None:
    assert str(BackendError("pattern {a,b} is odd")) == "pattern {a,b} is odd"
    error = BackendError("File not found: {0}", "/x{y}")
    assert str(error) == "File not found: '/x{y}'"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.paths) == (BackendError, str(error), ("/x{y}",))


_SEGMENTS = st.sampled_from(
    ["a", "b", "..", ".", "", "~", "~x", "C:", "c:", "\\", "x\\y", "\0", " ", "é", "a.b", "..."]
)
_RAW_PATHS = st.lists(_SEGMENTS, max_size=6).map("/".join) | st.text(max_size=12)


@settings(max_examples=2000, deadline=None)
@given(raw=_RAW_PATHS)
def test_validated_paths_are_normal_and_safe(raw: str) -> None:
    try:
        normal = validate_path(raw)
    except PathError as exc:
        assert str(exc) and not str(exc).startswith("Error")
        return
    assert normal.startswith("/")
    assert validate_path(normal) == normal
    segments = normal.split("/")[1:]
    assert normal == "/" or all(s not in ("", ".", "..") for s in segments)
    assert "\\" not in normal and "\0" not in normal
    assert not normal.startswith("~")


# globs


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "dir/a.py", False),
        ("*.py", ".hidden.py", True),
        ("**/*.py", "a.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("a/**/b.py", "a/b.py", True),
        ("a/**/b.py", "a/x/y/b.py", True),
        ("a/**", "a/x/y", True),
        ("a/**", "a", False),
        ("**", "anything/at/all", True),
        ("a/**/**/b", "a/b", True),
        ("?.txt", "ab.txt", False),
        ("[a-c].txt", "b.txt", True),
        ("[!a-c].txt", "d.txt", True),
        ("[!a-c].txt", "b.txt", False),
        ("[^a].txt", "b.txt", True),
        ("[]].txt", "].txt", True),
        ("[unclosed", "[unclosed", True),
        ("{a,b/c}.md", "b/c.md", True),
        ("{a,{b,c}}.md", "c.md", True),
        ("{single}.md", "{single}.md", True),
        ("\\*.md", "*.md", True),
        ("\\*.md", "x.md", False),
        ("a+b(c).md", "a+b(c).md", True),
        ("x|y", "x", False),
    ],
)
def test_glob_syntax(pattern: str, path: str, matches: bool) -> None:
    assert compile_glob(pattern).matches(path) is matches


def _reference_segment(tokens: tuple[str, ...], name: str) -> bool:
    """Naive glob matching of one segment, by recursion: the meaning the regexes must have."""
    if not tokens:
        return not name
    token, rest = tokens[0], tokens[1:]
    if token == "*":
        return any(_reference_segment(rest, name[cut:]) for cut in range(len(name) + 1))
    if not name:
        return False
    if token == "?":
        ok = True
    elif token.startswith("[!"):
        ok = name[0] not in token[2:-1]
    elif token.startswith("["):
        ok = name[0] in token[1:-1]
    else:
        ok = name[0] == token
    return ok and _reference_segment(rest, name[1:])


def _reference(pattern: list[list[str]], path: list[str]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == ["**"]:  # any number of segments; at least one at the end (`a/**` is not `a`)
        return any(_reference(rest, path[cut:]) for cut in range(0 if rest else 1, len(path) + 1))
    return bool(path) and _reference_segment(tuple(head), path[0]) and _reference(rest, path[1:])


_GLOB_TOKENS = st.sampled_from(["a", "*", "a", "*", "b", "?", "[ab]", "[!a]"])
_GLOB_SEGMENTS = (
    st.lists(_GLOB_TOKENS, min_size=1, max_size=5)
    | st.just(["**"])
    | st.sampled_from([["a"], ["*"], ["a", "*"]])
)


@settings(max_examples=1500, deadline=None)
@example(pattern=[["*", "a", "*", "a"]], path=["aba"])  # a middle `*` must take the FIRST `a`
@example(pattern=[["**"], ["a"], ["**"], ["a"], ["b"]], path=["a", "a", "b"])  # and for `**`
@given(
    pattern=st.lists(_GLOB_SEGMENTS, min_size=1, max_size=5),
    path=st.lists(st.text("ab", min_size=1, max_size=4), min_size=1, max_size=6),
)
def test_globs_mean_what_naive_matching_means(pattern: list[list[str]], path: list[str]) -> None:
    collapsed: list[list[str]] = []
    for segment in pattern:
        # `**` and `*` `*` within a segment are one `*`; consecutive `**` segments are one.
        stars_merged = [t for i, t in enumerate(segment) if not (t == "*" == segment[i - 1] and i)]
        if not (segment == ["**"] and collapsed and collapsed[-1] == ["**"]):
            collapsed.append(stars_merged)
    text = "/".join("".join(segment) for segment in collapsed)
    expected = _reference(collapsed, path)
    assert compile_glob(text).matches("/".join(path)) is expected, text


def test_pathological_globs_stay_fast() -> None:
    """Without atomic groups these take exponential time; here they finish at once."""
    assert not compile_glob("*a*a*a*a*a*a*a*a*a*a*b").matches("a" * 300)
    assert not compile_glob("**/a/**/a/**/a/**/a/**/a/**/b").matches("/".join(["a"] * 300))


def test_glob_pruning_facts() -> None:
    matcher = compile_glob("src/pkg/*.py")
    assert matcher.literal_prefix == ("src", "pkg")
    assert matcher.max_depth == 3
    assert matcher.may_match_under("src")
    assert matcher.may_match_under("src/pkg")
    assert not matcher.may_match_under("docs")
    assert not matcher.may_match_under("src/pkg/deeper")
    assert compile_glob("**/*.py").max_depth is None
    assert compile_glob("{src,lib}/*.py").literal_prefix == ()


def test_normalize_glob() -> None:
    assert normalize_glob("*.py", "/src/") == ("/src", "*.py", "/src")
    assert normalize_glob("/src/*.py", "/src") == ("/", "src/*.py", "/src")
    assert normalize_glob("/", "/") == ("/", "**", "/")
    with pytest.raises(BackendError) as caught:
        normalize_glob("", "/")
    assert str(caught.value) == "The glob pattern must not be empty; try '**/*' for every file"


def test_brace_explosion_is_refused() -> None:
    with pytest.raises(BackendError) as caught:
        compile_glob("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")
    assert str(caught.value) == (
        "The glob pattern '{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}' expands to more than "
        "256 alternatives; use fewer brace groups"
    )


def test_file_filter() -> None:
    assert file_filter(None)("any/thing")
    by_name = file_filter("*.py")
    assert by_name("deep/in/x.py") and not by_name("x.pyc")
    by_path = file_filter("src/*.py")
    assert by_path("src/x.py") and not by_path("other/src/x.py")
