"""The replay cassette file as pydantic models: recorded model replies, so agents run offline.

```yaml
version: 1
agents:                  # replies per agent name; the main agent is the spec's `name`
  researcher:
    - content: "Let me plan this."
      tool_calls:
        - {name: write_todos, args: {todos: [{content: Outline, status: in_progress}]}}
    - content: "Done."
  critic:                # a subagent's replies, consumed each time it is called
    - content: "Three weaknesses: ..."
```

A plain list instead of `agents:` holds the main agent's replies. A reply may set `delay`
(seconds, to imitate a slow model) and `usage` (token counts; estimated when absent). Reading a
cassette and playing it is `runner.replay.cassette`'s; this module is the format only (pure data,
like the agent spec), so `json_schema("cassette")` needs nothing above `runner.spec`.
"""

from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from runner.spec.base import CASSETTE_SUFFIXES, SpecModel, empty_list

__all__ = [
    "CASSETTE_SUFFIXES",
    "CassetteAnswers",
    "CassetteFile",
    "CassetteReply",
    "CassetteToolCall",
    "CassetteUsage",
]


class CassetteToolCall(SpecModel):
    """One tool call in a reply."""

    name: str = Field(min_length=1)
    """The tool to call."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments."""
    id: str | None = None
    """The call id; generated when absent."""


class CassetteUsage(SpecModel):
    """The token counts a reply reports."""

    input_tokens: int = Field(ge=0)
    """Tokens of the conversation sent to the model."""
    output_tokens: int = Field(ge=0)
    """Tokens of the reply."""


class CassetteAnswers(SpecModel):
    """The `task` call a subagent's reply answers: the one with this `description` (the brief,
    exactly as the parent's call writes it, surrounding blank space aside) and/or this `id`."""

    description: str | None = None
    """The `description` argument of the `task` call."""
    id: str | None = None
    """The id of the `task` call (the `id:` its tool call has in the cassette)."""

    @model_validator(mode="after")
    def _names_a_call(self) -> Self:
        if self.description is None and self.id is None:
            raise ValueError("name the call by `description` or `id`")
        return self

    def matches(self, call_id: str | None, description: str) -> bool:
        return (self.id is None or self.id == call_id) and (
            self.description is None or self.description.strip() == description.strip()
        )


class CassetteReply(SpecModel):
    """One model reply, played when the agent calls its model."""

    content: str | list[dict[str, Any]] = ""
    """The reply's text (or content blocks)."""
    tool_calls: list[CassetteToolCall] = Field(default_factory=empty_list)
    """Tool calls the model makes in this reply."""
    delay: float = Field(default=0, ge=0)
    """Seconds to wait before replying (imitates a slow model)."""
    usage: CassetteUsage | None = None
    """Token counts to report; estimated from the text when absent."""
    answers: str | CassetteAnswers | None = None
    """On the first reply of a subagent's run: the `task` call this run answers (a string is its
    description). Without it, runs answer the calls in the order the parent made them."""

    @field_validator("answers", mode="after")
    @classmethod
    def _description_shorthand(cls, value: str | CassetteAnswers | None) -> CassetteAnswers | None:
        return CassetteAnswers(description=value) if isinstance(value, str) else value


class CassetteFile(SpecModel):
    """A cassette with replies per agent name."""

    version: Literal[1] = 1
    """Cassette format version."""
    agents: dict[str, list[CassetteReply]] = Field(default_factory=dict)
    """Replies per agent name."""
