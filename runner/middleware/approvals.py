"""Approvals (`interrupt_on`): pause before chosen tool calls for a human to approve, edit or
reject them. LangChain's `HumanInTheLoopMiddleware` does the pausing; this module turns the spec
into its configuration, adds the `when:` argument patterns, and writes the prompt section that
tells the model some calls wait for a person.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from langchain.agents.middleware import HumanInTheLoopMiddleware, InterruptOnConfig

from runner.middleware.prompt import PromptSection
from runner.spec import InterruptOn
from runner.spec.agent import DECISIONS


def _matcher(when: Mapping[str, str | list[str]]) -> Callable[[Any], bool]:
    patterns = {arg: [p] if isinstance(p, str) else list(p) for arg, p in when.items()}

    def matches(request: Any) -> bool:
        args = request.tool_call.get("args") or {}
        for arg, globs in patterns.items():
            if arg not in args:
                return False
            value = args[arg] if isinstance(args[arg], str) else str(args[arg])
            if not any(fnmatchcase(value, glob) for glob in globs):
                return False
        return True

    return matches


def hitl_config(
    interrupt_on: Mapping[str, bool | InterruptOn],
) -> dict[str, bool | InterruptOnConfig]:
    """The spec's `interrupt_on` in HumanInTheLoopMiddleware's terms (False entries dropped)."""
    config: dict[str, bool | InterruptOnConfig] = {}
    for tool, setting in interrupt_on.items():
        if setting is False:
            continue
        if setting is True:  # `true` means the three decisions the spec documents
            config[tool] = InterruptOnConfig(allowed_decisions=list(DECISIONS))
            continue
        entry = InterruptOnConfig(allowed_decisions=list(setting.allowed_decisions))
        if setting.description:
            entry["description"] = setting.description
        if setting.when:
            entry["when"] = _matcher(setting.when)
        config[tool] = entry
    return config


def answered(tool_call: Any, messages: list[Any]) -> bool:
    """Whether the last AI message's `tool_call` already has its result (the reply check
    answers calls of a cut-off reply and unreadable calls with errors, and they never run)."""
    for message in reversed(messages):
        if message.type != "tool":
            return False
        if message.tool_call_id == tool_call.get("id"):
            return True
    return False


class ApprovalsMiddleware(HumanInTheLoopMiddleware):
    """LangChain's middleware, with each action request naming the tool call it is about
    (`id`), so run events and answers can point at one call among several; a call that already
    has its result (it will not run: a denied one, say) and a call a `permissions.allow` rule
    lets through are not put to a person."""

    def __init__(
        self, *, interrupt_on: Any, allows: Callable[[Any], bool] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(interrupt_on=interrupt_on, **kwargs)
        self.allows = allows

    def _should_interrupt(self, tool_call: Any, config: Any, state: Any, runtime: Any) -> bool:
        if answered(tool_call, state.get("messages") or []):
            return False
        if self.allows is not None and self.allows(tool_call):
            return False
        return bool(super()._should_interrupt(tool_call, config, state, runtime))

    def _create_action_and_config(self, tool_call: Any, *args: Any, **kwargs: Any) -> Any:
        action, review = super()._create_action_and_config(tool_call, *args, **kwargs)
        return {**action, "id": tool_call.get("id")}, review

    @property
    def name(self) -> str:
        return "HumanInTheLoopMiddleware"


def approvals_middleware(
    interrupt_on: Mapping[str, bool | InterruptOn],
    *,
    allows: Callable[[Any], bool] | None = None,
) -> HumanInTheLoopMiddleware | None:
    """The approvals of `interrupt_on`; `allows` says which calls skip theirs (permissions)."""
    config = hitl_config(interrupt_on)
    return ApprovalsMiddleware(interrupt_on=config, allows=allows) if config else None


def approvals_section(interrupt_on: Mapping[str, bool | InterruptOn]) -> PromptSection | None:
    lines = []
    for tool, setting in interrupt_on.items():
        if setting is False:
            continue
        condition = ""
        if isinstance(setting, InterruptOn) and setting.when:
            condition = " when " + " and ".join(
                f"`{arg}` matches {pats if isinstance(pats, str) else ' or '.join(pats)}"
                for arg, pats in setting.when.items()
            )
        lines.append(f"- `{tool}`{condition}")
    if not lines:
        return None
    text = (
        "## Approvals\n\n"
        "A person reviews these tool calls before they run:\n"
        + "\n".join(lines)
        + "\n\nThey may approve a call, change its arguments, or reject it. When a call is "
        "rejected you are told why: do not repeat it; change your approach or ask the user."
    )
    return PromptSection("approvals", text=text)
