"""Rendering run events on a terminal with rich: what a person watching `agentctl run` sees.

The model's text streams as it arrives. Each tool call is one line (`● name(args)`) and, while it
runs, a spinner with its elapsed time below the printed lines; its result follows as a one-line
summary (`⎿ first line (+N lines, M chars)`). A subagent's work is indented under the `task` call
that started it (events carry that call's id as `parent_id`), and its streamed text shows in that
call's spinner rather than interleaved with the main agent's. The todo list prints whenever it
changes; the end of a turn prints the token usage and the thread id.

Only rendering lives here: the turn loop, approvals and the chat session drive it from outside.
When stdout is not a terminal, `runner.cli.render.PlainRenderer` is used instead.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runner.cli.render import result_summary, short_args
from runner.events import (
    ASK_USER_TOOL,
    Action,
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
from runner.spec.budgets import human_cost

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.spinner import Spinner
    from rich.text import Text

PROMPT_MARK = "\u276f"
"""The heavy angle quote before what a person types (escaped: ruff flags it as a `>`)."""

GUIDE = "│ "
"""The indentation of one level of subagent work."""

TODO_MARKS = {
    "completed": ("✔", "green"),
    "in_progress": ("▶", "bold yellow"),
    "pending": ("☐", "default"),
}


def human_tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 10_000 else f"{count:,}"


@dataclass
class _Running:
    call: ToolCall
    depth: int
    started: float = field(default_factory=time.monotonic)
    spinner: Spinner | None = None
    subagent_text: str = ""
    named: bool = False
    """Its line began with the subagent's name (several were working at once)."""


@dataclass
class _Turn:
    started: float = field(default_factory=time.monotonic)
    paused: float = 0.0
    """Seconds spent waiting for the user (approvals), left out of the turn's duration."""
    tokens_in: int = 0
    tokens_out: int = 0
    reported_usage: bool = False
    """A provider reported token usage (without any, the tokens are not shown: not 0)."""
    model_calls: int = 0
    cost: float | None = None
    """US dollars, when the spec prices the models (`model.price`)."""


class TerminalRenderer:
    """Renders one session's events on a rich `Console` (a terminal)."""

    def __init__(
        self,
        console: Console,
        *,
        err_console: Console | None = None,
        show_thread: bool = True,
        spinners: bool = True,
        spec: str = "SPEC",
    ) -> None:
        self.spec = spec
        self.console = console
        self.err = err_console or console
        self.show_thread = show_thread
        self.spinners = spinners
        self.thread_id: str | None = None
        self.turn = _Turn()
        self.running: dict[str, _Running] = {}
        self.depth: dict[str, int] = {}
        self.todos: dict[str | None, list[dict[str, Any]]] = {}
        self.mid_line = False
        self.thinking = False
        self.last_call: str | None = None
        """The tool call printed last, if nothing was printed after it."""
        self.lines_since_text = False
        self.turn_open = False
        self._paused_at: float | None = None
        self._live: Live | None = None
        self._thinking: Spinner | None = None

    # ------------------------------------------------------------------ public

    def handle(self, event: RunEvent) -> None:
        if isinstance(event, Start):
            self._start(event)
        elif isinstance(event, TextDelta):
            self._text(event)
        elif isinstance(event, ToolCall):
            self._tool_call(event)
        elif isinstance(event, ToolResult):
            self._tool_result(event)
        elif isinstance(event, TodosUpdate):
            self._todos(event)
        elif isinstance(event, ModelCall):
            self.turn.model_calls += 1
        elif isinstance(event, Usage):
            self.turn.tokens_in += event.input_tokens
            self.turn.tokens_out += event.output_tokens
            self.turn.reported_usage = True
            if event.cost is not None:
                self.turn.cost = (self.turn.cost or 0.0) + event.cost
        elif isinstance(event, Final):
            self._final(event)
        elif isinstance(event, Interrupt):
            self._waiting(event)
        elif isinstance(event, RunWarning):
            self._settle()
            self.err.print(f"[bold yellow]! warning:[/] {_escape(event.message)}", highlight=False)
        elif isinstance(event, Error):
            self._settle()
            self.err.print(f"[bold red]✗ error:[/] {_escape(event.message)}", highlight=False)
            self._end_turn(failed=True)
        elif isinstance(event, StepStart | StepEnd):
            self._step(event)
        self._update_live()

    def _step(self, event: StepStart | StepEnd) -> None:
        """A workflow step's line: when it starts, and its status and time when it ends (its
        agent's tool calls are indented under it)."""
        from rich.text import Text

        from runner.cli.render import step_line

        self._settle()
        style = {"done": "green", "waiting": "yellow", "failed": "red"}
        color = style.get(event.status, "cyan") if isinstance(event, StepEnd) else "bold cyan"
        self._print(Text(step_line(event), style=color), 0)

    def pause(self) -> None:
        """Stop the spinners and end a half-written line before prompting the user; the time
        until the turn goes on is not counted in its duration."""
        self._settle()
        self._paused_at = time.monotonic()

    def show_todos(self, todos: list[dict[str, Any]], *, depth: int = 0) -> None:
        from rich.text import Text

        for todo in todos:
            mark, style = TODO_MARKS.get(str(todo.get("status")), TODO_MARKS["pending"])
            line = Text("  ")
            line.append(mark + " ", style=style)
            done = todo.get("status") == "completed"
            line.append(str(todo.get("content", "")), style="dim" if done else style)
            self._print(line, depth)

    def auto_approved(self, action: Action) -> None:
        self._settle()
        self.console.print(f"[green]  ✓ auto-approved {action.name}[/]", highlight=False)

    def cancelled(self, note: str) -> None:
        """The user pressed Ctrl-C during the turn: stop rendering it and say so."""
        self._settle()
        self.running.clear()
        self.thinking = False
        self.turn_open = False
        self.console.print(f"[yellow]⏹ {_escape(note)}[/]", highlight=False)

    # ------------------------------------------------------------------ events

    def _start(self, event: Start) -> None:
        if self.thread_id is None and self.show_thread:
            self.console.print(f"[dim]thread {event.thread_id}[/]", highlight=False)
        self.thread_id = event.thread_id
        if not self.turn_open:
            self.turn, self.turn_open = _Turn(), True
            self.last_call, self.lines_since_text = None, False
        elif self._paused_at is not None:
            self.turn.paused += time.monotonic() - self._paused_at
        self._paused_at = None
        self.thinking = True

    def _text(self, event: TextDelta) -> None:
        if event.parent_id is not None:
            running = self.running.get(event.parent_id)
            if running is not None:  # shown in the spinner of the `task` call
                running.subagent_text = (running.subagent_text + event.text)[-400:]
            return
        self.thinking = False
        self._stop_live()
        if not self.mid_line and self.lines_since_text:
            self.console.file.write("\n")  # a blank line between tool output and new text
        self.lines_since_text = False
        self.console.file.write(event.text)
        self.console.file.flush()
        self.mid_line = not event.text.endswith("\n")

    def _tool_call(self, event: ToolCall) -> None:
        self._end_line()
        depth = self._depth_of(event.parent_id) + (1 if event.step else 0)
        self.depth[event.id] = depth + 1
        running = self.running[event.id] = _Running(event, depth)
        if event.parent_id is None:
            self.thinking = False
        who = self._who(event)
        running.named = bool(who)
        self._print(who + self._call_line(event), depth)
        self.last_call = event.id

    def _tool_result(self, event: ToolResult) -> None:
        running = self.running.pop(event.id, None)
        depth = running.depth if running else self._depth_of(event.parent_id) + bool(event.step)
        if not self.running and event.parent_id is None:
            self.thinking = True
        if event.name == "write_todos" and event.status != "error":
            return  # the list itself is shown by the `todos` event
        from rich.text import Text

        first, size = result_summary(event.content)
        who = self._who(event, named=running is not None and running.named)
        line = who + Text("  ⎿ ", style="dim")
        if event.id != self.last_call:  # other lines came between the call and its result
            label = event.name
            if running is not None and event.name == "task":
                label += f" → {running.call.args.get('subagent_type', '?')}"
            line.append(f"{label}: ", style="dim")
        if event.status == "error" or event.content.startswith("Error"):
            line.append("✗ " + first, style="red")
        else:
            line.append(first or "(empty)", style="dim" if first else "dim italic")
        if size:
            line.append(f"  ({size})", style="dim")
        self._print(line, depth)

    def _todos(self, event: TodosUpdate) -> None:
        if self.todos.get(event.parent_id) == event.todos:
            return
        self.todos[event.parent_id] = [dict(t) for t in event.todos]
        self._end_line()
        self.show_todos(event.todos, depth=self._depth_of(event.parent_id))

    def _final(self, event: Final) -> None:
        self._settle()
        if event.structured_response is not None:
            from rich.json import JSON

            self.console.print(JSON(json.dumps(event.structured_response, ensure_ascii=False)))
        self._end_turn(failed=False)

    def _waiting(self, event: Interrupt) -> None:
        """An approval nobody can answer here (no terminal to ask on): say how to answer it."""
        from runner.cli.render import answer_hint, question_lines

        self._settle()
        for action in event.actions:
            if action.name == ASK_USER_TOOL:
                first, *choices = question_lines(action)
                self.err.print(f"[bold yellow]? {_escape(first)}[/]", highlight=False)
                for line in choices:
                    self.err.print(_escape(line), highlight=False)
                continue
            self.err.print(
                f"[bold yellow]⏸ waiting for approval:[/] [bold]{action.name}[/]"
                f"[dim]({_escape(short_args(action.args))})[/]",
                highlight=False,
            )
        hint = answer_hint(self.spec, event.thread_id, event.actions)
        self.err.print(f"[dim]{_escape(hint)}[/]", highlight=False)
        self.thinking = False
        self.turn_open = False

    # ------------------------------------------------------------------ helpers

    def _end_turn(self, *, failed: bool) -> None:
        turn = self.turn
        self.turn_open = False
        self.thinking = False
        self.running.clear()
        seconds = time.monotonic() - turn.started - turn.paused
        parts = [f"{'✗ failed' if failed else '✓ done'} in {seconds:.1f}s"]
        if turn.model_calls:
            parts.append(f"{turn.model_calls} model call{'s' if turn.model_calls != 1 else ''}")
        if turn.reported_usage or not turn.model_calls:
            parts.append(
                f"tokens {human_tokens(turn.tokens_in)} in / {human_tokens(turn.tokens_out)} out"
            )
        else:
            parts.append("no token usage reported")
        if turn.cost is not None:
            parts.append(f"cost {human_cost(turn.cost)}")
        parts.append(f"thread {self.thread_id}")
        self.console.print(f"[dim]{' · '.join(parts)}[/]", highlight=False)

    def _who(self, event: ToolCall | ToolResult, *, named: bool = False) -> Text:
        """The subagent's name before its lines while several subagents work at once (and
        before a result whose call had it)."""
        from rich.text import Text

        parallel = sum(1 for r in self.running.values() if r.call.name == "task") > 1
        shown = event.parent_id is not None and (parallel or named)
        return Text(f"{event.agent} ", style="magenta") if shown else Text()

    def _depth_of(self, parent_id: str | None) -> int:
        return self.depth.get(parent_id, 1) if parent_id is not None else 0

    def _call_line(self, call: ToolCall) -> Text:
        from rich.text import Text

        line = Text()
        line.append("● ", style="cyan")
        line.append(call.name, style="bold")
        if call.name == "task":
            args = dict(call.args)
            who = str(args.pop("subagent_type", "?"))
            line.append(f" → {who} ", style="bold magenta")
            line.append(str(args.pop("description", "")).replace("\n", " "), style="dim")
        elif call.name != "write_todos":
            line.append(f"({short_args(call.args)})", style="dim")
        return line

    def _print(self, line: Text, depth: int) -> None:
        from rich.text import Text

        full = Text(GUIDE * depth, style="dim") + line
        full.truncate(max(self.console.width, 20), overflow="ellipsis")
        self.last_call = None  # a result printed after this line names its call
        self.lines_since_text = True
        self.console.print(full, no_wrap=True, overflow="ellipsis", highlight=False)

    def _settle(self) -> None:
        self._stop_live()
        self._end_line()

    def _end_line(self) -> None:
        if self.mid_line:
            self.console.file.write("\n")
            self.console.file.flush()
            self.mid_line = False

    # ------------------------------------------------------------------ live status

    def _status(self) -> RenderableType:
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.text import Text

        now = time.monotonic()
        lines: list[RenderableType] = []
        for running in list(self.running.values()):
            if running.spinner is None:
                running.spinner = Spinner("dots", style="cyan")
            line = Text(GUIDE * running.depth, style="dim")
            frame = running.spinner.render(now)
            line.append_text(frame if isinstance(frame, Text) else Text(str(frame)))
            line.append(f" {running.call.name}", style="bold")
            tail = running.subagent_text.strip().splitlines()
            if tail:
                line.append(f"  {tail[-1].strip()}", style="dim italic")
            line.append(f"  {now - running.started:.0f}s", style="dim")
            line.truncate(max(self.console.width, 20), overflow="ellipsis")
            lines.append(line)
        if not lines and self.thinking:
            if self._thinking is None:  # one spinner, so its frames advance
                self._thinking = Spinner("dots", text=Text("thinking…", style="dim"), style="cyan")
            lines.append(self._thinking)
        return Group(*lines)

    def _update_live(self) -> None:
        wanted = self.spinners and (self.running or self.thinking) and not self.mid_line
        if wanted and self._live is None:
            from rich.live import Live

            self._live = Live(
                get_renderable=self._status,
                console=self.console,
                transient=True,
                refresh_per_second=12,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        elif not wanted:
            self._stop_live()

    def _stop_live(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
