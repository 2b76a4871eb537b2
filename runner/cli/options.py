"""Option parsing shared by several commands."""

from __future__ import annotations

from typing import Any

import click


def parse_vars(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`--var KEY=VALUE` pairs; VALUE is read as a YAML scalar (`3`, `true`, `text`)."""
    import yaml

    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.isidentifier():
            raise click.BadParameter(
                f"expected KEY=VALUE with KEY an identifier, found {pair!r}", param_hint="--var"
            )
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            value = raw
        result[key] = value if isinstance(value, str | int | float | bool) or value is None else raw
    return result
