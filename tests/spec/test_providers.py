"""`KNOWN_PROVIDERS` (what `model:` accepts before anything is imported) follows langchain."""

from __future__ import annotations

from runner.spec import KNOWN_PROVIDERS


def test_known_providers_are_langchains_plus_replay() -> None:
    from langchain.chat_models.base import _BUILTIN_PROVIDERS

    ours = set(KNOWN_PROVIDERS) - {"replay"}
    theirs = set(_BUILTIN_PROVIDERS)
    assert ours == theirs, (
        "runner/spec/model.py: KNOWN_PROVIDERS is out of step with langchain's "
        f"init_chat_model providers; add {sorted(theirs - ours)}, remove {sorted(ours - theirs)}"
    )
    assert "replay" in KNOWN_PROVIDERS
    assert len(KNOWN_PROVIDERS) == len(set(KNOWN_PROVIDERS)), "a provider is listed twice"
