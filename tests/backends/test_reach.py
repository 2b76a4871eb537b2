"""`runner.backends.reach`: the one reader of what of the host a backend spec reaches."""

from __future__ import annotations

from pathlib import Path

from runner.backends import provider_from_spec
from runner.backends.reach import agent_path, leaves
from runner.spec.backend import CompositeBackendSpec, FilesystemBackendSpec, StateBackendSpec


def folder(root: Path | str, **options: object) -> FilesystemBackendSpec:
    return FilesystemBackendSpec(kind="filesystem", root_dir=str(root), **options)


def test_a_route_wins_over_the_default_that_also_reaches_the_file(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    spec = CompositeBackendSpec(
        kind="composite", default=folder(tmp_path), routes={"/notes/": folder(tmp_path / "notes")}
    )
    note = tmp_path / "notes" / "a.md"
    assert agent_path(note, leaves(spec), host_paths=False) == "/notes/a.md"
    assert provider_from_spec(spec).host_path(str(note)) == "/notes/a.md"
    assert agent_path(tmp_path / "top.md", leaves(spec), host_paths=False) == "/top.md"


def test_a_path_of_the_default_that_a_route_hides_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "other").mkdir()
    spec = CompositeBackendSpec(
        kind="composite",
        default=folder(tmp_path),
        routes={"/notes/": folder(tmp_path / "other"), "/n/": folder(tmp_path / "notes")},
    )
    note = tmp_path / "notes" / "a.md"
    assert agent_path(note, leaves(spec), host_paths=False) == "/n/a.md"
    assert provider_from_spec(spec).host_path(str(note)) == "/n/a.md"
    hidden = CompositeBackendSpec(
        kind="composite", default=folder(tmp_path), routes={"/notes/": folder(tmp_path / "other")}
    )
    assert agent_path(note, leaves(hidden), host_paths=False) is None


def test_a_dotfile_at_the_root_keeps_its_dot(tmp_path: Path) -> None:
    assert agent_path(tmp_path / ".env", leaves(folder(tmp_path)), host_paths=False) == "/.env"
    assert agent_path(tmp_path, leaves(folder(tmp_path)), host_paths=False) == "/"


def test_host_paths_count_only_when_the_caller_says_so(tmp_path: Path) -> None:
    spec = folder(tmp_path / "elsewhere", virtual_mode=False)
    assert agent_path(tmp_path, leaves(spec), host_paths=True) == str(tmp_path)
    assert agent_path(tmp_path, leaves(spec), host_paths=False) is None
    assert provider_from_spec(spec).host_path(str(tmp_path)) is None


def test_a_root_per_thread_and_state_reach_nothing(tmp_path: Path) -> None:
    per_thread = folder(str(tmp_path) + "/{thread_id}")
    assert agent_path(tmp_path / "x", leaves(per_thread), host_paths=True) is None
    assert agent_path(tmp_path, leaves(StateBackendSpec(kind="state")), host_paths=True) is None
    assert agent_path(tmp_path, leaves(None), host_paths=True) is None
