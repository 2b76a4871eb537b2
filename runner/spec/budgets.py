"""Budgets beyond call counts: `limits.tokens`, `limits.time`, `limits.cost`, and the per-model
`price` that `limits.cost` (and the cost shown in `usage` events) needs.

A budget counts one run of the main agent: from the message that starts it to its answer, its
subagents' model calls included; the time waiting for a person (an approval, an `ask_user`
answer) between two turns of a run is not counted. `runner.middleware.budgets` enforces them.
"""

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from runner.spec.base import SpecModel, describe

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?")


class PriceSpec(SpecModel):
    """What a model costs, in US dollars per million tokens."""

    input: float = Field(ge=0)
    """USD per million input (prompt) tokens."""
    output: float = Field(ge=0)
    """USD per million output (completion) tokens."""

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """USD for one call's tokens."""
        return round((input_tokens * self.input + output_tokens * self.output) / 1_000_000, 10)


def parse_duration(value: Any) -> Any:
    """`limits.time`: seconds as a number, or text like `90s`, `10m`, `1h30m`, `1.5h`."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 10m, 90s or 1h30m, found {describe(value)}")
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        match = _DURATION.fullmatch(text)
        if text and match is not None and any(match.groups()):
            hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
            return hours * 3600 + minutes * 60 + seconds
        try:
            return float(text)
        except ValueError:
            pass
    raise ValueError(
        f"expected a duration like 10m, 90s or 1h30m (or a number of seconds), found "
        f"{describe(value)}"
    )


Seconds = Annotated[
    float, Field(gt=0), BeforeValidator(parse_duration, json_schema_input_type=str | float)
]
"""A wall-clock duration in seconds, written `90s`, `10m`, `1h30m` or as a number of seconds."""


def human_duration(seconds: float) -> str:
    """`10m`, `1h 30m`, `45s`, `2m 05s`: how budgets and their use are shown."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {secs:02d}s" if secs else f"{minutes}m"
    if seconds < 10 and seconds != whole:
        return f"{seconds:.1f}s"
    return f"{secs}s"


def human_cost(usd: float) -> str:
    """`$0.0123`, `$1.50`: enough digits to see a small run's cost."""
    return f"${usd:,.2f}" if usd >= 1 else f"${usd:.4f}".rstrip("0").rstrip(".") or "$0"


__all__ = ["PriceSpec", "Seconds", "human_cost", "human_duration", "parse_duration"]
