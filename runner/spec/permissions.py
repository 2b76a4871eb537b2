"""The `permissions:` key: rules that deny or allow tool calls without asking a person.

A rule matches a call by the tool's name (a glob: `execute`, `http_*`, `*`) and, optionally, by
its arguments: each named argument's value (as text) must match one of the rule's globs
(`{command: "rm -rf*"}`, `{command: ["git push*", "git reset*"]}`). Globs are shell-style
(`fnmatch`, case-sensitive): `*` matches anything, `?` one character, `[abc]` a set.

Order: `deny` first (a denied call never runs and never reaches approvals), then `allow` (a call
an allow rule matches runs without the approval `interrupt_on` would ask for), then approvals.
"""

from pydantic import Field

from runner.spec.base import SpecModel, empty_list


class PermissionRule(SpecModel):
    """A call pattern: the tool's name and, optionally, globs on its arguments."""

    tool: str = Field(min_length=1)
    """The tool's name, or a glob over names (`execute`, `http_*`, `*`)."""
    args: dict[str, str | list[str]] = Field(default_factory=dict)
    """Argument name to a glob (or a list of globs, any of which may match) on its value as
    text: `{command: "rm -rf*"}`. A call without that argument does not match."""

    def shown(self) -> str:
        """The rule in words, for messages: `tool: execute, command: rm -rf*`."""
        parts = [f"tool: {self.tool}"]
        for name, globs in self.args.items():
            parts.append(f"{name}: {globs if isinstance(globs, str) else ' | '.join(globs)}")
        return ", ".join(parts)


class PermissionsSpec(SpecModel):
    """`deny` and `allow` rules on tool calls, checked before approvals. A subagent keeps its
    parent's `deny` rules and adds its own; it inherits `allow` unless it sets `permissions`."""

    deny: list[PermissionRule] = Field(default_factory=empty_list)
    """Calls that never run: the model gets an error naming the rule, the run a `denied`
    event."""
    allow: list[PermissionRule] = Field(default_factory=empty_list)
    """Calls that run without the approval `interrupt_on` would ask for."""
