"""A subagent that is an A2A agent on another host: `subagents: [{name, a2a: {card, ...}}]`.

The `task` tool calls it like a local subagent: the parent's description of the task goes out
as an A2A message, the agent's answer comes back as the tool's result. Everything about the
other host is under `a2a:`, so a reader sees at once that the work leaves this process.
`${VAR}`s in `card` and `headers` are expanded by the loader, like everywhere in an agent file,
so a token never needs to be written into it.
"""

from pydantic import Field, field_validator

from runner.spec.base import Name, SpecModel
from runner.spec.budgets import Seconds

__all__ = ["AGENT_CARD_PATH", "DEFAULT_A2A_TIMEOUT", "A2AConnection", "A2ASubagent", "card_url"]

AGENT_CARD_PATH = "/.well-known/agent-card.json"
"""Where an A2A agent publishes its card, below its base URL."""

DEFAULT_A2A_TIMEOUT = 600.0
"""Seconds one `task` call may wait for the remote agent, when `timeout` is not set."""


def card_url(card: str) -> str:
    """The address of the agent card: `card` itself when it names a `.json` file, else the
    well-known path below it (`card` is then the agent's base URL)."""
    from urllib.parse import urlsplit

    path = urlsplit(card).path
    if path.endswith(".json"):
        return card
    return card.rstrip("/") + AGENT_CARD_PATH


class A2AConnection(SpecModel):
    """How to reach an A2A agent."""

    card: str
    """The agent card's URL (`http://host:9999/.well-known/agent-card.json`), or the agent's
    base URL, below which the card is at `/.well-known/agent-card.json`."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request, e.g. `Authorization: Bearer ${TOKEN}`."""
    timeout: Seconds | None = None
    """How long one `task` call waits for the remote agent's answer (default 600 s); then the
    call fails with an error the parent model reads, and the remote task is canceled."""

    @field_validator("card")
    @classmethod
    def _http_url(cls, value: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"expected an http(s) URL of an A2A agent card or agent, like "
                f"http://127.0.0.1:9999{AGENT_CARD_PATH}, found {value!r}"
            )
        try:
            parts.port  # noqa: B018 - a port that is not a number raises here
        except ValueError:
            raise ValueError(f"bad port in {value!r}") from None
        return value.strip()

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not name or any(c in name for c in " :\r\n\t"):
                raise ValueError(f"{name!r} is not an HTTP header name")
            if "\n" in text or "\r" in text:
                raise ValueError(f"the value of header {name!r} holds a line break")
        return value


class A2ASubagent(SpecModel):
    """An A2A agent on another host, called by the `task` tool like a local subagent."""

    name: Name
    """What the main agent passes as `subagent_type`."""
    description: str | None = Field(default=None, min_length=1)
    """When the main agent should use this subagent; the agent card's description when unset."""
    a2a: A2AConnection
    """Where the agent is and how to reach it."""
