"""The spec's model modules keep their annotations evaluated (runner/spec/__init__.py says why)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pydantic

import runner.spec

SPEC = Path(runner.spec.__file__).parent


def model_modules() -> list[Path]:
    """The modules of `runner/spec/` that define a class whose bases name a model."""
    found = []
    for path in sorted(SPEC.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bases = {
            ast.unparse(base)
            for node in tree.body
            if isinstance(node, ast.ClassDef)
            for base in node.bases
        }
        if bases & {"BaseModel", "SpecModel"} or any(b.endswith("Spec") for b in bases):
            found.append(path)
    return found


def test_the_model_modules_are_found() -> None:
    names = {p.stem for p in model_modules()}
    assert {"agent", "base", "tools", "workflow", "cassette"} <= names


def test_no_model_module_postpones_its_annotations() -> None:
    postponing = [
        p.name for p in model_modules() if "from __future__ import annotations" in p.read_text()
    ]
    assert postponing == []


def test_every_model_annotation_is_evaluated_when_the_class_is_made() -> None:
    """What pydantic would have to compile and `eval`: string annotations of a model's own
    fields (a forward reference to a class defined later in its module is the exception)."""
    forward = {("RefSubagent", "_spec"), ("MapSpec", "steps")}
    strings = []
    for path in model_modules():
        module = importlib.import_module(f"runner.spec.{path.stem}")
        for cls in vars(module).values():
            if not (isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)):
                continue
            if cls.__module__ != module.__name__:
                continue
            for name, annotation in inspect.get_annotations(cls).items():
                if isinstance(annotation, str) and (cls.__name__, name) not in forward:
                    strings.append(f"{cls.__name__}.{name}: {annotation}")
    assert strings == []
