"""`provider_from_spec`: every backend kind from its spec, static facts, per-call backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

import runner
from runner.backends import (
    CompositeBackend,
    FilesystemBackend,
    LocalShellBackend,
    StateBackend,
    StoreBackend,
    can_execute,
    merge_files,
    provider_from_spec,
)
from runner.check.validate import find_specs
from runner.errors import BuildError
from runner.spec import (
    CompositeBackendSpec,
    FilesystemBackendSpec,
    LocalShellBackendSpec,
    StateBackendSpec,
    StoreBackendSpec,
)


def test_no_backend_means_state() -> None:
    provider = provider_from_spec(None)
    assert (provider.can_execute, provider.uses_state) == (False, True)
    assert provider.describe() == "state (files in the thread's graph state)"
    files = {"/a.txt": {"content": "from state", "created_at": "t", "modified_at": "t"}}
    backend = provider.get({"files": files}, None)
    assert isinstance(backend, StateBackend)
    assert backend.read("/a.txt").content == "from state"
    assert provider.get(None, None).ls("/") == []
    assert provider_from_spec(StateBackendSpec(kind="state")).uses_state


def test_filesystem_is_made_once_on_first_use(tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    provider = provider_from_spec(
        FilesystemBackendSpec(kind="filesystem", root_dir=str(root), max_file_size_mb=2)
    )
    assert provider.describe() == f"filesystem at {root} (`/` is the root; reads up to 2 MB)"
    assert not root.exists()  # describing (agentctl inspect) creates nothing
    backend = provider.get(None, None)
    assert isinstance(backend, FilesystemBackend) and not isinstance(backend, LocalShellBackend)
    assert backend is provider.get({"files": {}}, None)
    assert root.is_dir()
    assert backend.max_file_size == 2 * 1024 * 1024
    assert (provider.can_execute, provider.uses_state) == (False, False)


def test_relative_root_dir_is_taken_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = FilesystemBackendSpec(kind="filesystem", root_dir="./ws/../ws/files", virtual_mode=False)
    provider = provider_from_spec(spec)
    assert str(tmp_path / "ws" / "files") in provider.describe()
    assert "host paths, NOT confined" in provider.describe()
    backend = provider.get(None, None)
    assert isinstance(backend, FilesystemBackend)
    assert backend.root == str((tmp_path / "ws" / "files").resolve())
    assert not backend.virtual_mode


def test_store_needs_the_runs_store() -> None:
    provider = provider_from_spec(StoreBackendSpec(kind="store", namespace=["team", "memories"]))
    assert (provider.can_execute, provider.uses_state, provider.uses_store) == (False, False, True)
    assert provider.describe() == (
        "store (namespace ['team', 'memories'] in the LangGraph store; outlives threads)"
    )
    store = InMemoryStore()
    backend = provider.get(None, store)
    assert isinstance(backend, StoreBackend)
    assert backend.namespace == ("team", "memories")
    with pytest.raises(RuntimeError) as caught:
        provider.get(None, None)
    assert str(caught.value) == (
        "the store backend (namespace ['team', 'memories']) needs a LangGraph store, but this "
        "run has none: compile the graph with `store=` (for example an InMemoryStore)"
    )
    with pytest.raises(BuildError) as build_error:
        provider_from_spec(StoreBackendSpec(kind="store", namespace=["a.b"]))
    assert str(build_error.value) == (
        "backend namespace label 'a.b' is not usable by a LangGraph store: labels must be "
        "non-empty and must not contain '.'"
    )


def test_local_shell_forwards_its_settings(tmp_path: Path) -> None:
    spec = LocalShellBackendSpec(
        kind="local_shell",
        root_dir=str(tmp_path / "code"),
        timeout=5,
        max_output_bytes=1234,
        env={"SECRET_FLAG": "value-not-shown"},
    )
    provider = provider_from_spec(spec)
    assert provider.can_execute
    description = provider.describe()
    assert "timeout 5 s (a call may ask for up to 3600 s), output cap 1,234 bytes" in description
    assert "SECRET_FLAG" in description and "value-not-shown" not in description
    assert "only PATH, HOME" in description
    backend = provider.get(None, None)
    assert isinstance(backend, LocalShellBackend)
    assert (backend.timeout, backend.max_output_bytes, backend.env) == (
        5,
        1234,
        {"SECRET_FLAG": "value-not-shown"},
    )
    assert backend.execute("echo $SECRET_FLAG").output == "value-not-shown\n"


def test_composite_routes_and_static_facts(tmp_path: Path) -> None:
    spec = CompositeBackendSpec.model_validate(
        {
            "kind": "composite",
            "default": {"kind": "local_shell", "root_dir": str(tmp_path / "ws"), "sandbox": "none"},
            "routes": {"/memories/": "store", "/scratch/": {"kind": "state"}},
        }
    )
    provider = provider_from_spec(spec)
    assert (provider.can_execute, provider.uses_state, provider.uses_store) == (True, True, True)
    assert provider.describe().splitlines() == [
        "composite (the longest matching prefix wins)",
        f"  /           -> local_shell at {tmp_path / 'ws'} (`/` is the root; reads up to 10 MB); "
        "execute: /bin/sh in the root, timeout 120 s (a call may ask for up to 3600 s), output "
        "cap 100,000 bytes shown (head and tail), 10,000,000 saved, environment: only PATH, HOME, LANG, LC_ALL, TERM, TZ, USER, SHELL, "
        "TMPDIR; sandbox: none (`sandbox: none`: commands run on the host with agentctl's rights)",
        "  /memories/  -> store (namespace ['files'] in the LangGraph store; outlives threads)",
        "  /scratch/   -> state (files in the thread's graph state)",
    ]
    state: dict[str, Any] = {"files": {}}
    store = InMemoryStore()
    backend = provider.get(state, store)
    assert isinstance(backend, CompositeBackend)
    assert can_execute(backend)
    written = backend.write("/scratch/a.txt", "in state")
    assert list(written.files_update or {}) == ["/scratch/a.txt"]
    state["files"] = merge_files(state["files"], written.files_update)
    backend.write("/memories/m.md", "in the store")
    fresh = provider.get(state, store)
    assert fresh is not backend  # state parts are made per call
    assert fresh.read("/scratch/a.txt").content == "in state"
    assert fresh.read("/memories/m.md").content == "in the store"
    assert [i.path for i in fresh.ls("/")] == ["/memories", "/scratch"]


def test_composite_without_state_or_store_is_made_once(tmp_path: Path) -> None:
    spec = CompositeBackendSpec.model_validate(
        {
            "kind": "composite",
            "default": "state",
            "routes": {"/docs/": {"kind": "filesystem", "root_dir": str(tmp_path)}},
        }
    )
    assert not provider_from_spec(spec).can_execute
    static = CompositeBackendSpec.model_validate(
        {
            "kind": "composite",
            "default": {"kind": "filesystem", "root_dir": str(tmp_path / "a")},
            "routes": {"/b/": {"kind": "filesystem", "root_dir": str(tmp_path / "b")}},
        }
    )
    provider = provider_from_spec(static)
    assert provider.get(None, None) is provider.get(None, None)
    assert not provider.uses_state and not provider.uses_store


def test_from_a_yaml_file_root_dir_is_relative_to_the_spec(tmp_path: Path) -> None:
    agent = tmp_path / "agents" / "a.yaml"
    agent.parent.mkdir()
    agent.write_text(
        "version: 1\n"
        "name: a\n"
        "model: anthropic:claude-haiku-4-5\n"
        "prompt: hi\n"
        "backend:\n"
        "  kind: composite\n"
        "  default: {kind: filesystem, root_dir: ./workspace}\n"
        "  routes:\n"
        "    /memories/: {kind: store, namespace: [a, memories]}\n"
    )
    spec = runner.load_spec(agent)
    provider = provider_from_spec(spec.backend)
    assert f"filesystem at {tmp_path / 'agents' / 'workspace'} " in provider.describe()
    backend = provider.get(None, InMemoryStore())
    backend.write("/hello.txt", "hi")
    assert (tmp_path / "agents" / "workspace" / "hello.txt").read_text() == "hi"


@pytest.mark.parametrize(
    "path", [p for p, _ in find_specs([Path(__file__).parents[2] / "agents"])], ids=lambda p: p.name
)
def test_every_example_agent_has_a_backend(path: Path) -> None:
    provider = provider_from_spec(runner.load_spec(path, require_inputs=False).backend)
    assert provider.describe()


def test_the_description_names_the_sandbox_in_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.backends import sandbox

    spec = LocalShellBackendSpec.model_validate(
        {
            "kind": "local_shell",
            "root_dir": str(tmp_path),
            "network": True,
            "writable_paths": ["/srv/cache"],
        }
    )
    monkeypatch.setattr(sandbox, "bubblewrap_problem", lambda: None)
    assert (
        provider_from_spec(spec)
        .describe()
        .endswith("; sandbox: bubblewrap (only the root writable, network on, writable /srv/cache)")
    )
    assert provider_from_spec(spec).unsandboxed_because() is None
    monkeypatch.setattr(sandbox, "bubblewrap_problem", lambda: "`bwrap` not found on PATH")
    assert (
        provider_from_spec(spec)
        .describe()
        .endswith(
            "; sandbox: NONE, commands run on the host with agentctl's rights "
            "(`bwrap` not found on PATH)"
        )
    )
    assert provider_from_spec(spec).unsandboxed_because() == "`bwrap` not found on PATH"


def _leave(token: Any) -> None:
    from langchain_core.runnables.config import var_child_runnable_config

    var_child_runnable_config.reset(token)


def _in_thread(thread: str | None) -> Any:
    from langchain_core.runnables.config import var_child_runnable_config

    return var_child_runnable_config.set({"configurable": {"thread_id": thread}} if thread else {})


def test_a_thread_id_in_root_dir_gives_each_thread_its_own_folder(tmp_path: Path) -> None:
    from runner.backends import BackendError

    template = tmp_path / "ws" / "{thread_id}"
    provider = provider_from_spec(FilesystemBackendSpec(kind="filesystem", root_dir=str(template)))
    assert provider.describe() == (
        f"filesystem at {template} (one folder per thread) (`/` is the root; reads up to 10 MB)"
    )
    assert provider.shared_roots == []
    backends = {}
    for thread in ("a-1", "b.2", "a-1"):
        token = _in_thread(thread)
        try:
            backend = provider.get(None, None)
            if thread not in backends:
                backends[thread] = backend
                backend.write(f"/{thread}.txt", thread)
            assert backend is backends[thread]
        finally:
            _leave(token)
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["a-1", "b.2"]
    assert (tmp_path / "ws" / "b.2" / "b.2.txt").read_text() == "b.2"
    for thread, error in (
        (None, "this call runs outside any thread"),
        ("../up", "cannot name a folder"),
        ("..", "cannot name a folder"),
    ):
        token = _in_thread(thread)
        try:
            with pytest.raises(BackendError, match=error):
                provider.get(None, None)
        finally:
            _leave(token)
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["a-1", "b.2"]


def test_shared_roots_name_the_folders_every_thread_shares(tmp_path: Path) -> None:
    spec = CompositeBackendSpec(
        kind="composite",
        default=LocalShellBackendSpec(kind="local_shell", root_dir=str(tmp_path / "shared")),
        routes={
            "/mine/": FilesystemBackendSpec(
                kind="filesystem", root_dir=str(tmp_path / "{thread_id}")
            ),
            "/memories/": StoreBackendSpec(kind="store"),
        },
    )
    assert provider_from_spec(spec).shared_roots == [str(tmp_path / "shared")]
    assert provider_from_spec(None).shared_roots == []


async def test_aget_makes_a_directory_backend_off_the_loop(tmp_path: Path) -> None:
    import threading

    provider = provider_from_spec(
        FilesystemBackendSpec(kind="filesystem", root_dir=str(tmp_path / "w"))
    )
    made_in: list[threading.Thread] = []
    original = FilesystemBackend.__init__

    def spy(self: Any, *args: Any, **kwargs: Any) -> None:
        made_in.append(threading.current_thread())
        original(self, *args, **kwargs)

    FilesystemBackend.__init__ = spy  # type: ignore[method-assign]
    try:
        first = await provider.aget(None, None)
        again = await provider.aget(None, None)
    finally:
        FilesystemBackend.__init__ = original  # type: ignore[method-assign]
    assert first is again and len(made_in) == 1
    assert made_in[0] is not threading.main_thread()
