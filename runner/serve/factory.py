"""Graphs for a server: built from an agent file on first use, rebuilt when the file changes.

A server calls the factory at the start of each run (and to read a thread's state), with the
assistant's config: `configurable.vars` (a mapping) overrides the spec's template variables and
`configurable.model` (`provider:model`) replaces its model. Graphs are cached by (file, vars,
model) and rebuilt when the file's modification time changes, so an edited agent file takes
effect for new runs without a restart while runs already going keep the graph they started with.

The engine supplies the checkpointer and the store to each run; a graph is compiled without
them (an agent with a `store` backend is compiled against a placeholder store that runs never
see: the engine's store replaces it, and subagents use their parent run's).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import BuildError

__all__ = ["GraphFactory"]


@dataclass
class _Built:
    mtime_ns: int
    graph: Any
    resolved: Any


@dataclass
class GraphFactory:
    """Compiled graphs of agent files, cached by (file, mtime, vars, model)."""

    base_vars: Mapping[str, Any] = field(default_factory=dict)
    """Template variables every build gets (from `--var`); an assistant's `vars` override them."""
    builds: int = 0
    """How many graphs were compiled (a cache miss each)."""
    _cache: dict[tuple[str, str, str | None], _Built] = field(default_factory=dict)
    _retired: list[Any] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def graph(
        self,
        path: str | os.PathLike[str],
        *,
        vars: Mapping[str, Any] | None = None,
        model: str | None = None,
    ) -> Any:
        """The compiled graph of the agent file at `path` (blocking: call it off the loop)."""
        path = os.path.abspath(path)
        merged = {**self.base_vars, **(vars or {})}
        key = (path, json.dumps(merged, sort_keys=True, default=str), model)
        mtime = os.stat(path).st_mtime_ns
        with self._lock:
            built = self._cache.get(key)
            if built is not None and built.mtime_ns == mtime:
                return built.graph
            fresh = self._build(path, merged, model, mtime)
            if built is not None:
                # Runs that started on the old graph may still use its MCP sessions: they are
                # closed with the factory, not now.
                self._retired.append(built.resolved)
            self._cache[key] = fresh
            self.builds += 1
            return fresh.graph

    def _build(self, path: str, vars: dict[str, Any], model: str | None, mtime: int) -> _Built:
        from langgraph.store.memory import InMemoryStore

        from runner.build import build_graph
        from runner.loader import load_spec
        from runner.resolve import Resolver

        spec = load_spec(Path(path), vars=vars)
        resolved = Resolver(model=model).resolve(spec)
        try:
            store = InMemoryStore() if resolved.backend and resolved.backend.uses_store else None
            graph = build_graph(resolved, store=store)
        except BaseException:
            resolved.close()
            raise
        return _Built(mtime, graph, resolved)

    async def agraph(self, path: str | os.PathLike[str], config: Mapping[str, Any] | None) -> Any:
        """`graph` for a run's config, built in a worker thread (it reads files, may start MCP
        servers)."""
        configurable = (config or {}).get("configurable") or {}
        vars, model = configurable.get("vars"), configurable.get("model")
        if vars is not None and not isinstance(vars, Mapping):
            raise BuildError(f"assistant config `vars` must be a mapping, found {vars!r}")
        if model is not None and not isinstance(model, str):
            raise BuildError(
                f"assistant config `model` must be a `provider:model` string, found {model!r}"
            )
        return await asyncio.to_thread(self.graph, path, vars=vars, model=model)

    def close(self) -> None:
        """Close every MCP session the built agents opened."""
        with self._lock:
            for resolved in [*self._retired, *(b.resolved for b in self._cache.values())]:
                resolved.close()
            self._retired.clear()
            self._cache.clear()
