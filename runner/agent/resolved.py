"""What resolution makes of a spec: `ResolvedAgent` (and its model, subagents and resources),
read by `build.py`, the run loop and `agentctl inspect`; made by `runner.agent.resolve`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from runner.check.tools import KeyPath, Locator
from runner.errors import BuildError
from runner.events import RunWarning
from runner.middleware.prompt import PromptSection
from runner.spec import InterruptOn
from runner.spec.agent import AgentCore
from runner.spec.budgets import PriceSpec

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.tools import BaseTool

    from runner.backends import BackendProvider

    Middleware = AgentMiddleware[Any, Any, Any]

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "KeyPath",
    "LocalContext",
    "Locator",
    "ResolvedAgent",
    "ResolvedModel",
    "ResolvedSubagent",
    "Resource",
    "close_all",
    "core_name",
    "no_sandbox_warning",
    "prices_by_agent",
]


DEFAULT_RECURSION_LIMIT = 1000


LocalContext = str | Callable[[Any], str]
"""The last prompt section of a CLI run: its text, or a function of the main agent's backend
spec (None for `state`) that writes it, so it can say whether the file tools reach the current
directory (see `runner.agent.context.local_context`)."""


_SECRET_PARAM = re.compile(r"(^|_)(api_?key|key|token|secret|password|passwd|credentials?)$", re.I)


@dataclass
class ResolvedModel:
    """A model as the spec names it, and (when building) the live chat models."""

    id: str
    params: dict[str, Any] = field(default_factory=dict)
    fallback_ids: list[str] = field(default_factory=list)
    context_window: int | None = None
    images: bool | None = None
    """Whether tool results may carry images for it: the spec's `images`, else the model
    profile's `image_tool_message`; None when neither says (then: no)."""
    parse_text_tool_calls: bool = False
    """Run tool calls written out as a reply's text (see `runner.middleware.replies`)."""
    chat_model: BaseChatModel | None = None
    fallbacks: list[BaseChatModel] = field(default_factory=list)
    prices: dict[str, PriceSpec] = field(default_factory=dict)
    """Model id (this one, fallbacks) to its `price:` in the spec, for those that have one."""

    def display_params(self) -> dict[str, Any]:
        """`params` with secrets masked, for display."""
        return {k: "***" if _SECRET_PARAM.search(k) else v for k, v in self.params.items()}

    @property
    def provider(self) -> str:
        return self.id.partition(":")[0]

    def require(self) -> BaseChatModel:
        if self.chat_model is None:
            raise BuildError(f"model {self.id!r} was resolved without creating it")
        return self.chat_model


class Resource(Protocol):
    """Something resolution opened that must be closed when the agent is done (MCP servers)."""

    def close(self) -> None: ...


@dataclass
class ResolvedSubagent:
    """A subagent of a resolved agent: resolved from a spec (`agent`), imported (`runnable`) or
    served elsewhere (`remote`: a `runner.spec.remote.RemoteAgentServer`, or for kind `a2a` a
    `runner.tools.a2a.A2AAgent`, whose graph the build makes)."""

    name: str
    description: str
    kind: str  # inline | ref | import | remote | a2a | general-purpose
    agent: ResolvedAgent | None = None
    runnable: Any = None
    remote: Any = None


@dataclass
class ResolvedAgent:
    """Everything `build.py` needs to assemble one agent (main or subagent)."""

    name: str
    description: str | None
    spec: AgentCore
    source: str | None
    model: ResolvedModel
    tools: list[BaseTool]
    prompt_sections: list[PromptSection]
    interrupt_on: dict[str, bool | InterruptOn]
    user_middleware: list[Middleware]
    response_format: dict[str, Any] | None
    recursion_limit: int
    is_main: bool = True
    harness: dict[str, Middleware | None] = field(default_factory=dict)
    """The harness middleware by role (`todos`, `patch_tool_calls`, ...), ordered by build.py."""
    subagents: list[ResolvedSubagent] = field(default_factory=list)
    backend: BackendProvider | None = None
    resources: list[Resource] = field(default_factory=list)
    """What resolution opened (MCP servers): open while the agent runs, closed by `close()`."""
    locate: Locator | None = None
    """A problem at a key path of this agent's own spec (an inline subagent's is in its parent's
    file, under `subagents[i]`), at its value or (`at_key=True`) at its key."""

    def close(self) -> None:
        """Close what resolution opened (idempotent)."""
        close_all(self.resources)

    def walk(self) -> Iterator[ResolvedAgent]:
        """This agent and every agent of its tree resolved from a spec, each once (depth
        first, the last subagent first)."""
        pending, seen = [self], set()
        while pending:
            current = pending.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            yield current
            pending += [sub.agent for sub in current.subagents if sub.agent is not None]


def core_name(core: AgentCore) -> str:
    return str(getattr(core, "name", None) or "?")


def close_all(resources: list[Resource]) -> None:
    """Close resources in reverse order of opening; every one is closed even when one fails."""
    errors = []
    for resource in reversed(resources):
        try:
            resource.close()
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


def prices_by_agent(agent: ResolvedAgent) -> dict[str, dict[str, PriceSpec]]:
    """Agent name -> the prices of its models, for every agent of the tree that has some."""
    found: dict[str, dict[str, PriceSpec]] = {}
    for current in agent.walk():
        if current.model.prices and current.name not in found:
            found[current.name] = dict(current.model.prices)
    return found


def no_sandbox_warning(agent: ResolvedAgent) -> RunWarning | None:
    """The `no_sandbox` warning a run starts with when some agent's `execute` asked for
    `sandbox: auto` and this machine has no working sandbox (None when all are sandboxed).

    Said at the start of every run, before the model can call `execute` (or the user approve a
    command): it is a fact about the run's setup, so one place says it once per run, instead of
    the execute tool keeping per-run memory in a middleware shared by many runs."""
    names: list[str] = []
    reasons: set[str] = set()
    for current in agent.walk():
        tools = getattr(current.harness.get("filesystem"), "tool_names", ())
        backend = current.backend if "execute" in tools else None
        reason = backend.unsandboxed_because() if backend is not None else None
        if reason is not None:
            names.append(current.name)
            reasons.add(reason)
    if not names:
        return None
    return RunWarning(
        agent=agent.name,
        code="no_sandbox",
        message=(
            f"execute runs WITHOUT a sandbox for {', '.join(sorted(names))}: commands have "
            f"agentctl's rights on this machine ({'; '.join(sorted(reasons))}). Set "
            "`sandbox: none` on the backend to run unsandboxed on purpose."
        ),
    )
