"""A thread's token usage and cost, as the page shows it.

Counted from the replies the thread's conversation keeps (each AI message's `usage_metadata`,
as the engine's `GET /threads/{id}/state` gives them), and priced the way `agentctl run`
prices a reply (`runner.run.translate`): the spec's `model.price` and its fallbacks' prices,
the one matching the reply's model name (`runner.middleware.budgets.price_for`). So the page,
the terminal and the `usage` events agree on a reply's cost.

A subagent's own replies are not kept in the thread (only its answer, as the `task` call's
result), so they are not in these totals; the page adds them while it watches a run live.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runner.spec.budgets import PriceSpec

__all__ = ["spec_prices", "thread_usage"]


def spec_prices(spec: Any) -> dict[str, PriceSpec]:
    """The prices of a served file's main model (none for a workflow or an unpriced model)."""
    model = getattr(spec, "model", None)
    prices = getattr(model, "prices", None)
    return prices() if callable(prices) else {}


def thread_usage(messages: Iterable[Any], prices: Mapping[str, PriceSpec]) -> dict[str, Any]:
    """{model_calls, input_tokens, output_tokens, reported, cost, cost_text, priced_all} of
    the conversation `messages` (message dicts as the API serializes them).

    `reported`: some reply carried token counts (without any, the tokens are unknown, not 0).
    `cost`: USD, None when no reply could be priced; `priced_all` false when some reply had
    no price or no token counts (the cost is then a lower bound)."""
    from runner.middleware.budgets import price_for
    from runner.spec.budgets import human_cost

    calls = tokens_in = tokens_out = 0
    reported = False
    cost: float | None = None
    priced_all = True
    for message in messages:
        if not isinstance(message, Mapping) or message.get("type") != "ai":
            continue
        calls += 1
        # The engines' state can carry a reply's counts under `additional_kwargs` instead (seen
        # on the in-memory engine: `usage_metadata` null beside them).
        usage = message.get("usage_metadata") or (message.get("additional_kwargs") or {}).get(
            "usage_metadata"
        )
        if not isinstance(usage, Mapping):
            priced_all = False
            continue
        reported = True
        used_in = int(usage.get("input_tokens") or 0)
        used_out = int(usage.get("output_tokens") or 0)
        tokens_in += used_in
        tokens_out += used_out
        meta = message.get("response_metadata") or {}
        price = price_for(prices, meta.get("model_name") or meta.get("model"))
        if price is None:
            priced_all = False
        else:
            cost = (cost or 0.0) + price.cost(used_in, used_out)
    return {
        "model_calls": calls,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "reported": reported,
        "cost": None if cost is None else round(cost, 10),
        "cost_text": None if cost is None else human_cost(cost),
        "priced_all": priced_all and cost is not None,
    }
