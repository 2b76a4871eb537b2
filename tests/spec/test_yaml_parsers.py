"""libyaml and PyYAML's Python parser give agentctl the same document: values, positions and
problems for every YAML file in the repository; for damaged copies of them, whenever the Python
parser reads the text, libyaml reads the same values and problems, at the same positions except
the documented one (an empty value in a flow mapping)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.load import source as yamlsource
from runner.load.source import Document, Pos, read_yaml

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    p
    for folder in ("agents", "tests/data", "skills")
    for p in (ROOT / folder).rglob("*")
    if p.suffix in (".yaml", ".yml") and p.is_file()
)
ENV = {"HOME": "/home/me", "MODEL": "openai:gpt-4o"}

pytestmark = pytest.mark.skipif(
    yamlsource._FAST_LOADER is None, reason="PyYAML was built without libyaml"
)


def both(text: str) -> tuple[Document, Document]:
    fast = read_yaml(text, "spec.yaml", ENV)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(yamlsource, "_FAST_LOADER", None)
        slow = read_yaml(text, "spec.yaml", ENV)
    return fast, slow


def test_there_are_files_to_compare() -> None:
    assert len(FILES) > 100


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_document_from_both_parsers(path: Path) -> None:
    fast, slow = both(path.read_text(encoding="utf-8"))
    assert fast == slow


def test_errors_are_the_python_parsers() -> None:
    text = "name: a\nprompt: [unclosed\n"
    fast, slow = both(text)
    assert fast.problems == slow.problems
    assert fast.problems[0].message.startswith("YAML syntax error")


def same_positions(value: Any, fast: Pos, slow: Pos, at: str = "") -> None:
    """Equal position trees, except where the value is empty (libyaml places an empty value of
    a flow mapping at the token after it)."""
    if value is not None:
        assert fast.loc == slow.loc, at
    assert fast.key_locs == slow.key_locs, at
    assert fast.children.keys() == slow.children.keys(), at
    for key, child in fast.children.items():
        inner = value[key] if isinstance(value, dict | list) else None
        same_positions(inner, child, slow.children[key], f"{at}/{key}")


TEXTS = [p.read_text(encoding="utf-8") for p in FILES if p.stat().st_size < 4000]
DAMAGE = [
    *["", " ", "  ", "\t", ":", "- ", "'", '"', "{", "}", "[", "]", "#", "\n", "|", ">"],
    *["&a", "*a", "!", "? ", ",", "%", "@", "`", "\r\n", "\r", "\ufeff", "${X}", "{{ x }}"],
    *["\x85", "\u2028", "\u2029", "\x00", "\x7f", "\x1b", "é", "中文", "😀", "\ud800"],
    *["---\n", "...\n", "<<: ", "!!str ", "~", "\\"],
]


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(TEXTS),
    st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3), st.sampled_from(DAMAGE)), max_size=3),
)
def test_same_document_from_damaged_files(text: str, edits: list[tuple[float, int, str]]) -> None:
    for where, cut, insert in edits:
        at = int(where * len(text))
        text = text[:at] + insert + text[at + cut :]
    fast, slow = both(text)
    if slow.value is None and slow.problems:
        return  # the Python parser cannot read it; libyaml may (see `yamlsource.compose`)
    assert fast.value == slow.value
    assert fast.problems == slow.problems
    assert fast.failed_paths == slow.failed_paths
    same_positions(fast.value, fast.pos, slow.pos)
