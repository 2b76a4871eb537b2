"""Where an agent's files live: the backends behind the file tools, and how a spec picks one.

A YAML `backend:` becomes a `BackendProvider` once, when the agent is resolved
(`provider_from_spec`). The file tools then ask it for the backend of each tool call
(`provider.get(state, store)`, or `await provider.aget(state, store)` on an event loop): the state
backend is made from the state that call sees, the store backend from the run's store, and
directory backends are made once and reused. A `root_dir` containing `{thread_id}` is one folder
per thread: the thread id of the run (its config's `thread_id`) fills it in, and each thread's
backend is made on its first call. Making a directory backend touches the disk (the folder is
created and opened), so `aget` does that in a worker thread and never blocks the loop. What the
rest of agentctl needs to know before any run (can the agent execute commands? does it need the
`files` state key?) is answered by the provider from the spec's types alone.

```
protocol.py     Backend / SandboxBackend, results, BackendError
paths.py        validate_path (the one path gate), glob patterns
state.py        files in graph state (+ merge_files)
files_channel.py  the `files` state key, kept as deltas (FilesState; imports LangGraph)
filesystem.py   a real directory, confined to root_dir in virtual mode
local_shell.py  filesystem + execute (sandbox, timeout, output cap, clean environment)
sandbox.py      the bubblewrap command line execute runs in, and whether this machine has it
store.py        a LangGraph BaseStore namespace
composite.py    a default backend plus prefix routes, can_execute
provider.py     BackendProvider: a spec's backend for each tool call (provider_from_spec)
reach.py        what of the host a backend spec reaches: its leaves by route, agent_path
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.backends.composite import CompositeBackend, can_execute
    from runner.backends.files_channel import FilesState
    from runner.backends.filesystem import FilesystemBackend
    from runner.backends.local_shell import LocalShellBackend
    from runner.backends.mounts import Mount
    from runner.backends.paths import validate_path
    from runner.backends.protocol import (
        Backend,
        BackendError,
        EditResult,
        ExecuteResult,
        FileData,
        FileInfo,
        GrepMatch,
        PathError,
        ReadResult,
        SandboxBackend,
        WriteResult,
    )
    from runner.backends.provider import (
        THREAD_PLACEHOLDER,
        BackendProvider,
        checked_backend,
        current_thread_id,
        protocol_gaps,
        provider_from_backend,
        provider_from_spec,
        scope_store_by_user,
        store_user_prefix,
        thread_root,
    )
    from runner.backends.state import StateBackend, merge_files
    from runner.backends.store import StoreBackend

_WHERE = {
    "Backend": "protocol",
    "BackendError": "protocol",
    "BackendProvider": "provider",
    "CompositeBackend": "composite",
    "EditResult": "protocol",
    "ExecuteResult": "protocol",
    "FileData": "protocol",
    "FileInfo": "protocol",
    "FilesState": "files_channel",
    "FilesystemBackend": "filesystem",
    "GrepMatch": "protocol",
    "LocalShellBackend": "local_shell",
    "Mount": "mounts",
    "PathError": "protocol",
    "ReadResult": "protocol",
    "SandboxBackend": "protocol",
    "StateBackend": "state",
    "StoreBackend": "store",
    "THREAD_PLACEHOLDER": "provider",
    "WriteResult": "protocol",
    "can_execute": "composite",
    "checked_backend": "provider",
    "current_thread_id": "provider",
    "merge_files": "state",
    "protocol_gaps": "provider",
    "provider_from_backend": "provider",
    "provider_from_spec": "provider",
    "scope_store_by_user": "provider",
    "store_user_prefix": "provider",
    "thread_root": "provider",
    "validate_path": "paths",
}
"""Where each name is defined: imported on first use, so that what needs one piece (a spec's
sandbox check in `validate`) does not load them all (the composite backend imports asyncio)."""


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'runner.backends' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"runner.backends.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "THREAD_PLACEHOLDER",
    "Backend",
    "BackendError",
    "BackendProvider",
    "CompositeBackend",
    "EditResult",
    "ExecuteResult",
    "FileData",
    "FileInfo",
    "FilesState",
    "FilesystemBackend",
    "GrepMatch",
    "LocalShellBackend",
    "Mount",
    "PathError",
    "ReadResult",
    "SandboxBackend",
    "StateBackend",
    "StoreBackend",
    "WriteResult",
    "can_execute",
    "checked_backend",
    "current_thread_id",
    "merge_files",
    "protocol_gaps",
    "provider_from_backend",
    "provider_from_spec",
    "scope_store_by_user",
    "store_user_prefix",
    "thread_root",
    "validate_path",
]
