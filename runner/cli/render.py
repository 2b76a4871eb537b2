"""Plain-text rendering of run events: what `agentctl run` prints when not writing JSON lines.

Text streams to stdout as it arrives; tool calls and results are one compact line each, indented
under the `task` call when they come from a subagent. Nothing here uses colour codes.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any, TextIO

from runner.events import (
    Action,
    Denied,
    Error,
    Final,
    Interrupt,
    ModelCall,
    RunEvent,
    RunWarning,
    Start,
    StepEnd,
    StepStart,
    TextDelta,
    TodosUpdate,
    ToolCall,
    ToolResult,
    Usage,
)
from runner.spec.ask_user import ASK_USER_TOOL
from runner.spec.budgets import human_cost

MAX_ARG = 60


def short_args(args: dict[str, Any], limit: int = MAX_ARG) -> str:
    parts = []
    for key, value in args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        text = text.replace("\n", "⏎")
        if len(text) > limit:
            text = text[: limit - 1] + "…"
        parts.append(f"{key}={text!r}" if isinstance(value, str) else f"{key}={text}")
    return ", ".join(parts)


def summarize_result(content: str) -> str:
    """A tool result in one line: its first line with words, and its size when longer."""
    first, size = result_summary(content)
    first = first[:MAX_ARG] + ("…" if len(first) > MAX_ARG else "")
    return first + (f" ({size})" if size else "")


_LINE_NUMBER = re.compile(r"^\s*\d+\t")
EDITED_NOTE = "Note: a human reviewer replaced this tool call"
EDITED_RESULT = "\n\nTool response:\n"


def result_summary(content: str) -> tuple[str, str]:
    """(the first line with words in it, a size note such as "+16 lines, 653 chars") for a tool
    result. Line numbers that `read_file` puts in front of each line are left out."""
    if content.startswith(EDITED_NOTE):  # LangChain's note before an edited call's result
        content = content.partition(EDITED_RESULT)[2] or content
    lines = content.splitlines()
    texts = [_LINE_NUMBER.sub("", line).strip() for line in lines]
    first = next((t for t in texts if any(c.isalnum() for c in t)), "")
    size = f"+{len(lines) - 1} lines, {len(content):,} chars" if len(lines) > 1 else ""
    return first, size


def answer_hint(spec: str, thread_id: str, actions: list[Action] | None = None) -> str:
    """How to answer a waiting approval (or question) from the command line, naming the agent
    file."""
    if actions and all(a.name == ASK_USER_TOOL for a in actions):
        first = actions[0].args.get("choices") or []
        example = shlex.quote(str(first[0])) if first else "TEXT"
        return f"Answer with: agentctl run {spec} --thread {thread_id} --answer {example}"
    return f"Answer with: agentctl run {spec} --thread {thread_id} {decision_flags(actions)}"


_FLAGS = {"approve": "--approve", "reject": "--reject [--reason TEXT]", "edit": "--edit JSON"}


def decision_flags(actions: list[Action] | None) -> str:
    """The command line flags for the decisions every waiting call allows, the first one
    followed by the others: `--approve (or --reject [--reason TEXT], or --edit JSON)`."""
    allowed = [
        name
        for name in _FLAGS
        if all(name in a.allowed_decisions for a in actions or () if a.name != ASK_USER_TOOL)
    ] or list(_FLAGS)
    first, *others = (_FLAGS[name] for name in allowed)
    return first + (f" (or {', or '.join(others)})" if others else "")


def question_lines(action: Action) -> list[str]:
    """An `ask_user` question as lines for people: the question, then its numbered choices."""
    who = f"{action.agent} asks" if action.agent else "the agent asks"
    lines = [f"{who}: {action.args.get('question', '')}"]
    for number, choice in enumerate(action.args.get("choices") or (), 1):
        lines.append(f"  {number}. {choice}")
    return lines


def step_line(event: StepStart | StepEnd) -> str:
    """A workflow step's line: `▶ draft (agent)` when it starts; `✓ draft 1.2s → output` when
    it ends (`⏸` waiting for a person, `✗` failed)."""
    if isinstance(event, StepStart):
        return f"▶ {event.step} ({event.kind})"
    mark = {"done": "✓", "waiting": "⏸", "failed": "✗"}.get(event.status, "•")
    line = f"{mark} {event.step} {event.status} {event.seconds:.1f}s"
    if event.output is not None:
        text = event.output if isinstance(event.output, str) else json.dumps(event.output)
        first = text.strip().splitlines()[0] if text.strip() else ""
        line += f" → {first[:MAX_ARG]}{'…' if len(first) > MAX_ARG else ''}"
    return line


def shown_spec(path: Any) -> str:
    """The agent file as a command line names it (relative when under the current folder)."""
    import shlex

    from runner.errors import display_path

    return shlex.quote(display_path(path))


class PlainRenderer:
    def __init__(
        self, out: TextIO, err: TextIO, *, quiet: bool = False, spec: str = "SPEC"
    ) -> None:
        self.spec = spec
        self.out = out
        self.err = err
        self.quiet = quiet
        self.at_line_start = True
        self.tokens_in = 0
        self.thread_shown: str | None = None
        self.tokens_out = 0
        self.model_calls = 0
        self.cost: float | None = None
        """US dollars, when the spec prices the models (`model.price`)."""
        self.reported_usage = False
        self.depth: dict[str | None, int] = {None: 0}
        self.todos: dict[str | None, list[dict[str, Any]]] = {}
        """The todo list last printed, per agent (the `task` call id; None: the main agent)."""

    def _line(self, text: str, parent: str | None, step: str | None = None) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.at_line_start = True
        indent = "    " * (self.depth.get(parent, 0) + (1 if parent else 0) + (1 if step else 0))
        self.out.write(f"{indent}{text}\n")
        self.out.flush()

    def handle(self, event: RunEvent) -> None:  # noqa: C901 (one branch per kind of event)
        if self.quiet:
            if isinstance(event, Final) and event.structured_response is not None:
                self.out.write(self._json(event.structured_response))
            elif isinstance(event, Final):
                self.out.write(event.content + ("\n" if not event.content.endswith("\n") else ""))
            elif isinstance(event, Error):
                self.err.write(f"error: {event.message}\n")
            elif isinstance(event, RunWarning):
                self.err.write(f"warning: {event.message}\n")
            elif isinstance(event, Interrupt):
                self._interrupt(event)
            return
        if isinstance(event, Start):
            if (
                event.thread_id != self.thread_shown
            ):  # a resumed turn (after approval) is the same thread
                self.thread_shown = event.thread_id
                self.err.write(f"thread {event.thread_id}\n")
                self.err.flush()
        elif isinstance(event, TextDelta):
            if event.parent_id:
                return  # a subagent's text is summarised by its result
            self.out.write(event.text)
            self.out.flush()
            self.at_line_start = event.text.endswith("\n")
        elif isinstance(event, ToolCall):
            self._line(f"▸ {event.name}({short_args(event.args)})", event.parent_id, event.step)
        elif isinstance(event, Denied):
            self._line(f"  ⊘ denied by {event.rule}", event.parent_id, event.step)
        elif isinstance(event, ToolResult):
            mark = "✗" if event.status == "error" else "✓"
            text = f"  {mark} {summarize_result(event.content)}"
            self._line(text, event.parent_id, event.step)
        elif isinstance(event, StepStart | StepEnd):
            self._line(step_line(event), None)
        elif isinstance(event, TodosUpdate):
            if self.todos.get(event.parent_id) == event.todos:
                return  # unchanged: the same list again is noise
            self.todos[event.parent_id] = [dict(t) for t in event.todos]
            marks = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
            for todo in event.todos:
                self._line(
                    f"  {marks.get(todo.get('status', ''), '[ ]')} {todo.get('content', '')}",
                    event.parent_id,
                )
        elif isinstance(event, ModelCall):
            self.model_calls += 1
        elif isinstance(event, Usage):
            self.tokens_in += event.input_tokens
            self.tokens_out += event.output_tokens
            self.reported_usage = True
            if event.cost is not None:
                self.cost = (self.cost or 0.0) + event.cost
        elif isinstance(event, Final):
            if not self.at_line_start:
                self.out.write("\n")
                self.at_line_start = True
            if event.structured_response is not None:
                self.out.write(self._json(event.structured_response))
            tokens = (
                f"{self.tokens_in} in / {self.tokens_out} out"
                if self.reported_usage or not self.model_calls
                else "not reported"
            )
            cost = f"  cost: {human_cost(self.cost)}" if self.cost is not None else ""
            self.err.write(
                f"thread: {event.thread_id}  model calls: {self.model_calls}  tokens: {tokens}"
                f"{cost}\n"
            )
        elif isinstance(event, Interrupt):
            self._interrupt(event)
        elif isinstance(event, RunWarning):
            self.pause()
            self.err.write(f"warning: {event.message}\n")
            self.err.flush()
        elif isinstance(event, Error):
            if not self.at_line_start:
                self.out.write("\n")
            self.err.write(f"error: {event.message}\n")

    def auto_approved(self, action: Action) -> None:
        self.err.write(f"auto-approved {action.name}\n")

    def pause(self) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.at_line_start = True
        self.out.flush()

    @staticmethod
    def _json(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"

    def _interrupt(self, event: Interrupt) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.at_line_start = True
        questions = [a for a in event.actions if a.name == ASK_USER_TOOL]
        if questions:
            self.err.write(f"Waiting for an answer (thread {event.thread_id}):\n")
            for action in questions:
                self.err.write("".join(f"  {line}\n" for line in question_lines(action)))
        approvals = [a for a in event.actions if a.name != ASK_USER_TOOL]
        if approvals:
            self.err.write(f"Waiting for approval (thread {event.thread_id}):\n")
        for action in approvals:
            self.err.write(f"  {action.name}({short_args(action.args)})")
            self.err.write(f"  [{'/'.join(action.allowed_decisions)}]\n")
            if action.description:
                for line in action.description.splitlines():
                    self.err.write(f"      {line}\n")
        self.err.write(answer_hint(self.spec, event.thread_id, event.actions) + "\n")
