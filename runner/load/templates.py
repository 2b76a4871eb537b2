"""Prompts are Jinja2 templates rendered once, at load time, with the spec's `vars`.

`StrictUndefined` makes a misspelled `{{ vars.topci }}` an error instead of an empty string; the
error names the template's file and line and the variables that do exist. Prompt files may
`{% include %}` other files from their own folder.

Templates render in Jinja's sandbox (no attribute of Python internals, `range` capped at 100,000
items), with repetition (`"x" * n`, `[..] * n`) and powers checked before they are computed, and
the output capped at `MAX_OUTPUT_CHARS`, and the lines of template code it runs capped at
`MAX_TEMPLATE_LINES` (nested loops that print nothing): a template that would make a huge string
or run for ever fails at once with a located error instead of eating the machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import Any

MAX_OUTPUT_CHARS = 1_000_000
"""A rendered prompt may be this long at most (a long prompt is some 100,000 characters)."""
MAX_POWER_BITS = 100_000
"""`a ** b` may make an integer this many bits long at most."""
MAX_TEMPLATE_LINES = 1_000_000
"""Lines of template code one render may run (loops count each pass): a prompt runs thousands."""


@dataclass(frozen=True)
class TemplateProblem(Exception):
    """A template failed; `line` is 1-based within the template (0 when unknown)."""

    message: str
    line: int
    file: str | None = None

    def __str__(self) -> str:
        return self.message


def _where(tb: TracebackType | None, name: str, search_dir: Path | None) -> tuple[str | None, int]:
    """The innermost template frame of a traceback: (file, line), the file None for `name`.

    A template `{% include %}`d from `search_dir` is reported in its own file."""
    folder = str(search_dir) if search_dir else None
    file: str | None = None
    line = 0
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == name:
            file, line = None, tb.tb_lineno
        elif folder and filename.startswith(folder) and not filename.endswith(".py"):
            file, line = filename, tb.tb_lineno
        tb = tb.tb_next
    return file, line


def _undefined_message(raw: str, variables: dict[str, Any]) -> str:
    attr = re.search(r"has no attribute '([^']+)'", raw)
    if attr:
        name = attr.group(1)
        known = sorted(variables)
        import difflib

        close = difflib.get_close_matches(name, known, n=1)
        if close:
            hint = f"; did you mean 'vars.{close[0]}'?"
        elif known:
            hint = f"; defined: {', '.join(known)}"
        else:
            hint = "; the spec defines no `vars`"
        return f"undefined template variable 'vars.{name}'{hint}"
    top = re.search(r"'([^']+)' is undefined", raw)
    if top:
        name = top.group(1)
        if name in variables:
            return f"undefined template variable {name!r}; write it as '{{{{ vars.{name} }}}}'"
        return f"undefined template variable {name!r}; template variables are 'vars.NAME'"
    return f"template error: {raw}"


def render(
    source: str,
    variables: dict[str, Any],
    *,
    name: str,
    search_dir: Path | None = None,
) -> str:
    """Render `source` with `vars` bound to `variables`. Raises TemplateProblem."""
    if "{" not in source and "\r" not in source:
        # No Jinja syntax can start without `{` (nor line endings be normalized without
        # `\r`): the text renders to itself, so skip importing Jinja (a tenth of a second).
        return source
    import jinja2

    loader = jinja2.FileSystemLoader(str(search_dir)) if search_dir else None
    env = _bounded_environment()(
        undefined=jinja2.StrictUndefined,
        loader=loader,
        keep_trailing_newline=True,
        autoescape=False,
    )
    try:
        code = _compiled(source, name)
        template = env.template_class.from_code(env, code, env.make_globals(None))
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(
            f"template syntax error: {exc.message}", exc.lineno or 0, exc.filename
        ) from None
    try:
        return _within_budget(lambda: _capped(template.generate(vars=variables)), name, search_dir)
    except jinja2.TemplateSyntaxError as exc:  # in an included template
        raise TemplateProblem(
            f"template syntax error: {exc.message}", exc.lineno or 0, exc.filename
        ) from None
    except jinja2.UndefinedError as exc:
        file, line = _where(exc.__traceback__, name, search_dir)
        message = _undefined_message(str(exc.message), variables)
        raise TemplateProblem(message, line, file) from None
    except jinja2.TemplateNotFound as exc:
        file, line = _where(exc.__traceback__, name, search_dir)
        message = f"included template not found: {exc.name}"
        if search_dir is not None:
            message += " (a path relative to the prompt file's folder)"
        raise TemplateProblem(message, line, file) from None
    except jinja2.TemplateError as exc:
        file, line = _where(exc.__traceback__, name, search_dir)
        raise TemplateProblem(f"template error: {exc}", line, file) from None
    except Exception as exc:  # a filter or expression failed: still the template author's to fix
        file, line = _where(exc.__traceback__, name, search_dir)
        if loader is None and "no loader" in str(exc):
            message = "`{% include %}` and `{% import %}` need the prompt in a file ({file: ...})"
        else:
            message = f"template error: {type(exc).__name__}: {exc}"
        raise TemplateProblem(message, line, file) from None


@lru_cache(maxsize=256)
def _compiled(source: str, name: str) -> Any:
    """`source` compiled to Python code, remembered: the code depends only on the text and the
    environment's fixed settings (not on its loader or the variables), and `agentctl lsp`
    renders the same prompts again on every keystroke. A syntax error is not remembered."""
    import jinja2

    env = _bounded_environment()(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )
    return env.compile(source, name=name, filename=name)


def _capped(chunks: Any) -> str:
    """The rendered text, stopped as soon as it passes `MAX_OUTPUT_CHARS`."""
    import jinja2

    parts: list[str] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > MAX_OUTPUT_CHARS:
            raise jinja2.TemplateError(
                f"the rendered prompt is over {MAX_OUTPUT_CHARS:,} characters; is a loop or an "
                "include running away?"
            )
        parts.append(chunk)
    return "".join(parts)


_BOUNDED: Any = None


def _bounded_environment() -> Any:
    """Jinja's `SandboxedEnvironment`, refusing a repetition or power whose result would pass
    the caps before computing it (made once, on first use: Jinja is imported lazily)."""
    global _BOUNDED
    if _BOUNDED is not None:
        return _BOUNDED
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import SandboxedEnvironment

    class BoundedEnvironment(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":
                for seq, times in ((left, right), (right, left)):
                    sized = isinstance(seq, str | list | tuple) and isinstance(times, int)
                    if sized and len(seq) * times > MAX_OUTPUT_CHARS:
                        raise SecurityError(
                            f"repeating {len(seq):,} items {times:,} times makes more than "
                            f"{MAX_OUTPUT_CHARS:,}"
                        )
            elif operator == "**" and isinstance(left, int) and isinstance(right, int):
                bits = abs(left).bit_length() * right if abs(left) > 1 and right > 0 else 0
                if bits > MAX_POWER_BITS:
                    raise SecurityError(f"{left} ** {right} is over {MAX_POWER_BITS:,} bits long")
            return super().call_binop(context, operator, left, right)

    _BOUNDED = BoundedEnvironment
    return _BOUNDED


def _within_budget(render: Any, name: str, search_dir: Path | None) -> str:
    """`render()`, stopped with a TemplateError once the template code (the prompt's own frames
    and those of files it includes) has run `MAX_TEMPLATE_LINES` lines. Counted with a trace
    function on those frames only; whatever tracer was set before is put back."""
    import sys

    import jinja2

    folder = str(search_dir) if search_dir else None
    lines = 0

    def count(frame: Any, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
            if lines > MAX_TEMPLATE_LINES:
                raise jinja2.TemplateError(
                    f"the template ran more than {MAX_TEMPLATE_LINES:,} steps; is a loop running "
                    "away?"
                )
        return count

    def template_frames(frame: Any, event: str, arg: Any) -> Any:
        filename = frame.f_code.co_filename
        if filename == name or (
            folder and filename.startswith(folder) and not filename.endswith(".py")
        ):
            return count
        return None

    previous = sys.gettrace()
    sys.settrace(template_frames)
    try:
        result: str = render()
    finally:
        sys.settrace(previous)
    return result
