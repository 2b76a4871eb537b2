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
subagent from its checkpoint. While a subagent runs, `runner.tools.runtime.TASK_CALL` names the
`task` call it answers and the calls of the same reply, so a replayed subagent plays the replies
meant for that call whichever parallel call reaches its model first.

Parallel subagents on the state backend each work on a copy of the parent's files, so two of
them may change the same file. The first to finish keeps its version; a later one's version of
that file is saved beside it (`/report.md.from-writer-1`) and its report says so, so the parent
can merge the two. Nothing is lost and nothing is overwritten without the model being told.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.types import Command

from runner.middleware.prompt import PromptSection
from runner.tools.runtime import TASK_CALL, calling_message, harness_tool, task_call

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
    kind: str = "inline"  # inline | ref | import | general-purpose | remote


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


class ParallelChanges:
    """Which files the `task` calls of one AI message changed, to catch two changing one file.

    Keyed by the AI message that made the calls; an entry goes when all its `task` calls have
    reported (at most `keep` entries are kept, for calls that never report).
    """

    def __init__(self, keep: int = 256) -> None:
        self._lock = threading.Lock()
        self._keep = keep
        # message id -> (task calls reported, {path: the content the first change left})
        self._by_message: OrderedDict[str, tuple[int, dict[str, str | None]]] = OrderedDict()

    def settle(
        self,
        message_id: str,
        calls: int,
        files: Mapping[str, Any],
        changed: dict[str, Any],
        name: str,
    ) -> tuple[dict[str, Any], list[str]]:
        """Claim the paths of `changed` for this call. A path another call of the message already
        changed to different content is not applied: this call's version goes to a new path
        beside it. Returns the update to apply and a note for each such path."""
        with self._lock:
            reported, claimed = self._by_message.pop(message_id, (0, {}))
            applied: dict[str, Any] = {}
            notes: list[str] = []
            for path, data in changed.items():
                content = data.get("content") if isinstance(data, Mapping) else None
                if path not in claimed:
                    claimed[path] = content
                    applied[path] = data
                    continue
                if claimed[path] == content:
                    continue  # the same change twice
                if data is None:
                    notes.append(
                        f"{path} was also changed by a parallel task, whose version was kept; "
                        f"this subagent's deletion of it was not applied."
                    )
                    continue
                number = 1
                while f"{path}.from-{name}-{number}" in claimed or (
                    f"{path}.from-{name}-{number}" in files
                ):
                    number += 1
                beside = f"{path}.from-{name}-{number}"
                claimed[beside] = content
                applied[beside] = data
                kept = "deleted it" if claimed[path] is None else "changed it"
                notes.append(
                    f"{path}: a parallel task also {kept}, and its version was kept; this "
                    f"subagent's version is in {beside}. Compare the two and merge them."
                )
            if reported + 1 < calls:
                self._by_message[message_id] = (reported + 1, claimed)
                while len(self._by_message) > self._keep:
                    self._by_message.popitem(last=False)
            return applied, notes


def _final_text(result: Mapping[str, Any], name: str) -> str:
    messages = result.get("messages") or []
    if not messages:
        return f"Error: subagent {name!r} finished without a message"
    return str(messages[-1].text)


def _remote_error(exc: Exception, runtime: ToolRuntime) -> ToolMessage:
    return ToolMessage(
        content=f"Error: {exc}",
        tool_call_id=runtime.tool_call_id or "",
        name="task",
        status="error",
    )


AGENTS_PLACEHOLDERS = ("{available_agents}", "{agents}")
"""Where the list of subagents goes in the `task` tool's description (the seeds' name first)."""


def task_tool_description(template: str, listing: str) -> str:
    """The `task` tool's description: `template` with the subagent list in its placeholders."""
    for placeholder in AGENTS_PLACEHOLDERS:
        template = template.replace(placeholder, listing)
    return template


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
        self.parallel_changes = ParallelChanges()
        self.system_prompt = system_prompt
        listing = "\n".join(f"- {s.name}: {s.description}" for s in subagents)
        description = task_tool_description(task_description or TASK_DESCRIPTION, listing)
        self.tools = [harness_tool("task", description, self._task, self._atask)]

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
        update = _state_update(state, result)
        text = _final_text(result, subagent.name)
        calling = calling_message(runtime)
        tasks = sum(c.get("name") == "task" for c in calling.tool_calls) if calling else 0
        if calling is not None and calling.id and tasks > 1:
            files = state.get("files")
            update["files"], notes = self.parallel_changes.settle(
                calling.id,
                tasks,
                files if isinstance(files, Mapping) else {},
                update.get("files") or {},
                subagent.name,
            )
            if not update["files"]:
                del update["files"]
            if notes:
                text += "\n\n[agentctl] " + "\n[agentctl] ".join(notes)
        message = ToolMessage(content=text, tool_call_id=runtime.tool_call_id or "", name="task")
        return Command(update={**update, "messages": [message]})

    def _remote_result(
        self, subagent: Subagent, runtime: ToolRuntime, call: Callable[[], str]
    ) -> ToolMessage:
        """A remote subagent's answer (`runner.middleware.remote_subagents`) as the result."""
        from runner.middleware.remote_subagents import RemoteCallError

        try:
            text = call()
        except RemoteCallError as exc:
            return _remote_error(exc, runtime)
        return ToolMessage(content=text, tool_call_id=runtime.tool_call_id or "", name="task")

    def _task(
        self, description: str, subagent_type: str, runtime: ToolRuntime
    ) -> Command | ToolMessage:
        """Run a subagent on a task (the arguments: `runner.check.tool_args.TaskArgs`)."""
        subagent, inputs = self._prepare(subagent_type, description, runtime)
        if subagent is None:
            return self._unknown(subagent_type, runtime)
        if subagent.kind == "remote":
            return self._remote_result(
                subagent, runtime, lambda: subagent.graph.call(description, runtime, subagent_type)
            )
        token = TASK_CALL.set(task_call(runtime, subagent.name, description))
        try:
            result = subagent.graph.invoke(inputs)
        finally:
            TASK_CALL.reset(token)
        return self._finish(subagent, runtime.state or {}, result, runtime)

    async def _atask(
        self, description: str, subagent_type: str, runtime: ToolRuntime
    ) -> Command | ToolMessage:
        """Run a subagent on a task (the arguments: `runner.check.tool_args.TaskArgs`)."""
        subagent, inputs = self._prepare(subagent_type, description, runtime)
        if subagent is None:
            return self._unknown(subagent_type, runtime)
        if subagent.kind == "remote":
            from runner.middleware.remote_subagents import RemoteCallError

            try:
                text = await subagent.graph.acall(description, runtime, subagent_type)
            except RemoteCallError as exc:
                return _remote_error(exc, runtime)
            return ToolMessage(content=text, tool_call_id=runtime.tool_call_id or "", name="task")
        token = TASK_CALL.set(task_call(runtime, subagent.name, description))
        try:
            result = await subagent.graph.ainvoke(inputs)
        finally:
            TASK_CALL.reset(token)
        return self._finish(subagent, runtime.state or {}, result, runtime)
