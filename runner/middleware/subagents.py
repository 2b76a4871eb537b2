"""Delegation: the `task(description, subagent_type)` tool runs a subagent in its own context.

The subagent starts from one human message (the description), never the parent's history. The
parent's other state (e.g. `files` on the state backend) goes down with it; `messages`, `todos`
and the structured response do not go down or come back. What changed in the rest of its state
merges back into the parent through the parent's reducers, and its last message's text becomes
the `task` ToolMessage, so the parent's history holds one result per delegation and none of the
subagent's own steps.

Several `task` calls in one AI message run concurrently: LangChain's tool node sends each call
as its own graph task, and the graph carries a `max_concurrency` that lets them all run at once
on the synchronous path too. Each call announces itself on the custom stream
(`{"agentctl": "subagent_start", ...}`) so run events can name the subagent and nest its work
under the call that started it. A subagent's approvals pause the whole run: the subagent shares
the parent's checkpointer, and resuming re-enters the same `task` call, which resumes the
subagent from its checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.types import Command

from runner.middleware.prompt import PromptSection
from runner.tools.runtime import harness_tool

EXCLUDED_STATE_KEYS = frozenset(
    {"messages", "todos", "structured_response", "jump_to", "remaining_steps"}
)

DEFAULT_SUBAGENT_PROMPT = """\
You are a subagent: another agent delegated one task to you. You see only its description, not
the conversation it came from. Complete the task with your tools, thoroughly and on your own.
Your final message is the only thing the delegating agent receives: make it a complete, concise
report of the result (what you found or produced, where you put files, anything left undone)."""

GENERAL_PURPOSE_DESCRIPTION = (
    "General-purpose agent with the same tools as you, for researching complex questions, "
    "searching for files and content, and multi-step tasks. Use it to keep the details of a "
    "large subtask out of your own context, or to run independent subtasks in parallel."
)

TASK_SECTION = """\
## Subagents `task`

You can hand a self-contained task to a subagent with the `task` tool. The subagent works in a
fresh context with its own tools and returns only its final report, so delegating keeps long
searches, big files and trial and error out of your context.
- Give each subagent everything it needs in `description`: it cannot see this conversation.
  Say what to do, what to return, and in what form.
- Independent tasks run in parallel: call `task` several times in ONE message.
- Do small things (one or two tool calls) yourself; delegation has a cost.
- The user does not see a subagent's report: pass on what matters to them."""

TASK_DESCRIPTION = """\
Launch a subagent to do one task in its own context window and return its final report.

Available subagents (`subagent_type`: when to use it):
{agents}

The subagent sees only `description`, never this conversation, so write it as a complete brief:
the goal, the inputs (file paths, names, constraints), and exactly what to report back. Several
`task` calls in one message run in parallel. The subagent's final message is returned to you as
this tool's result; it is not shown to the user."""


@dataclass
class Subagent:
    """A subagent the `task` tool can run. `graph` is None only when described, not built."""

    name: str
    description: str
    graph: Any = None
    kind: str = "inline"  # inline | ref | import | general-purpose


def _state_update(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What the subagent changed, outside the excluded keys, as a parent state update."""
    update: dict[str, Any] = {}
    for key, value in after.items():
        if key in EXCLUDED_STATE_KEYS or key.startswith("_"):
            continue
        old = before.get(key)
        if key == "files" and isinstance(value, dict) and isinstance(old, dict):
            changed: dict[str, Any] = {p: d for p, d in value.items() if old.get(p) != d}
            changed.update({p: None for p in old if p not in value})
            if changed:
                update[key] = changed
        elif value != old:
            update[key] = value
    return update


def _final_text(result: Mapping[str, Any], name: str) -> str:
    messages = result.get("messages") or []
    if not messages:
        return f"Error: subagent {name!r} finished without a message"
    return str(messages[-1].text)


class SubAgentMiddleware(AgentMiddleware):
    """Adds the `task` tool for the given subagents."""

    def __init__(
        self,
        subagents: list[Subagent],
        *,
        task_description: str | None = None,
        system_prompt: str | None = TASK_SECTION,
    ) -> None:
        super().__init__()
        self.subagents = {s.name: s for s in subagents}
        self.system_prompt = system_prompt
        listing = "\n".join(f"- {s.name}: {s.description}" for s in subagents)
        description = (task_description or TASK_DESCRIPTION).replace("{agents}", listing)
        self.tools = [
            harness_tool("task", description, self._task, self._atask, parse_docstring=True)
        ]

    def prompt_section(self) -> PromptSection | None:
        return PromptSection("subagents", text=self.system_prompt) if self.system_prompt else None

    # ----------------------------------------------------------------------- the tool

    def _prepare(
        self, subagent_type: str, description: str, runtime: ToolRuntime
    ) -> tuple[Subagent | None, Any]:
        subagent = self.subagents.get(subagent_type)
        if subagent is None:
            return None, None
        state = runtime.state or {}
        inputs = {k: v for k, v in state.items() if k not in EXCLUDED_STATE_KEYS}
        inputs["messages"] = [HumanMessage(content=description)]
        if runtime.stream_writer is not None:
            runtime.stream_writer(
                {
                    "agentctl": "subagent_start",
                    "agent": subagent.name,
                    "tool_call_id": runtime.tool_call_id,
                    "namespace": (runtime.config.get("configurable") or {}).get("checkpoint_ns"),
                }
            )
        return subagent, inputs

    def _unknown(self, subagent_type: str, runtime: ToolRuntime) -> ToolMessage:
        names = ", ".join(sorted(self.subagents))
        return ToolMessage(
            content=(
                f"Error: unknown subagent_type {subagent_type!r}; the available ones are: {names}"
            ),
            tool_call_id=runtime.tool_call_id or "",
            name="task",
            status="error",
        )

    def _finish(
        self, subagent: Subagent, state: Mapping[str, Any], result: Any, runtime: ToolRuntime
    ) -> Command:
        if not isinstance(result, Mapping):
            raise TypeError(
                f"subagent {subagent.name!r} returned {type(result).__name__}; a subagent's "
                "state must be a mapping with `messages`"
            )
        message = ToolMessage(
            content=_final_text(result, subagent.name),
            tool_call_id=runtime.tool_call_id or "",
            name="task",
        )
        return Command(update={**_state_update(state, result), "messages": [message]})

    def _task(
        self, description: str, subagent_type: str, runtime: ToolRuntime
    ) -> Command | ToolMessage:
        """Run a subagent on a task.

        Args:
            description: The complete brief for the subagent: goal, inputs, what to report back.
            subagent_type: Which subagent to use (one of the names listed above).
        """
        subagent, inputs = self._prepare(subagent_type, description, runtime)
        if subagent is None:
            return self._unknown(subagent_type, runtime)
        result = subagent.graph.invoke(inputs)
        return self._finish(subagent, runtime.state or {}, result, runtime)

    async def _atask(
        self, description: str, subagent_type: str, runtime: ToolRuntime
    ) -> Command | ToolMessage:
        """Run a subagent on a task.

        Args:
            description: The complete brief for the subagent: goal, inputs, what to report back.
            subagent_type: Which subagent to use (one of the names listed above).
        """
        subagent, inputs = self._prepare(subagent_type, description, runtime)
        if subagent is None:
            return self._unknown(subagent_type, runtime)
        result = await subagent.graph.ainvoke(inputs)
        return self._finish(subagent, runtime.state or {}, result, runtime)
