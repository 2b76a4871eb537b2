"""What of the host a backend spec reaches: the one reader of a spec's routes and directory roots.

`leaves` lists a spec's backends by route; `agent_path` finds the agent path under which a host
file or folder is reachable through them. The harness (memory files and skills folders outside
the backend are mounted instead), the local context (where the agent sees the current folder) and
the web page's file routes all use these, so they agree on routes, roots and `~`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from runner.backends.paths import is_within, validate_path
from runner.spec.backend import CompositeBackendSpec

__all__ = ["THREAD_PLACEHOLDER", "agent_path", "leaves", "root_of"]

THREAD_PLACEHOLDER = "{thread_id}"
"""In a `root_dir`: replaced by the run's thread id, so each thread gets its own folder."""


def leaves(spec: Any) -> list[tuple[str, Any]]:
    """(route prefix in normal form, `/skills`; leaf backend spec, None for the default `state`)
    of a spec's `backend:`, the default at `/` first."""
    if spec is None:
        return [("/", None)]
    if isinstance(spec, CompositeBackendSpec):
        routes = [(validate_path(prefix), leaf) for prefix, leaf in spec.routes.items()]
        return [("/", spec.default), *routes]
    return [("/", spec)]


def root_of(leaf: Any) -> str:
    """A directory leaf's `root_dir` as the backend uses it: `~` expanded, made absolute."""
    return os.path.abspath(os.path.expanduser(leaf.root_dir))


def agent_path(
    host: str | os.PathLike[str], routes: Iterable[tuple[str, Any]], *, host_paths: bool
) -> str | None:
    """The agent path under which the host file or folder `host` is reachable through the
    directory leaves (`filesystem`, `local_shell`) of `routes` (as `leaves` lists them), or None.

    Routes are tried longest first, then the default, as the agent's paths are routed (a path of
    the default under a route's prefix is hidden by the route, so it does not count). A leaf
    in virtual mode reaches what is under its root (symlinks resolved on both sides), not a root
    per thread (which thread's?). A leaf with `virtual_mode: false` takes host paths as they
    are: with `host_paths` it reaches every host path as itself (under its route's prefix), without
    it none (a caller that would rather mount the folder)."""
    target = os.path.realpath(host)
    by_length = sorted(routes, key=lambda route: -len(route[0]) if route[0] != "/" else 1)
    prefixes = [prefix for prefix, _ in by_length if prefix != "/"]
    for prefix, leaf in by_length:
        if getattr(leaf, "kind", None) not in ("filesystem", "local_shell"):
            continue
        if not leaf.virtual_mode:
            if not host_paths:
                continue
            inner = os.fspath(host)
        else:
            root = root_of(leaf)
            if THREAD_PLACEHOLDER in root:
                continue
            root = os.path.realpath(root)
            if target != root and not target.startswith(root.rstrip(os.sep) + os.sep):
                continue
            relative = os.path.relpath(target, root).replace(os.sep, "/")
            inner = "/" if relative == "." else "/" + relative
        if prefix == "/":
            if any(is_within(inner, route) for route in prefixes):
                continue  # a route hides this path of the default from the agent
            return inner
        return prefix.rstrip("/") + ("" if inner == "/" else inner)
    return None
