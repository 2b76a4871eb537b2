"""The `ask_user:` key: a tool the agent calls to ask the person running it a question.

`ask_user: true` gives the agent an `ask_user(question, choices=None)` tool; the run pauses (a
LangGraph interrupt carrying the question and its choices) until someone answers: the terminal
asks at once, `agentctl run --thread ID --answer TEXT` answers a paused thread, a server client
resumes the interrupt. `ask_user: {choices: [...]}` offers those answers whenever the model's
question brings none of its own; an answer must then be one of the choices.
"""

from typing import Any

from pydantic import Field, field_validator

from runner.spec.base import SpecModel


class AskUserSpec(SpecModel):
    """Let the agent ask the user a question and wait for the answer."""

    enabled: bool = True
    """`false` turns it off (the same as writing `false` for the whole key)."""
    choices: list[str] | None = Field(default=None, min_length=2)
    """The answers offered when the model's question gives no `choices` of its own (at least
    two); the answer must be one of them."""
    description: str | None = None
    """Replace the tool's description (when to ask, what to ask about)."""

    @field_validator("choices", mode="before")
    @classmethod
    def _quoted(cls, choices: Any) -> Any:
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, bool):
                    raise ValueError(
                        f"a choice is text, found {str(choice).lower()}: YAML reads yes/no/on/off "
                        'as true/false, so quote it ("yes")'
                    )
        return choices

    @field_validator("choices")
    @classmethod
    def _distinct(cls, choices: list[str] | None) -> list[str] | None:
        if choices is None:
            return None
        seen: set[str] = set()
        for choice in choices:
            if not choice.strip():
                raise ValueError("a choice is empty text")
            if choice.strip().lower() in seen:
                raise ValueError(f"{choice!r} is listed twice")
            seen.add(choice.strip().lower())
        return choices


__all__ = ["AskUserSpec"]
