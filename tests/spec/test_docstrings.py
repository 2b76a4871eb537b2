"""Field descriptions from attribute docstrings, kept beside the bytecode between processes
(`runner.spec.base._docstrings_in`)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import runner.spec
from runner.spec import base

SOURCE = '''
class Outer:
    size: int = 1
    """How big."""
    plain: str = ""

    class Inner:
        name: str
        """What it is called,
        on two lines."""
'''

FOUND = {
    "Outer": {"size": "How big."},
    "Outer.Inner": {"name": "What it is called,\non two lines."},
}


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "described.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    importlib.import_module("described")
    base._docstrings_in.cache_clear()
    yield "described"
    sys.modules.pop("described", None)
    base._docstrings_in.cache_clear()


def cache_of(module: str) -> Path:
    path = importlib.util.cache_from_source(sys.modules[module].__file__ or "")
    return Path(path).with_suffix(".docstrings")


def test_the_docstrings_are_read_once_and_then_from_the_cache(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert base._docstrings_in(module) == FOUND
    assert cache_of(module).exists()
    base._docstrings_in.cache_clear()
    monkeypatch.setattr(base, "_parse_docstrings", lambda path: pytest.fail("parsed again"))
    assert base._docstrings_in(module) == FOUND


def test_a_changed_source_is_read_again(module: str) -> None:
    assert base._docstrings_in(module) == FOUND
    source = Path(sys.modules[module].__file__ or "")
    source.write_text(SOURCE.replace("How big.", "How large."), encoding="utf-8")
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    base._docstrings_in.cache_clear()
    assert base._docstrings_in(module)["Outer"] == {"size": "How large."}


def test_without_a_writable_cache_the_source_is_parsed(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert base._docstrings_in(module) == FOUND
    assert not cache_of(module).exists()
    cache_of(module).parent.mkdir(exist_ok=True)
    for broken in (b"", b"\x00not marshal", b"i\x01\x00\x00\x00", b"\xfb\x0e"):
        cache_of(module).write_bytes(broken)  # a broken cache: parsed anew
        base._docstrings_in.cache_clear()
        assert base._docstrings_in(module) == FOUND


def test_the_spec_models_read_from_the_cache_what_a_parse_gives() -> None:
    modules = sorted(m for m in sys.modules if m.startswith("runner.spec."))
    assert "runner.spec.agent" in modules and runner.spec.AgentSpec.model_fields["name"].description
    for name in modules:
        path = sys.modules[name].__file__ or ""
        assert base._docstrings_in(name) == base._parse_docstrings(path), name
