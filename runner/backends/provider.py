"""How a spec picks a backend: `BackendProvider`, made once from the YAML `backend:` when the
agent is resolved (`provider_from_spec`), and asked for the backend of each tool call.

The state backend is made from the state that call sees, the store backend from the run's store,
and directory backends are made once and reused (one per thread where `root_dir` holds
`{thread_id}`). `runner.backends` re-exports the public names.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from runner.backends.composite import CompositeBackend
from runner.backends.filesystem import MEGABYTE, FilesystemBackend
from runner.backends.mounts import Mount, MountedBackend
from runner.backends.paths import validate_path
from runner.backends.protocol import Backend, BackendError, SandboxBackend
from runner.backends.reach import THREAD_PLACEHOLDER, agent_path, root_of
from runner.backends.state import PrefixedFiles, StateBackend
from runner.backends.store import StoreBackend
from runner.errors import BuildError
from runner.spec.backend import (
    CompositeBackendSpec,
    FilesystemBackendSpec,
    ImportBackendSpec,
    LocalShellBackendSpec,
    StateBackendSpec,
    StoreBackendSpec,
)

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from runner.spec.backend import BackendSpec


# Thread ids that may name a folder: no separators, no `.`/`..`, nothing a shell would mangle.
_FOLDER_SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
# Per-thread directory backends kept open (each holds a descriptor of its root).
_OPEN_THREAD_ROOTS = 128


def current_thread_id() -> str | None:
    """The thread id of the run this code runs in (its config's `thread_id`), if any."""
    from langchain_core.runnables.config import var_child_runnable_config

    config = var_child_runnable_config.get() or {}
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


_store_by_user = False


def scope_store_by_user(enabled: bool = True) -> None:
    """Give each user of a server with authentication a store of their own: a run's `store`
    backend then works under `(*store_user_prefix(user), *namespace)`, the user being the one
    the server authenticated for the run (the same prefix the server's store API puts before
    the namespaces a client names, so both see the same items). Off (the default, and
    `agentctl run`): namespaces are used as written."""
    global _store_by_user
    _store_by_user = enabled


def store_user_prefix(identity: str) -> tuple[str, str]:
    """Where `identity`'s store namespaces live: `("users", identity)`, as Aegra scopes its
    store API, with '%' and '.' percent-encoded (a namespace label may not hold a '.')."""
    return ("users", identity.replace("%", "%25").replace(".", "%2E"))


def current_store_owner() -> tuple[str, ...]:
    """The namespace prefix of the user the current run belongs to, when stores are scoped by
    user (else empty)."""
    if not _store_by_user:
        return ()
    from langchain_core.runnables.config import var_child_runnable_config

    configurable = (var_child_runnable_config.get() or {}).get("configurable") or {}
    user = configurable.get("langgraph_auth_user")
    if isinstance(user, Mapping):
        identity = user.get("identity")
    else:
        identity = getattr(user, "identity", None)
    identity = identity or configurable.get("langgraph_auth_user_id")
    if not identity:
        raise BackendError(
            "this server keeps a store per user, and this run has no authenticated user: "
            "the store backend is not available to it"
        )
    return store_user_prefix(str(identity))


def thread_root(root: str, thread: str) -> str:
    """`root` with `{thread_id}` filled in by `thread`, which must be able to name a folder."""
    if not _FOLDER_SAFE.fullmatch(thread):
        raise BackendError(
            f"thread id {thread!r} cannot name a folder for the backend root {root}: "
            "use letters, digits, '.', '_' and '-' only"
        )
    return root.replace(THREAD_PLACEHOLDER, thread)


class _Node:
    """One backend of the spec: how to make it for a tool call, and what is known in advance."""

    backend_type: type[Any]
    dynamic = False
    """True when the backend depends on the call's state or store (so it is made per call)."""

    def make(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        raise NotImplementedError

    def ready(self) -> bool:
        """Whether `make` returns without touching the disk (for the current thread)."""
        return True

    def describe(self) -> str:
        raise NotImplementedError


class _StateNode(_Node):
    backend_type = StateBackend
    dynamic = True

    def __init__(self, prefix: str = "/") -> None:
        self.prefix = prefix

    def make(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        files = (state or {}).get("files") or {}
        return StateBackend(files if self.prefix == "/" else PrefixedFiles(files, self.prefix))

    def describe(self) -> str:
        return "state (files in the thread's graph state)"


class _StoreNode(_Node):
    backend_type = StoreBackend
    dynamic = True

    def __init__(self, spec: StoreBackendSpec) -> None:
        for label in spec.namespace:
            if not label or "." in label:
                raise BuildError(
                    f"backend namespace label {label!r} is not usable by a LangGraph store: "
                    "labels must be non-empty and must not contain '.'"
                )
        self.namespace = tuple(spec.namespace)

    def make(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        if store is None:
            raise RuntimeError(
                f"the store backend (namespace {list(self.namespace)}) needs a LangGraph store, "
                "but this run has none: compile the graph with `store=` (for example an "
                "InMemoryStore)"
            )
        return StoreBackend(store, (*current_store_owner(), *self.namespace))

    def describe(self) -> str:
        return f"store (namespace {list(self.namespace)} in the LangGraph store; outlives threads)"


class _DirectoryNode(_Node):
    """filesystem and local_shell: made on first use (so `inspect` creates no directory), once,
    or once per thread when `root_dir` contains `{thread_id}`."""

    def __init__(self, spec: FilesystemBackendSpec | LocalShellBackendSpec) -> None:
        self.spec = spec
        self.root = root_of(spec)
        self.per_thread = THREAD_PLACEHOLDER in self.root
        self.backend_type: type[FilesystemBackend] = FilesystemBackend
        if isinstance(spec, LocalShellBackendSpec):  # (only then its module: start-up)
            from runner.backends.local_shell import LocalShellBackend

            self.backend_type = LocalShellBackend
        self._backends: OrderedDict[str | None, FilesystemBackend] = OrderedDict()
        self._lock = threading.Lock()

    def _key(self) -> str | None:
        return current_thread_id() if self.per_thread else None

    def ready(self) -> bool:
        return self._key() in self._backends

    def make(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        key = self._key()
        with self._lock:
            backend = self._backends.get(key)
            if backend is not None:
                self._backends.move_to_end(key)
                return backend
        backend = self._make(self._root_for(key))
        with self._lock:
            backend = self._backends.setdefault(key, backend)
            while len(self._backends) > _OPEN_THREAD_ROOTS:
                self._backends.popitem(last=False)
        return backend

    def _root_for(self, thread: str | None) -> str:
        if not self.per_thread:
            return self.root
        if thread is None:
            raise BackendError(
                f"the backend root {self.root} has one folder per thread, and this call runs "
                "outside any thread (no thread_id in its config)"
            )
        return thread_root(self.root, thread)

    def _make(self, root: str) -> FilesystemBackend:
        spec, size = self.spec, int(self.spec.max_file_size_mb * MEGABYTE)
        if isinstance(spec, LocalShellBackendSpec):
            from runner.backends.local_shell import LocalShellBackend

            return LocalShellBackend(
                root,
                virtual_mode=spec.virtual_mode,
                max_file_size_bytes=size,
                timeout=spec.timeout,
                max_timeout=max(spec.max_timeout, spec.timeout),
                max_output_bytes=spec.max_output_bytes,
                max_saved_output_bytes=spec.max_saved_output_bytes,
                env=spec.env,
                inherit_env=spec.inherit_env,
                sandbox=spec.sandbox,
                network=spec.network,
                read_only_paths=spec.read_only_paths,
                writable_paths=spec.writable_paths,
            )
        return FilesystemBackend(root, virtual_mode=spec.virtual_mode, max_file_size_bytes=size)

    def describe(self) -> str:
        spec = self.spec
        paths = "`/` is the root" if spec.virtual_mode else "host paths, NOT confined"
        where = f"{self.root} (one folder per thread)" if self.per_thread else self.root
        text = f"{spec.kind} at {where} ({paths}; reads up to {spec.max_file_size_mb:g} MB)"
        if isinstance(spec, LocalShellBackendSpec):
            from runner.backends.local_shell import ENV_ALLOWLIST

            if spec.inherit_env:
                env = "the runner's whole environment"
            else:
                env = "only " + ", ".join(ENV_ALLOWLIST)
            if spec.env:
                env += " + " + ", ".join(sorted(spec.env))
            text += (
                f"; execute: /bin/sh in the root, timeout {spec.timeout:g} s (a call may ask "
                f"for up to {max(spec.max_timeout, spec.timeout):g} s), output cap "
                f"{spec.max_output_bytes:,} bytes shown (head and tail), "
                f"{spec.max_saved_output_bytes:,} saved, environment: {env}; "
                f"sandbox: {self.sandbox()}"
            )
        return text

    def sandbox(self) -> str:
        """The sandbox `execute` gets on this machine, in words (for `inspect`)."""
        from runner.backends.sandbox import choose_sandbox

        spec = self.spec
        assert isinstance(spec, LocalShellBackendSpec)
        if spec.sandbox == "none":
            return "none (`sandbox: none`: commands run on the host with agentctl's rights)"
        kind, reason = choose_sandbox("auto")
        if kind == "none":
            return f"NONE, commands run on the host with agentctl's rights ({reason})"
        extras = [
            "network on" if spec.network else "no network",
            *(f"read-only {p}" for p in spec.read_only_paths),
            *(f"writable {p}" for p in spec.writable_paths),
        ]
        return f"bubblewrap (only the root writable, {', '.join(extras)})"

    def unsandboxed_because(self) -> str | None:
        """Why `execute` runs without the sandbox `sandbox: auto` asked for, or None."""
        from runner.backends.sandbox import choose_sandbox

        spec = self.spec
        if not isinstance(spec, LocalShellBackendSpec) or spec.sandbox != "auto":
            return None
        return choose_sandbox("auto")[1]


class _CompositeNode(_Node):
    backend_type = CompositeBackend

    def __init__(self, default: _Node, routes: dict[str, _Node]) -> None:
        self.default = default
        self.routes = routes
        self.dynamic = any(
            node.dynamic or getattr(node, "per_thread", False)
            for node in (default, *routes.values())
        )
        self._backend: CompositeBackend | None = None

    def make(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        if self._backend is not None:
            return self._backend
        backend = CompositeBackend(
            self.default.make(state, store),
            {prefix: node.make(state, store) for prefix, node in self.routes.items()},
        )
        if not self.dynamic:
            self._backend = backend
        return backend

    def ready(self) -> bool:
        return self._backend is not None or all(
            node.ready() for node in (self.default, *self.routes.values())
        )

    def describe(self) -> str:
        rows = [("/", self.default), *((p + "/", node) for p, node in self.routes.items())]
        width = max(len(prefix) for prefix, _ in rows)
        lines = [f"  {prefix:<{width}}  -> {node.describe()}" for prefix, node in rows]
        return "composite (the longest matching prefix wins)\n" + "\n".join(lines)


class _MountNode(_Node):
    backend_type = MountedBackend

    def __init__(self, mount: Mount) -> None:
        self.mount = mount
        self._backend: MountedBackend | None = None

    def make(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        if self._backend is None:
            self._backend = MountedBackend(self.mount)
        return self._backend

    def ready(self) -> bool:
        return self._backend is not None

    def describe(self) -> str:
        what = "read-only " if self.mount.read_only else ""
        files = f" (only {', '.join(sorted(self.mount.only))})" if self.mount.only else ""
        return f"{what}host folder {self.mount.host_dir}{files}"


class _ObjectNode(_Node):
    """A backend object made by the user's code (`backend: {import: ...}`, or passed to
    `build_agent`): used as it is for every call."""

    def __init__(self, backend: Backend, origin: str) -> None:
        self.backend = backend
        self.backend_type = type(backend)
        self.origin = origin

    def make(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        return self.backend

    def describe(self) -> str:
        shell = "; execute on it" if isinstance(self.backend, SandboxBackend) else ""
        return f"{type(self.backend).__qualname__} from {self.origin}{shell}"


def protocol_gaps(backend: Any) -> list[str]:
    """What `backend` lacks to be a backend: the protocol's methods it does not have, and a
    `grep` that takes no `regex`. Empty when it implements `Backend`."""
    import inspect

    gaps = [
        name for name in sorted(_PROTOCOL_METHODS) if not callable(getattr(backend, name, None))
    ]
    for name in ("grep", "agrep"):
        method = getattr(backend, name, None)
        if callable(method):
            try:
                parameters = inspect.signature(method).parameters
            except (TypeError, ValueError):
                continue
            takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
            if "regex" not in parameters and not takes_any:
                gaps.append(f"{name}(..., regex) parameter")
    return gaps


_PROTOCOL_METHODS = frozenset(
    name
    for name in dir(Backend)
    if not name.startswith("_") and callable(getattr(Backend, name, None))
)


def checked_backend(backend: Any, origin: str) -> Backend:
    """`backend` when it implements the protocol, else a BuildError naming what it lacks."""
    gaps = protocol_gaps(backend)
    if gaps:
        raise BuildError(
            f"{origin} gave {type(backend).__qualname__}, which is not a backend: it lacks "
            + ", ".join(gaps)
            + " (see runner.backends.protocol.Backend; with execute, SandboxBackend)"
        )
    return cast(Backend, backend)


def provider_from_backend(
    backend: Any, origin: str = "build_agent(backend=...)"
) -> BackendProvider:
    """The provider for a backend object (a remote sandbox, a backend of your own), checked."""
    return BackendProvider(_ObjectNode(checked_backend(backend, origin), origin))


def _leaf(spec: Any, prefix: str = "/", load: Any = None) -> _Node:
    if isinstance(spec, ImportBackendSpec):
        if load is None:
            raise BuildError(f"the backend {spec.import_} is made by Python code: resolve the spec")
        return _ObjectNode(checked_backend(load(spec), spec.import_), spec.import_)
    if isinstance(spec, StateBackendSpec):
        return _StateNode(prefix)
    if isinstance(spec, StoreBackendSpec):
        return _StoreNode(spec)
    if isinstance(spec, FilesystemBackendSpec | LocalShellBackendSpec):
        return _DirectoryNode(spec)
    raise TypeError(f"not a backend spec: {spec!r}")


class BackendProvider:
    """The backend of one agent, ready to hand out per tool call (see the module docstring)."""

    def __init__(self, node: _Node) -> None:
        self._node = node

    def get(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        """The backend for one tool call, given the state it sees and the run's store."""
        return self._node.make(state, store)

    async def aget(self, state: Mapping[str, Any] | None, store: BaseStore | None) -> Backend:
        """`get` for code on an event loop: a backend that still has to be made on disk (a
        directory backend's first call, in this thread) is made in a worker thread."""
        if self._node.ready():
            return self._node.make(state, store)
        return await asyncio.to_thread(self._node.make, state, store)

    @property
    def can_execute(self) -> bool:
        """Whether the agent gets `execute`: decided by the backend types (composite: default)."""
        node = self._node.default if isinstance(self._node, _CompositeNode) else self._node
        return issubclass(node.backend_type, SandboxBackend)

    @property
    def execute_timeouts(self) -> tuple[float, float] | None:
        """(default, longest a call may ask for) in seconds for `execute`, or None without it."""
        node = self._node.default if isinstance(self._node, _CompositeNode) else self._node
        if isinstance(node, _DirectoryNode) and isinstance(node.spec, LocalShellBackendSpec):
            return node.spec.timeout, max(node.spec.max_timeout, node.spec.timeout)
        return None

    def _leaves(self) -> list[_Node]:
        if isinstance(self._node, _CompositeNode):
            return [self._node.default, *self._node.routes.values()]
        return [self._node]

    @property
    def uses_state(self) -> bool:
        """Whether files live in graph state, so the agent's state needs `FilesState`."""
        return any(isinstance(node, _StateNode) for node in self._leaves())

    @property
    def shared_roots(self) -> list[str]:
        """Host folders of `filesystem`/`local_shell` backends that every thread shares (their
        `root_dir` has no `{thread_id}`)."""
        return [
            node.root
            for node in self._leaves()
            if isinstance(node, _DirectoryNode) and not node.per_thread
        ]

    @property
    def uses_store(self) -> bool:
        """Whether some files live in the LangGraph store, so the graph needs a store."""
        return any(isinstance(node, _StoreNode) for node in self._leaves())

    def unsandboxed_because(self) -> str | None:
        """Why this backend's `execute` runs without the sandbox `sandbox: auto` asked for (no
        working bubblewrap here), or None: sandboxed, opted out, or no `execute` at all."""
        node = self._node.default if isinstance(self._node, _CompositeNode) else self._node
        return node.unsandboxed_because() if isinstance(node, _DirectoryNode) else None

    def describe(self) -> str:
        """A short description for `agentctl inspect` (composite: one line per route)."""
        return self._node.describe()

    def with_mounts(self, mounts: list[Mount]) -> BackendProvider:
        """This backend plus host folders mounted as routes (skills, memory files)."""
        if not mounts:
            return self
        if isinstance(self._node, _CompositeNode):
            default, routes = self._node.default, dict(self._node.routes)
        else:
            default, routes = self._node, {}
        for mount in mounts:
            prefix = validate_path(mount.prefix)
            if prefix in routes:
                raise BuildError(f"{mount.prefix!r} is already a route of this agent's backend")
            routes[prefix] = _MountNode(mount)
        return BackendProvider(_CompositeNode(default, routes))

    @property
    def route_prefixes(self) -> list[str]:
        """The composite routes (normalised, without a trailing slash); empty otherwise."""
        return list(self._node.routes) if isinstance(self._node, _CompositeNode) else []

    def host_path(self, path: str) -> str | None:
        """The agent path under which a host file is reachable through a directory backend
        (default or route) in virtual mode, or None (`runner.backends.reach.agent_path`; a
        backend with host paths, `virtual_mode: false`, or a mount does not count: the caller
        mounts the file instead)."""
        if isinstance(self._node, _CompositeNode):
            pairs = [("/", self._node.default), *self._node.routes.items()]
        else:
            pairs = [("/", self._node)]
        routes = [(p, n.spec if isinstance(n, _DirectoryNode) else None) for p, n in pairs]
        return agent_path(path, routes, host_paths=False)

    def __repr__(self) -> str:
        return f"BackendProvider({self.describe()!r})"


def provider_from_spec(spec: BackendSpec | None, load: Any = None) -> BackendProvider:
    """The provider for a spec's `backend:` (None means `state`, the default); `load` makes the
    object of an `import` backend from its spec (the resolver imports and calls the factory).

    `root_dir` is normally absolute already (the loader resolves it against the spec file); a
    relative one is taken relative to the current directory. Route prefixes are normalised
    (`/memories/` and `/memories` are the same route).
    """
    if spec is None:
        return BackendProvider(_StateNode())
    if isinstance(spec, CompositeBackendSpec):
        routes: dict[str, _Node] = {}
        for prefix, route_spec in spec.routes.items():
            normal = validate_path(prefix)
            if normal == "/":
                raise BuildError("a composite backend route cannot be '/'; use `default` for it")
            if normal in routes:
                raise BuildError(f"composite backend routes name {normal + '/'!r} twice")
            routes[normal] = _leaf(route_spec, normal, load)
        return BackendProvider(_CompositeNode(_leaf(spec.default, "/", load), routes))
    return BackendProvider(_leaf(spec, "/", load))
