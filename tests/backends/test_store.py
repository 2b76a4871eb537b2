"""The store backend: files in a LangGraph store namespace, paged listing, lenient reading."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.store.memory import InMemoryStore

from runner.backends import BackendError, StoreBackend
from runner.backends import store as store_module


def test_files_outlive_the_backend_and_are_stored_as_file_data() -> None:
    store = InMemoryStore()
    StoreBackend(store, ["memories"]).write("/notes/a.md", "remember this")
    later = StoreBackend(store, ("memories",))
    assert asyncio.run(later.aread("/notes/a.md")).content == "remember this"
    item = store.get(("memories",), "/notes/a.md")
    assert item is not None
    assert set(item.value) == {"content", "created_at", "modified_at"}
    assert StoreBackend(store, ("other",)).glob("**") == []


@pytest.mark.parametrize("run", ["sync", "async"])
def test_listing_pages_through_the_whole_namespace(
    run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "PAGE_SIZE", 3)
    store = InMemoryStore()
    backend = StoreBackend(store, ("files",))
    for n in range(10):
        backend.write(f"/d/f{n:02}.txt", f"needle {n}")
    if run == "sync":
        listed, globbed, grepped = backend.ls("/d"), backend.glob("**"), backend.grep("needle")
    else:
        listed = asyncio.run(backend.als("/d"))
        globbed = asyncio.run(backend.aglob("**"))
        grepped = asyncio.run(backend.agrep("needle"))
    expected = [f"/d/f{n:02}.txt" for n in range(10)]
    assert [i.path for i in listed] == expected
    assert [i.path for i in globbed] == expected
    assert [m.path for m in grepped] == expected


def test_child_namespaces_and_foreign_items_are_not_files() -> None:
    store = InMemoryStore()
    store.put(("files", "child"), "/child.txt", {"content": "x"})
    store.put(("files",), "not-a-path", {"content": "x"})
    store.put(("files",), "/no-content", {"other": 1})
    store.put(("files",), "/lines.md", {"content": ["line one", "line two"]})
    backend = StoreBackend(store, ("files",))
    assert [i.path for i in backend.ls("/")] == ["/lines.md"]
    read = backend.read("/lines.md")
    assert (read.content, read.total_lines) == ("line one\nline two", 2)
    info = backend.ls("/")[0]
    assert info.modified_at is not None and info.modified_at.endswith("+00:00")
    with pytest.raises(BackendError) as caught:
        backend.read("/no-content")
    assert str(caught.value) == "File not found: '/no-content'"


def test_a_write_checks_only_its_own_keys() -> None:
    """A write looks up its path and parents in one batch: it never lists the namespace."""

    class NoSearch(InMemoryStore):
        def search(self, *args: object, **kwargs: object) -> list:  # type: ignore[override]
            raise AssertionError("a write listed the namespace")

    store = NoSearch()
    backend = StoreBackend(store, ("files",))
    for n in range(50):
        backend.write(f"/a/b/f{n}.txt", "x")
    with pytest.raises(BackendError, match="already exists"):
        backend.write("/a/b/f1.txt", "x")
    with pytest.raises(BackendError) as caught:
        backend.write("/a/b/f1.txt/deeper", "x")
    assert str(caught.value) == (
        "Cannot create '/a/b/f1.txt/deeper': '/a/b/f1.txt' is a file, not a directory"
    )
    assert backend.edit("/a/b/f2.txt", "x", "y").occurrences == 1
