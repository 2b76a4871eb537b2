"""Anthropic prompt caching: cache markers on the long, stable prefix of every request.

It only helps Anthropic models, so the middleware joins the chain only when the agent's model or
one of its fallbacks is Anthropic's (it sits inside the fallback middleware and ignores the
requests that go to another provider). For every other agent it is left out entirely, which
keeps a wrap hook off each model call. `langchain-anthropic` is an optional extra.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from runner.spec import PromptCachingSpec

ANTHROPIC_PROVIDERS = ("anthropic", "anthropic_bedrock", "google_anthropic_vertex")


def uses_anthropic(model_ids: Sequence[str], models: Sequence[Any]) -> bool:
    """Whether one of an agent's models (its model and fallbacks, as `provider:name` ids and as
    objects) is Anthropic's: by provider, or by class for a model object passed in."""
    if any(m.partition(":")[0] in ANTHROPIC_PROVIDERS for m in model_ids):
        return True
    # A ChatAnthropic object exists only once its module is imported: look there instead of
    # importing it (the Anthropic SDK takes seconds to import) to learn that none is.
    module = sys.modules.get("langchain_anthropic")
    chat_anthropic = getattr(module, "ChatAnthropic", None)
    return chat_anthropic is not None and any(isinstance(m, chat_anthropic) for m in models)


def prompt_caching_middleware(
    settings: PromptCachingSpec, model_ids: Sequence[str], models: Sequence[Any]
) -> Any:
    """The caching middleware for an agent with these models, or None when it would not help."""
    if not settings.enabled or not uses_anthropic(model_ids, models):
        return None
    try:
        from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware
    except ImportError:
        return None  # the Anthropic model itself needs the package; its error says so
    return AnthropicPromptCachingMiddleware(ttl=settings.ttl, unsupported_model_behavior="ignore")
