"""The shape of `runner/`: no import cycle, and no import from a lower layer to a higher one.

`LAYERS` is the layer map, top to bottom: a module may import its own layer's modules and any
layer below, never one above. Every import counts, those inside functions and under
`TYPE_CHECKING` too: a lazy import is still a dependency, and a cycle through one is a knot the
next change pulls tight. `runner/__init__.py` (the public face, lazy) stands above them all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

LAYERS: list[tuple[str, ...]] = [
    ("program",),  # the console script: the collector held off, then the CLI
    ("cli",),  # click commands only
    ("edit",),  # serve --edit: the page's editor (the language server's features over HTTP)
    ("lsp",),  # the language server: validate's checks and `agentctl test`'s loader, as you type
    ("serve", "web", "testing", "starter"),  # servers, the web page, `agentctl test`
    ("run",),  # one turn on a thread -> RunEvents
    ("workflow",),  # WorkflowSpec -> compiled StateGraph of agent, tool and people steps
    ("agent",),  # AgentSpec -> resolved agent -> compiled graph
    ("middleware", "tools"),  # the harness, and the tools a spec declares
    ("check",),  # static checks: validate, tool lists, cassettes (no LangChain)
    ("replay", "threads", "backends"),  # cassettes, the thread database, file backends
    ("load",),  # agent file -> AgentSpec, located problems (no LangChain)
    ("spec",),  # the file formats as pydantic models (no LangChain)
    ("errors", "events"),  # the error tree; RunEvents, the contract between run/ and cli/
]
"""The layers of `runner/`, top to bottom (a name is a subpackage or a top-level module)."""

PACKAGE = ROOT / "runner"
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The module of `runner` an imported name lives in (the longest known prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> Iterator[str]:
    """The modules of `runner` that `module` imports, anywhere in it."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            owner = _owner(name) if name.startswith("runner") else None
            if owner is not None and owner != module:
                yield owner


GRAPH = {module: set(_imports(module, path)) for module, path in MODULES.items()}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_of_runner_has_a_layer() -> None:
    unplaced = sorted(
        {
            layer
            for m in MODULES
            if (layer := _layer(m)) and layer not in RANK and layer != "__main__"
        }
    )
    assert unplaced == [], f"add these to LAYERS: {unplaced}"


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} ({_layer(module)}) imports {target} ({_layer(target)})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if (a := _layer(module)) in RANK and (b := _layer(target)) in RANK and RANK[b] < RANK[a]
    ]


def test_no_module_imports_from_a_higher_layer() -> None:
    assert _upward(GRAPH) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_runner_has_no_import_cycle() -> None:
    assert _cycles(GRAPH) == []


def test_the_checks_see_a_cycle_and_an_upward_import() -> None:
    """The checks above fail on what they look for (the graph of a made-up package)."""
    graph = {"runner.spec.a": {"runner.run.b"}, "runner.run.b": {"runner.spec.a"}}
    assert _cycles(graph) == [["runner.run.b", "runner.spec.a"]]
    assert _upward(graph) == ["runner.spec.a (spec) imports runner.run.b (run)"]
