"""Fixtures for the backend tests: every backend behind one `Subject`, sync or async.

A `Subject` calls a backend the way the file tools will: a fresh backend per call (so the state
backend sees the current state), the sync method or its async twin, and any `files_update` merged
into the state with the real reducer, as LangGraph would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runner.backends import (
    Backend,
    CompositeBackend,
    FilesystemBackend,
    LocalShellBackend,
    StateBackend,
    StoreBackend,
    merge_files,
)
from runner.backends.paths import join_path
from runner.backends.state import PrefixedFiles


@dataclass
class Subject:
    """One backend under test, called sync or async, working under the directory `base`."""

    name: str
    make: Callable[[], Backend]
    mode: str
    base: str = "/"
    state: dict[str, Any] = field(default_factory=lambda: {"files": {}})
    loop: asyncio.AbstractEventLoop | None = None

    @property
    def in_state(self) -> bool:
        """Whether the files under `base` live in graph state (writes return `files_update`)."""
        return self.name in ("state", "composite-route")

    def p(self, relative: str) -> str:
        """The agent path of `relative` under this subject's base."""
        return join_path(self.base, relative)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        backend = self.make()
        if self.mode == "sync":
            result = getattr(backend, method)(*args, **kwargs)
        else:
            assert self.loop is not None
            result = self.loop.run_until_complete(getattr(backend, "a" + method)(*args, **kwargs))
        update = getattr(result, "files_update", None)
        if update:
            self.state["files"] = merge_files(self.state["files"], update)
        return result


SUBJECTS = [
    "state",
    "filesystem",
    "filesystem-python",
    "store",
    "local_shell",
    "composite",
    "composite-route",
]


def make_subject(name: str, mode: str, tmp_path: Path) -> Subject:
    from langgraph.store.memory import InMemoryStore

    subject = Subject(name, lambda: StateBackend(), mode)
    state = subject.state
    if name == "state":
        subject.make = lambda: StateBackend(state["files"])
    elif name in ("filesystem", "filesystem-python"):
        fs = FilesystemBackend(tmp_path / "root", ripgrep=name == "filesystem")
        subject.make = lambda: fs
    elif name == "store":
        store = InMemoryStore()
        subject.make = lambda: StoreBackend(store, ("files",))
    elif name == "local_shell":
        shell = LocalShellBackend(tmp_path / "root")
        subject.make = lambda: shell
    else:
        default = FilesystemBackend(tmp_path / "root")
        store = InMemoryStore()
        subject.make = lambda: CompositeBackend(
            default,
            {
                "/routed/": StateBackend(PrefixedFiles(state["files"], "/routed")),
                "/mem/": StoreBackend(store, ("memories",)),
            },
        )
        subject.base = "/routed" if name == "composite-route" else "/"
    return subject


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=SUBJECTS)
def subject(request: pytest.FixtureRequest, mode: str, tmp_path: Path) -> Iterator[Subject]:
    subject = make_subject(str(request.param), mode, tmp_path)
    if mode == "async":
        subject.loop = asyncio.new_event_loop()
    try:
        yield subject
    finally:
        if subject.loop is not None:
            subject.loop.close()
