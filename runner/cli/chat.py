"""The interactive session: `agentctl run SPEC` with no message, on a terminal.

One thread for the whole session (`/new` starts another). Every message is a turn rendered as it
happens; approvals are asked in place. Ctrl-C cancels the turn in progress and keeps the thread:
the next message goes on from the last completed step (`runner.cli.turns` explains why that is
safe). Ctrl-D or `/exit` leaves. The input line has history (arrow keys, Ctrl-R), kept in
`$AGENTCTL_HOME/history`, and completes the slash commands.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from runner.cli.turns import (
    TurnRunner,
    finish_cancelled,
    play_turn,
    stderr_console,
    stdout_console,
    terminal_approver,
)
from runner.errors import RunError
from runner.events import ASK_USER_TOOL, Interrupt
from runner.run import Decision

if TYPE_CHECKING:
    from rich.console import Console

    from runner.cli.approvals import TerminalApprover
    from runner.cli.terminal import TerminalRenderer
    from runner.run import Session
    from runner.run.attachments import Attachment

COMMANDS = {
    "/help": "these commands and keys",
    "/thread": "the thread id, and how to come back to it later",
    "/todos": "the agent's todo list",
    "/files": "the files the agent sees in its backend",
    "/continue": "finish a turn that was cut off (Ctrl-C, a crash)",
    "/attach": "/attach FILE: send FILE with your next message (image, text, any file)",
    "/new": "start a new thread",
    "/exit": "leave the session (also Ctrl-D)",
}

KEYS = [
    ("↑ ↓", "earlier messages (those starting with what is typed); Ctrl-R searches"),
    ("Ctrl-C", "cancel the turn in progress (the thread is kept)"),
    ("Ctrl-D", "leave"),
]

CANCELLED = "cancelled; the thread is kept: send a message to go on, or /continue the turn"
WAITING = "the approval still waits: /continue to answer it, or send a message to skip it"


def history_path() -> Path:
    from runner.run import default_home

    return default_home() / "history"


@dataclass
class Chat:
    session: Session
    spec: Path
    console: Console
    renderer: TerminalRenderer
    approver: TerminalApprover | None
    auto_approve: bool
    thread_id: str | None = None
    attachments: list[Attachment] = field(default_factory=list)
    """Files `/attach` queued for the next message."""

    def __post_init__(self) -> None:
        self.turns = TurnRunner(self.session)

    # ------------------------------------------------------------------ the loop

    def run(self) -> int:
        self._banner()
        if self.thread_id is not None:
            self._reopen(self.thread_id)
        prompt = self._prompt_session()
        while True:
            try:
                text = prompt.prompt(self._prompt_message())
            except KeyboardInterrupt:
                continue  # clears the line, as in a shell
            except EOFError:
                break
            text = text.strip()
            if not text:
                continue
            if text.startswith("/") and not text.startswith("//"):
                if self._command(text) == "exit":
                    break
                continue
            self._turn(text[1:] if text.startswith("//") else text)
        self._leave()
        return 0

    def _turn(self, message: str | None, decisions: list[Decision] | None = None) -> None:
        if not self._settled():
            return
        try:
            with self.session.holding_threads():  # asking and answering: one hold on the thread
                play_turn(
                    self.turns,
                    self.renderer,
                    message=message,
                    thread_id=self.thread_id,
                    decisions=decisions,
                    auto_approve=self.auto_approve,
                    approver=self.approver,
                    attachments=self.attachments if message is not None else (),
                )
                if message is not None:
                    self.attachments = []
        except KeyboardInterrupt:
            tid = self.renderer.thread_id
            waiting = tid is not None and not self.turns.busy and self.session.pending(tid)
            self.renderer.cancelled(WAITING if waiting else CANCELLED)
        self.thread_id = self.renderer.thread_id or self.thread_id
        self.console.print()

    def _settled(self) -> bool:
        """Wait for a cancelled turn's last step to finish (Ctrl-C stops waiting)."""
        if not self.turns.busy:
            return True
        try:
            with self.console.status("[dim]finishing the cancelled step…[/]"):
                self.turns.wait()
        except KeyboardInterrupt:
            self.console.print("[yellow]still finishing the cancelled step; try again soon[/]")
            return False
        return True

    def _leave(self) -> None:
        finish_cancelled(
            self.turns, self.session, note="Finishing the cancelled step before leaving"
        )
        if self.thread_id:
            self.console.print(
                f"[dim]thread {self.thread_id} is saved; continue it with "
                f"{escape(self._resume_command())}[/]",
                highlight=False,
            )

    def _resume_command(self) -> str:
        from runner.run import default_home

        command = f"agentctl run {shlex.quote(str(self.spec))} --thread {self.thread_id}"
        if self.session.home.path != default_home() / "agentctl.db":
            command += f" --db {shlex.quote(str(self.session.home.path))}"
        return command

    # ------------------------------------------------------------------ commands

    def _command(self, text: str) -> str | None:
        name = text.split()[0].lower()
        if name in ("/exit", "/quit"):
            return "exit"
        if name == "/help":
            self._help()
        elif name == "/thread":
            self._show_thread()
        elif name == "/todos":
            self._show_todos()
        elif name == "/files":
            self._show_files()
        elif name == "/new":
            self.thread_id = None
            self.renderer.thread_id = None
            self.renderer.todos.clear()
            self.console.print("[dim]new thread: it starts with your next message[/]")
        elif name == "/attach":
            self._attach(text.split(maxsplit=1)[1] if len(text.split()) > 1 else "")
        elif name == "/continue":
            if self.thread_id is None:
                self.console.print("[yellow]no thread yet: send a message first[/]")
            elif self._settled() and not self._answer_pending(self.thread_id):
                self._turn(None)
        else:
            self.console.print(
                f"[yellow]unknown command {name}; /help lists them "
                "(start with // to send a message that begins with /)[/]",
                highlight=False,
            )
        return None

    def _attach(self, argument: str) -> None:
        """Queue a file for the next message (checked now: a missing file, an image the model
        cannot take)."""
        from runner.run.attachments import check_images, read_attachment

        if not argument.strip():
            queued = ", ".join(a.name for a in self.attachments) or "nothing"
            self.console.print(
                f"[dim]usage: /attach FILE; queued for your next message: {escape(queued)}[/]"
            )
            return
        try:
            path = Path(" ".join(shlex.split(argument))).expanduser()
        except ValueError:  # an unclosed quote
            path = Path(argument.strip()).expanduser()
        try:
            attachment = read_attachment(path)
            check_images(self.session.resolved, [attachment])
        except RunError as exc:
            self.console.print(f"[red]{escape(str(exc).removeprefix('--attach '))}[/]")
            return
        self.attachments.append(attachment)
        self.console.print(
            f"[dim]attached {escape(attachment.describe())}; it goes with your next message[/]"
        )

    def _help(self) -> None:
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        for name, text in COMMANDS.items():
            table.add_row(f"[bold]{name}[/]", text)
        for key, text in KEYS:
            table.add_row(f"[bold]{key}[/]", text)
        self.console.print(table)

    def _show_thread(self) -> None:
        if self.thread_id is None:
            self.console.print("[dim]no thread yet: it starts with your first message[/]")
            return
        if not self._settled():
            return
        count = len(self.session.values(self.thread_id).get("messages", []))
        self.console.print(
            f"thread [bold]{self.thread_id}[/] · agent {self.session.name} · "
            f"{count} messages · {escape(str(self.session.home.path))}",
            highlight=False,
        )
        self.console.print(
            f"[dim]continue it later with: {escape(self._resume_command())}[/]", highlight=False
        )

    def _show_todos(self) -> None:
        todos = None
        if self.thread_id is not None and self._settled():
            todos = self.session.values(self.thread_id).get("todos")
        if not todos:
            self.console.print("[dim]no todos yet[/]")
            return
        self.renderer.show_todos(todos)

    def _show_files(self) -> None:
        from runner.backends import BackendError

        if not self._settled():
            return
        try:
            files = self.session.files(self.thread_id)
        except BackendError as exc:
            self.console.print(f"[yellow]{escape(str(exc))}[/]", highlight=False)
            return
        if not files:
            self.console.print("[dim]no files yet[/]")
            return
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        for info in files:
            size = f"{info.size:,} B" if info.size is not None else ""
            table.add_row(escape(info.path), f"[dim]{size}[/]")
        self.console.print(table)

    # ------------------------------------------------------------------ opening

    def _banner(self) -> None:
        from rich.panel import Panel
        from rich.text import Text

        text = Text()
        text.append(self.session.name, style="bold cyan")
        if self.session.spec.description:
            text.append(f"  {self.session.spec.description}")
        text.append(f"\nmodel {shown_model(self.session.resolved.model.id)}", style="dim")
        text.append("\n/help for commands · Ctrl-C cancels a turn · Ctrl-D exits", style="dim")
        self.console.print(Panel(text, expand=False, border_style="cyan"))

    def _reopen(self, thread_id: str) -> None:
        """Open the session on a saved thread: say where it stands and ask what waits."""
        home = self.session.home
        info = home.thread(thread_id)
        values = self.session.values(thread_id)
        if info is None and not values:
            raise RunError(f"no thread {thread_id!r} in {home.path}")
        messages = values.get("messages", [])
        self.renderer.thread_id = thread_id
        self.console.print(
            f"[dim]thread {thread_id} · {len(messages)} messages so far[/]", highlight=False
        )
        last_ai = next((m for m in reversed(messages) if m.type == "ai" and m.text), None)
        if last_ai is not None:
            self.console.print(f"[dim]last answer:[/] {escape(_first_line(last_ai.text))}")
        if self._answer_pending(thread_id):
            return
        state = self.session.state(thread_id)
        if state.next or state.tasks:
            self.console.print(
                "[yellow]the last turn on this thread was cut off: /continue finishes it, a new "
                "message starts a new turn[/]"
            )

    def _answer_pending(self, thread_id: str) -> bool:
        """Ask about the approvals the thread waits on, then go on with the turn; False when
        nothing waits."""
        pending = [a for _, actions in self.session.pending(thread_id) for a in actions]
        if not pending:
            return False
        interrupt = Interrupt(agent=self.session.name, thread_id=thread_id, actions=pending)
        try:
            if self.approver is None:
                decisions = [Decision("approve")] * len(pending)
            elif self.auto_approve:  # approvals approved, questions still asked
                decisions = [
                    self.approver.decide_one(a) if a.name == ASK_USER_TOOL else Decision("approve")
                    for a in pending
                ]
            else:
                decisions = self.approver.decide(interrupt)
        except KeyboardInterrupt:
            self.renderer.cancelled(WAITING)
            return True
        self._turn(None, decisions=decisions)
        return True

    # ------------------------------------------------------------------ input

    def _prompt_session(self) -> Any:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory

        path = history_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        completer = WordCompleter(list(COMMANDS), sentence=True, pattern=None)
        return PromptSession(
            history=FileHistory(str(path)),
            completer=completer,
            enable_history_search=True,  # ↑ after typing a few letters finds what starts so
        )

    def _prompt_message(self) -> Any:
        from prompt_toolkit.formatted_text import FormattedText

        from runner.cli.terminal import PROMPT_MARK

        return FormattedText([("ansicyan bold", f"{PROMPT_MARK} ")])


def shown_model(model_id: str) -> str:
    """The model as the person would write it: a replay cassette relative to the working folder."""
    if model_id.startswith("replay:"):
        from runner.errors import display_path

        return "replay:" + display_path(Path(model_id.removeprefix("replay:")))
    return model_id


def _first_line(text: str, limit: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def chat(session: Session, *, spec: Path, thread_id: str | None, auto_approve: bool) -> int:
    """Run an interactive session on `session` until the person leaves; the exit code."""
    from runner.cli.terminal import TerminalRenderer

    console = stdout_console()
    renderer = TerminalRenderer(console, err_console=stderr_console(), show_thread=False)
    approver = terminal_approver()  # questions are asked even with --auto-approve
    return Chat(session, spec, console, renderer, approver, auto_approve, thread_id).run()
