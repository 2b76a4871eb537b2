"""What the program does to start a command faster: the cyclic garbage collector held off, and
pydantic's plugin scan skipped when no distribution declares a plugin (`skip_empty_plugin_scan`).

Starting `agentctl run` imports LangChain and LangGraph and builds the agent: some 300,000
objects that live as long as the process, and next to no cyclic garbage. CPython's collector
does not know that: it examines the young objects every 2,000 allocations and the survivors
again every tenth time, about 60 ms of CPU over the import of `langchain.agents` alone, for
nothing it can free. So the program (`runner.cli.main`) holds the collector off for the commands
in `HELD`, and each of them calls `started()` once it has what it needs and begins the work
whose garbage can grow (the turns of a run, the files of a folder, the runs a server takes).
`started()` freezes what start-up made (moves it out of every later collection's sight: its few
cycles, if any, stay) and lets the collector run as before for the rest of the process. Each of
the collector's full collections examines every object not frozen: in a process that has loaded
LangChain and an agent, 130,000 objects and more, 50-80 ms, once every few dozen turns of a
long thread or runs of a server, in whichever it falls.

`main(argv)` called from Python (the tests) never holds it off.

The commands in `ENDS_ITSELF` end the program themselves once their work is done (`finish`):
the interpreter's teardown frees every object of every loaded module one by one, about 5 ms of
an `agentctl validate` of one file, for memory that goes back with the process anyway.
"""

from __future__ import annotations

import gc
import os
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

HELD = frozenset({"run", "validate", "serve", "mcp"})
"""The commands that call `started()` on every path to their work (and skip an empty plugin scan
before their first validator)."""

ENDS_ITSELF = frozenset({"validate"})
"""The commands after which the program ends at once (`finish`): nothing of theirs is left to
run at the interpreter's exit but its exit handlers, which `end` runs."""

_held = False
_ends_itself = False
_program = False
"""Whether this process is the `agentctl` program (`as_program()`), not a caller of `main(argv)`
(the tests): what it changes in a library then lasts only as long as the command."""


def as_program() -> None:
    """This process is the `agentctl` program: hold the collector off, and let
    `skip_empty_plugin_scan` leave pydantic's plugin loader unimported."""
    global _program, _ends_itself
    _program = True
    _ends_itself = False
    hold()


def command_found(name: str) -> None:
    """The program will run command `name` (no-op for a caller of `main(argv)`)."""
    global _ends_itself
    _ends_itself = _program and name in ENDS_ITSELF


def finish(status: object) -> None:
    """The program's command is over with `status` (what `sys.exit` is given): end the process
    now if the command is one of `ENDS_ITSELF` and no other thread is left to wait for (`end`);
    else move what the command made out of the collector's sight, so the interpreter skips its
    last full collection over every loaded module's objects (about 30 ms of a `validate`, more
    after a run), and return."""
    if _ends_itself and _alone():
        end(status)
    gc.freeze()


def when_imported(name: str, then: Callable[[types.ModuleType], object]) -> None:
    """Call `then(module)` once module `name` is imported: now if it is, else as soon as its
    code has run (`_WhenImported`)."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
    else:
        sys.meta_path.insert(0, _WhenImported(name, then))


class _WhenImported:
    """A finder first on `sys.meta_path` for one module `name`: when it is imported, the finder
    steps aside, lets the others find it, and has its loader call `then(module)` after running
    the module's code. Every other import passes it by."""

    def __init__(self, name: str, then: Callable[[types.ModuleType], object]) -> None:
        self.name = name
        self.then = then

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None:  # not found, or nothing to run: then it is too late
            return spec
        run, then = loader.exec_module, self.then

        def exec_module(module: types.ModuleType) -> None:
            run(module)
            then(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]  # (this spec's loader)
        return spec


def _alone() -> bool:
    """Whether no thread but this one would keep the interpreter from exiting."""
    import threading

    main = threading.main_thread()
    return all(t is main or t.daemon or not t.is_alive() for t in threading.enumerate())


def end(status: object) -> NoReturn:
    """End the process as `sys.exit(status)` would, without the interpreter's teardown.

    What the teardown does that matters is done here, in its order: the exit handlers run
    (`atexit`: logging's flush among them), then standard output and error are flushed; a
    status that is not a number is printed to standard error and exits 1, as Python does. A
    flush that fails exits 120, as Python's own does, and 141 if the reader left (a closed pipe:
    128 + SIGPIPE, as `agentctl` answers a `BrokenPipeError` anywhere else)."""
    import atexit

    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        print(status, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:
            code = 141
        except (OSError, ValueError):
            code = 120
    os._exit(code & 0xFF)


def hold(*, off_already: bool = False) -> None:
    """Hold the collector off until `started()`: no-op when it is off already, unless the
    program turned it off itself for this (`off_already`, `runner.program`)."""
    global _held
    if gc.isenabled() or off_already:
        gc.disable()
        _held = True


def started() -> None:
    """Start-up is over: freeze what it made and let the collector run again (no-op unless
    `hold()` turned it off)."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()


def started_within(seconds: float) -> None:
    """Call `started()` after `seconds` at the latest (from a daemon timer), for a command that
    sees its start from another thread (a server, once its port accepts connections) and
    might never see it: the collector is not left off for the life of the process."""
    if not _held:
        return
    import threading

    timer = threading.Timer(seconds, started)
    timer.daemon = True
    timer.start()


def skip_empty_plugin_scan() -> None:
    """Tell pydantic it has no plugins when no installed distribution declares any.

    Pydantic looks its plugins up once per process, at the first validator it builds: it imports
    `importlib.metadata` (about 6 ms, with `zipfile`, `email` and `tempfile`), then reads and
    parses the entry points of every installed distribution (`importlib.metadata.
    entry_points(group="pydantic")`, about 10 ms in an environment of 190 distributions), to find
    none in nearly all of them. `declares_pydantic_plugins` reads the same files and parses only
    those that mention `pydantic`. When it finds no `[pydantic]` section:

    - in the program (`as_program()`), pydantic's plugin loader is not imported at all:
      `_NoPlugins` stands in for it in `sys.modules`, answering what its scan would have found
      (no plugins; pydantic's own validators call nothing else of it: a test reads pydantic's
      source to hold that);
    - in a caller of `main(argv)`, or when pydantic's loader is imported already, its cache of
      plugins is set to what its scan would have found (none), unless it has looked already.

    When one may declare plugins, nothing changes: pydantic scans and loads them as before (and
    `PYDANTIC_DISABLE_PLUGINS` is read by pydantic at each build). The program calls this as a
    held command starts, before its first validator, so the paths read are those pydantic would
    read then.
    """
    import sys

    loader = sys.modules.get(_NoPlugins.NAME)
    if loader is not None and getattr(loader, "_plugins", None) is not None:
        return  # pydantic has looked (or been told) already
    if declares_pydantic_plugins(sys.path, sys.meta_path):
        return
    if loader is None and _program:
        import pydantic.plugin

        stand_in = _NoPlugins()
        sys.modules[_NoPlugins.NAME] = stand_in
        pydantic.plugin._loader = stand_in
        return
    from pydantic.plugin import _loader

    _loader._plugins = {}


class _NoPlugins(types.ModuleType):
    """What `pydantic.plugin._loader` answers in a process where no distribution declares a
    pydantic plugin: `get_plugins()` finds none, and its cache says it has looked."""

    NAME = "pydantic.plugin._loader"

    def __init__(self) -> None:
        super().__init__(self.NAME, self.__doc__)
        self.PYDANTIC_ENTRY_POINT_GROUP = "pydantic"
        self._plugins: dict[str, object] = {}
        self._loading_plugins = False

    @staticmethod
    def get_plugins() -> tuple[()]:
        return ()


def declares_pydantic_plugins(paths: Iterable[str], finders: Iterable[object]) -> bool:
    """Whether a distribution that `importlib.metadata` finds through `finders` on `paths` may
    declare an entry point in the `pydantic` group (True when this cannot tell).

    The rules are `importlib.metadata`'s: distributions are the `*.dist-info` and `*.egg-info`
    folders directly in each path folder (any case), found by the finders that have
    `find_distributions`; an entry point group is a line `[NAME]` of `entry_points.txt`, stripped,
    NAME being what is left after stripping the brackets. A finder other than the standard path
    finder, a path that is a file (a zip archive) or an `.egg`, or a file that cannot be read or
    decoded, answers True: pydantic's own scan decides then.
    """
    from importlib.machinery import PathFinder

    if any(
        getattr(finder, "find_distributions", None) is not None and finder is not PathFinder
        for finder in finders
    ):
        return True
    for path in paths:
        root = path or "."
        if os.path.basename(root).lower().endswith(".egg"):
            return True
        try:
            children = os.listdir(root)
        except NotADirectoryError:
            return True  # a zip archive: importlib.metadata reads inside it
        except OSError:
            continue  # no such folder: importlib.metadata finds nothing there either
        for child in children:
            if child.lower().endswith((".dist-info", ".egg-info")) and _declares(
                os.path.join(root, child, "entry_points.txt")
            ):
                return True
    return False


def _declares(entry_points: str) -> bool:
    """Whether an `entry_points.txt` has a `[pydantic]` section (True when it cannot be read)."""
    try:
        with open(entry_points, "rb") as file:
            data = file.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return False  # what importlib.metadata reads as no entry points
    except OSError:
        return True
    if b"pydantic" not in data:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]") and line.strip("[]") == "pydantic":
            return True
    return False
