"""Agent file -> `AgentSpec`, with every problem located (`file:line:col: key.path: message`).

```
source.py     YAML with positions, ${ENV} interpolation
loader.py     load_spec: includes, subagent refs, templates, openapi documents, SKILL.md folders
any.py        load_any: an agent file or a workflow file, whichever it is
workflow.py   load_workflow: a workflow file and the agents its steps run
problems.py   pydantic errors -> located problems, did-you-mean
templates.py  the prompt templates ({{ vars.x }})
openapi.py    the operations of an OpenAPI document
skills.py     SKILL.md front matter
```

No LangChain import here (`tests/test_startup_imports.py`).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.load.any import load_any
    from runner.load.loader import load_spec
    from runner.load.workflow import load_workflow

__all__ = ["load_any", "load_spec", "load_workflow"]

_LAZY = {
    "load_spec": "runner.load.loader",
    "load_workflow": "runner.load.workflow",
    "load_any": "runner.load.any",
}


def __getattr__(name: str) -> Any:
    """`runner.load.load_spec` and friends, imported when first used (the modules of this
    package import each other without running the loader)."""
    import importlib

    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
