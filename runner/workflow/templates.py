"""Step templates and conditions, rendered when a step runs (not at load time: they read the
state).

The same sandboxed Jinja as prompts (`runner.load.templates`: Python internals out of reach,
repetition and powers bounded), over `vars`, `state` and, in a map, the item's names. Unlike a
prompt, an unset name is not an error here: a state field no step has written yet is `null`,
renders as nothing, and its attributes are unset too (`{{ state.review.notes }}` before the
first review). Names that can never exist are the static checks' business (`agentctl validate`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from runner.errors import RunError

__all__ = ["StepTemplateError", "evaluate", "render", "render_args"]

_ONE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\{\{|\}\}|\{%).)*)\}\}\s*$", re.DOTALL)


class StepTemplateError(RunError):
    """A step's template or condition failed while the workflow ran."""


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    from runner.load.templates import _bounded_environment

    class StepEnvironment(_bounded_environment()):  # type: ignore[misc]
        """`state.items` is the field `items`, not the mapping's method of that name."""

        def getattr(self, obj: Any, attribute: str) -> Any:
            if isinstance(obj, dict) and attribute in obj:
                return obj[attribute]
            return super().getattr(obj, attribute)

    return StepEnvironment(
        undefined=jinja2.ChainableUndefined, keep_trailing_newline=True, autoescape=False
    )


@lru_cache(maxsize=512)
def _template(source: str) -> Any:
    return _environment().from_string(source)


@lru_cache(maxsize=512)
def _expression(source: str) -> Any:
    return _environment().compile_expression(source, undefined_to_none=True)


def _failed(where: str, source: str, exc: Exception) -> StepTemplateError:
    return StepTemplateError(f"{where}: {source!r} failed: {type(exc).__name__}: {exc}")


def render(source: str, scope: dict[str, Any], *, where: str) -> str:
    """`source` rendered over `scope` (`vars`, `state`, ...); `where` names the step's key for
    the error."""
    if "{" not in source:
        return source
    try:
        return str(_template(source).render(**scope))
    except Exception as exc:
        raise _failed(where, source, exc) from None


def evaluate(expression: str, scope: dict[str, Any], *, where: str) -> Any:
    """The value of a Jinja expression (no braces), an unset name being None."""
    try:
        value = _expression(expression)(**scope)
    except Exception as exc:
        raise _failed(where, expression, exc) from None
    return None if _is_undefined(value) else value


def _is_undefined(value: Any) -> bool:
    import jinja2

    return isinstance(value, jinja2.Undefined)


def render_value(value: Any, scope: dict[str, Any], *, where: str) -> Any:
    """An argument: a string that is one `{{ expression }}` and nothing else keeps the
    expression's type; other strings are rendered; lists and mappings are rendered inside."""
    if isinstance(value, str):
        match = _ONE_EXPRESSION.match(value)
        if match:
            return evaluate(match.group("expr"), scope, where=where)
        return render(value, scope, where=where)
    if isinstance(value, list):
        return [render_value(v, scope, where=f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: render_value(v, scope, where=f"{where}.{k}") for k, v in value.items()}
    return value


def render_args(args: dict[str, Any], scope: dict[str, Any], *, where: str) -> dict[str, Any]:
    """A tool step's `args:` rendered (see `render_value`)."""
    return {key: render_value(value, scope, where=f"{where}.{key}") for key, value in args.items()}
