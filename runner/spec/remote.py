"""Remote subagents: an agent served elsewhere over the LangGraph Agent Server API.

`agentctl serve`, Aegra and LangGraph Platform serve that API; the `task` tool calls a remote
subagent as it calls a local one (the runtime is `runner.middleware.remote_subagents`). Secrets
go in through `${VAR}` (`api_key`, `headers`), which the loader fills in and locates when unset.
"""

from pydantic import Field, field_validator

from runner.spec.base import Name, SpecModel


def checked_url(url: str) -> str:
    """An `http(s)://host[:port][/path]` address, or a ValueError saying what is wrong."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{url!r} is not an http(s) URL; expected e.g. http://127.0.0.1:2024 (the Agent "
            "Server's address)"
        )
    if port == 0:
        raise ValueError(f"{url!r}: port 0 is not a port")
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r}: the server's address takes no query or fragment")
    return url.rstrip("/")


class RemoteAgentServer(SpecModel):
    """Where a remote subagent is served: an Agent Server and one of its assistants."""

    url: str = Field(min_length=1)
    """The Agent Server's address (`agentctl serve`, Aegra, LangGraph Platform), e.g.
    `http://127.0.0.1:2024`."""
    assistant: str = Field(min_length=1)
    """The assistant id or graph id to run (for `agentctl serve`: the agent's name)."""
    api_key: str | None = None
    """Sent as `x-api-key` (`agentctl serve --api-keys`); give it as `${VAR}`."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers; values may use `${VAR}` (`inspect` shows `***`)."""
    timeout: float = Field(default=600, gt=0)
    """Seconds one `task` call may take, waiting for a restarted server included."""

    _url = field_validator("url")(lambda cls, value: checked_url(value))


class RemoteSubagent(SpecModel):
    """A subagent served by an Agent Server: the `task` tool runs it on one remote thread per
    thread of the calling agent, reused by later calls, with its events and approvals passed
    through."""

    name: Name
    """What the main agent passes as `subagent_type`."""
    description: str = Field(min_length=1)
    """When the main agent should use this subagent (shown in the `task` tool)."""
    remote: RemoteAgentServer
    """`{url, assistant, api_key, headers, timeout}`."""


__all__ = ["RemoteAgentServer", "RemoteSubagent", "checked_url"]
