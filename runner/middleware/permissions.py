"""Permissions (`permissions: {deny, allow}`): rules that decide tool calls without a person.

A denied call never runs and is never put to a person: as soon as the model's reply arrives
(inside the model call, before the approvals middleware looks at the reply), each call a `deny`
rule matches is answered with an error ToolMessage naming the rule, which `create_agent` takes as
the call's result, so the tool node never gets it. The message carries the rule in its
`response_metadata["agentctl_denied"]`, from which the run reports a `denied` event. The same
check runs again just before a tool executes, so a call a person edited at an approval into a
denied one does not run either.

An `allow` rule takes a call out of approvals (`runner.middleware.approvals` asks
`PermissionsMiddleware.allows`): it runs without the question `interrupt_on` would ask. Deny
wins over allow.

Subagents: `deny` rules accumulate down the tree (a subagent keeps its parent's and adds its
own, so no subagent escapes a deny); `allow` rules are inherited unless the subagent sets
`permissions:` itself.

In the chain it sits just outside ReplyCheck, so it sees a reply whose calls have ids and
readable arguments (calls ReplyCheck answered are left alone), and inside the journal, so a
denial is journaled like any result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
)
from langchain.agents.middleware import human_in_the_loop as _hitl
from langchain_core.messages import ToolMessage

from runner.events import DENIED_KEY
from runner.middleware.replies import last_reply, with_messages
from runner.spec import PermissionRule

_EDITED_CALLS: str | None = getattr(_hitl, "_EDITED_TOOL_CALLS_KEY", None)
"""The state key under which LangChain's approvals keep the calls a person edited."""

__all__ = ["DENIED_KEY", "LabelledRule", "PermissionsMiddleware", "rule_matches"]


@dataclass(frozen=True)
class LabelledRule:
    """A rule and where it is written (`permissions.deny[0]`, with the agent's name when a
    subagent inherits it)."""

    label: str
    rule: PermissionRule


def rule_matches(rule: PermissionRule, name: str, args: Mapping[str, Any]) -> bool:
    """Whether a call of tool `name` with `args` matches `rule` (see `runner.spec.permissions`)."""
    if not fnmatchcase(name, rule.tool):
        return False
    for arg, globs in rule.args.items():
        if arg not in args:
            return False
        value = args[arg] if isinstance(args[arg], str) else str(args[arg])
        if not any(fnmatchcase(value, g) for g in ([globs] if isinstance(globs, str) else globs)):
            return False
    return True


class PermissionsMiddleware(AgentMiddleware):
    """Answers denied calls with an error before they run; tells approvals which are allowed."""

    def __init__(self, deny: list[LabelledRule], allow: list[LabelledRule]) -> None:
        super().__init__()
        self.deny = deny
        self.allow = allow

    @property
    def name(self) -> str:
        return "PermissionsMiddleware"

    def denied_by(self, call: Mapping[str, Any]) -> LabelledRule | None:
        name, args = str(call.get("name") or ""), call.get("args") or {}
        return next((r for r in self.deny if rule_matches(r.rule, name, args)), None)

    def allows(self, call: Mapping[str, Any]) -> bool:
        """Whether an `allow` rule lets `call` run without its approval (and no deny rule
        stops it)."""
        name, args = str(call.get("name") or ""), call.get("args") or {}
        if self.denied_by(call) is not None:
            return False
        return any(rule_matches(r.rule, name, args) for r in self.allow)

    def refusal(self, call: Mapping[str, Any], found: LabelledRule) -> ToolMessage:
        name = str(call.get("name") or "")
        return ToolMessage(
            f"Error: this call was denied by {found.label} ({found.rule.shown()}) and did not "
            "run. Do not try it again in another form; do something else, or tell the user "
            "what you could not do.",
            tool_call_id=str(call.get("id") or ""),
            name=name,
            status="error",
            response_metadata={
                DENIED_KEY: {
                    "rule": found.label,
                    "tool": name,
                    "args": dict(call.get("args") or {}),
                }
            },
        )

    # ----------------------------------------------------------------------- model replies

    def _check(self, result: Any) -> Any:
        if not self.deny:
            return result
        response, messages, position = last_reply(result)
        if position is None:
            return result
        reply = messages[position]
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        refusals = [
            self.refusal(call, found)
            for call in reply.tool_calls
            if call.get("id") not in answered and (found := self.denied_by(call)) is not None
        ]
        if not refusals:
            return result
        messages[position + 1 : position + 1] = refusals
        return with_messages(result, response, messages)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return self._check(handler(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        return self._check(await handler(request))

    # ----------------------------------------------------------------------- tool calls

    def _denied_call(self, request: Any) -> tuple[Mapping[str, Any], LabelledRule] | None:
        """The call about to run, as a person may have edited it at an approval (LangChain's
        approvals middleware keeps edits in the state and applies them inside this hook), with
        the rule that denies it."""
        if not self.deny:
            return None
        call = request.tool_call
        edits = (request.state or {}).get(_EDITED_CALLS) if _EDITED_CALLS else None
        edited = (edits or {}).get(call.get("id")) if isinstance(edits, dict) else None
        if isinstance(edited, Mapping):
            call = {**call, "name": edited.get("name"), "args": edited.get("args") or {}}
        found = self.denied_by(call)
        return (call, found) if found is not None else None

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        denied = self._denied_call(request)
        return self.refusal(*denied) if denied else handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        denied = self._denied_call(request)
        return self.refusal(*denied) if denied else await handler(request)


def permissions_middleware(
    own: Any,
    *,
    agent: str,
    is_main: bool,
    inherited: PermissionsMiddleware | None,
    sets_own: bool,
) -> PermissionsMiddleware | None:
    """The middleware for an agent's `permissions` (`own`, a `PermissionsSpec`), with what it
    inherits from its parent's (`inherited`): every deny rule; the allow rules unless it sets
    `permissions:` itself. A subagent's own rules are labelled with its name. None when no
    rule applies."""
    of = "" if is_main else f" of {agent!r}"
    deny = [LabelledRule(f"permissions.deny[{i}]{of}", r) for i, r in enumerate(own.deny)]
    allow = [LabelledRule(f"permissions.allow[{i}]{of}", r) for i, r in enumerate(own.allow)]
    if inherited is not None:
        deny += inherited.deny
        if not sets_own:
            allow += inherited.allow
    if not deny and not allow:
        return None
    return PermissionsMiddleware(deny, allow)
