"""Python objects named in a spec: `package.module:name` or `path/to/file.py:name`.

Importing runs the module's code, as `python -c "import package.module"` would: a spec is trusted
like the code next to it. No key in the YAML can switch off a safety setting of the runner.

A tool entry resolves by what the name is:
- a LangChain `BaseTool` (e.g. made with `@tool`): used as it is;
- a `BaseTool` subclass: instantiated with `args`;
- with `args:` (use `args: {}` for none), a factory: called with them; it returns a tool, a
  function, or a list of those;
- a plain function: a tool named after it, its docstring as the description, its type hints as
  the argument schema.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from runner.errors import Problem, ResolutionError
from runner.spec import ImportTool, import_ref_is_file

Locate = Callable[[str], Problem]


def _fail(locate: Locate, message: str) -> ResolutionError:
    return ResolutionError.at(locate(message))


_LOADING = threading.RLock()
"""Held while a file module is imported: the module is in `sys.modules` before its code has run
(so it can import itself), and a server builds graphs in several threads at once, one of which
would otherwise take the half-run module and miss its names."""


def _load_file_module(path: Path, locate: Locate) -> Any:
    if not path.is_file():
        raise _fail(locate, f"no such Python file: {path}")
    name = "agentctl_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12] + "_" + path.stem
    with _LOADING:
        return _load_module(name, path, locate)


def _load_module(name: str, path: Path, locate: Locate) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise _fail(locate, f"cannot import {path}: not a Python module")
    module = importlib.util.module_from_spec(module_spec)
    # Let the file import its neighbours, as a script in that folder could.
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise _fail(locate, f"importing {path} raised {type(exc).__name__}: {exc}") from None
    return module


def import_object(ref: str, locate: Locate) -> Any:
    """The object `ref` names; a located ResolutionError when it cannot be found."""
    target, _, attr_path = ref.rpartition(":")
    if import_ref_is_file(ref):
        module = _load_file_module(Path(target), locate)
        shown = target
    else:
        shown = target
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            missing = exc.name or target
            hint = "" if missing != target else " (is the package installed in this environment?)"
            raise _fail(
                locate, f"cannot import {target!r}: no module named {missing!r}{hint}"
            ) from None
        except Exception as exc:
            raise _fail(
                locate, f"importing {target!r} raised {type(exc).__name__}: {exc}"
            ) from None
    obj: Any = module
    walked = []
    for part in attr_path.split("."):
        walked.append(part)
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _fail(locate, f"{shown} has no attribute {'.'.join(walked)!r}{hint}")
        obj = getattr(obj, part)
    return obj


def _as_tool(obj: Any, ref: str, locate: Locate, description: str | None) -> BaseTool:
    if isinstance(obj, BaseTool):
        return obj
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
        if not (description or inspect.getdoc(obj)):
            raise _fail(
                locate,
                f"{ref} has no docstring; a tool needs a description: add a docstring, "
                "or `description:` next to `import:`",
            )
        try:
            return StructuredTool.from_function(obj, description=description)
        except Exception as exc:
            raise _fail(locate, f"cannot make a tool of {ref}: {exc}") from None
    raise _fail(
        locate,
        f"{ref} is {type(obj).__name__}, not a tool: expected a LangChain tool, a typed function, "
        "or a factory (with `args:`) returning tools",
    )


def call_imported(obj: Any, ref: str, args: dict[str, Any] | None, locate: Locate) -> Any:
    """`obj(**args)` for a class or factory named in a spec; its failure is located there."""
    try:
        return obj(**(args or {}))
    except Exception as exc:
        raise _fail(locate, f"{ref}({_args(args)}) raised {type(exc).__name__}: {exc}") from None


def tools_from_import(entry: ImportTool, locate: Locate) -> list[BaseTool]:
    """The tools one `import:` entry gives, with the entry's overrides applied."""
    ref = entry.import_
    obj = import_object(ref, locate)
    if isinstance(obj, type) and issubclass(obj, BaseTool):
        obj = call_imported(obj, ref, entry.args, locate)
    elif entry.args is not None:
        if isinstance(obj, BaseTool) or not callable(obj):
            raise _fail(
                locate, f"`args:` given, but {ref} is not a factory (a callable returning tools)"
            )
        obj = call_imported(obj, ref, entry.args, locate)
    items = list(obj) if isinstance(obj, list | tuple) else [obj]
    if not items:
        raise _fail(locate, f"{ref} gave no tools")
    tools = [
        _as_tool(item, ref, locate, entry.description if len(items) == 1 else None)
        for item in items
    ]
    overrides: dict[str, Any] = {}
    if entry.name is not None:
        overrides["name"] = entry.name
    if entry.description is not None:
        overrides["description"] = entry.description
    if entry.return_direct is not None:
        overrides["return_direct"] = entry.return_direct
    if overrides and len(tools) > 1 and ("name" in overrides or "description" in overrides):
        raise _fail(
            locate,
            f"{ref} gave {len(tools)} tools; `name` and `description` can only override one tool",
        )
    return [tool.model_copy(update=overrides) if overrides else tool for tool in tools]


def _args(args: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (args or {}).items())
