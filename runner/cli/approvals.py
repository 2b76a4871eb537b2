"""Asking a person, in the terminal, about the tool calls that wait for approval.

For each waiting action the prompt shows which agent asks, the tool, the spec's description and
the arguments as YAML, then offers the decisions the spec allows for it (approve / edit /
reject). Edit opens the arguments as YAML in `$VISUAL` or `$EDITOR`, or in an inline editor when
neither is set; text that is not YAML, or not a mapping, is refused with the reason and the
choice is offered again (editing again starts from what was typed). Reject asks for an optional
reason, which the agent reads.

The prompts write to stderr, so `agentctl run agent.yaml "..." > answer.md` still asks on the
terminal. Ctrl-C while asking leaves the approval pending (the caller treats it as cancelling
the turn).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from typing import TYPE_CHECKING, Any

from runner.cli.terminal import PROMPT_MARK
from runner.events import ASK_USER_TOOL, Action, Interrupt
from runner.run import Decision

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from rich.console import Console

SHOWN_LINES = 40
"""Argument lines shown in the prompt; choosing edit shows them all."""

CHOICES = {"approve": "a", "edit": "e", "reject": "r"}
ALIASES = {"y": "approve", "yes": "approve", "n": "reject", "no": "reject"}


def args_to_yaml(args: dict[str, Any]) -> str:
    """The arguments as YAML a person can read and edit: multi-line strings as `|` blocks."""
    import yaml

    class BlockDumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    BlockDumper.add_representer(str, text)
    return yaml.dump(
        args, Dumper=BlockDumper, sort_keys=False, allow_unicode=True, default_flow_style=False
    )


_KINDS: dict[type, str] = {
    type(None): "nothing",
    bool: "true or false",
    int: "a number",
    float: "a number",
    str: "text",
    list: "a list",
}
"""How YAML values a person typed are named back to them."""


def parse_edited_args(text: str) -> dict[str, Any] | str:
    """The edited arguments, or why they cannot be used (a sentence for the person)."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return f"not valid YAML{where}: {problem}"
    if not isinstance(value, dict):
        found = _KINDS.get(type(value), f"a {type(value).__name__}")
        return f"the arguments must be a mapping of names to values (`path: /a.md`), found {found}"
    if not all(isinstance(key, str) for key in value):
        return "every argument name must be text"
    return value


def decision_choices(action: Action) -> dict[str, str]:
    """Answer key (`a`, `e`, `r`) -> decision, for the decisions the spec allows here."""
    return {key: name for name, key in CHOICES.items() if name in action.allowed_decisions}


def read_choice(answer: str, choices: dict[str, str]) -> str | None:
    """The decision an answer means (`a`, `approve`, `Y`, `no`...), or None when it means none
    of the allowed ones."""
    answer = answer.strip().lower()
    name = choices.get(answer) or ALIASES.get(answer) or answer
    return name if name in choices.values() else None


def pick_choice(typed: str, choices: list[str]) -> str | None:
    """The answer `typed` gives: the choice it names or numbers (1-based), any non-empty text
    when there are no choices; None when it gives none."""
    if not choices:
        return typed or None
    if typed.isdigit() and 1 <= int(typed) <= len(choices):
        return choices[int(typed) - 1]
    return next((c for c in choices if c.lower() == typed.lower()), None)


class TerminalApprover:
    """Asks about every action of an `Interrupt` and returns one `Decision` per action."""

    def __init__(self, console: Console, *, prompt_output: Any = None) -> None:
        self.console = console
        self._prompt_output = prompt_output
        self._session: PromptSession[str] | None = None

    def decide(self, interrupt: Interrupt) -> list[Decision]:
        decisions = []
        total = len(interrupt.actions)
        for number, action in enumerate(interrupt.actions, 1):
            decisions.append(self.decide_one(action, number, total))
        return decisions

    # ------------------------------------------------------------------ one action

    def decide_one(self, action: Action, number: int = 1, total: int = 1) -> Decision:
        """Ask about one action: an approval, or the agent's question (`ask_user`)."""
        if action.name == ASK_USER_TOOL:
            return self._answer(action, number, total)
        self._show(action, number, total)
        choices = decision_choices(action)
        menu = "  ".join(f"[{key}] {name}" for key, name in choices.items())
        draft: str | None = None
        while True:
            answer = self._ask(f"{menu}  {PROMPT_MARK} ")
            chosen = read_choice(answer, choices)
            if chosen is None:
                allowed = ", ".join(f"{key} ({name})" for key, name in choices.items())
                self.console.print(f"[yellow]  answer with {allowed}[/]", highlight=False)
                continue
            if chosen == "approve":
                self.console.print(f"[green]  ✓ approved {action.name}[/]", highlight=False)
                return Decision("approve")
            if chosen == "reject":
                reason = self._ask(f"  reason for the agent (optional) {PROMPT_MARK} ").strip()
                self.console.print(f"[red]  ✗ rejected {action.name}[/]", highlight=False)
                return Decision("reject", message=reason or None)
            edited = self._edit(action, draft if draft is not None else args_to_yaml(action.args))
            if edited is None:
                continue
            draft = edited
            parsed = parse_edited_args(draft)
            if isinstance(parsed, str):
                self.console.print(f"[red]  ✗ {_escape(parsed)}[/]", highlight=False)
                continue
            self._show_args(parsed, title="edited arguments")
            self.console.print(
                f"[green]  ✓ {action.name} runs with the edited arguments[/]", highlight=False
            )
            return Decision("edit", args=parsed)

    def _answer(self, action: Action, number: int, total: int) -> Decision:
        """The agent's question, its choices numbered: a number or a choice's text picks one;
        without choices any non-empty text answers."""
        from rich.text import Text

        from runner.cli.render import question_lines

        counter = f" ({number} of {total})" if total > 1 else ""
        first, *choices = question_lines(action)
        self.console.print()
        self.console.print(Text("? " + first + counter, style="bold yellow"))
        for line in choices:
            self.console.print(Text(line))
        offered = [str(c) for c in action.args.get("choices") or ()]
        while True:
            typed = self._ask(f"answer {PROMPT_MARK} ").strip()
            picked = pick_choice(typed, offered)
            if picked is not None:
                self.console.print(f"[green]  ✓ answered {_escape(picked)}[/]", highlight=False)
                return Decision.answer(picked)
            hint = f"a number from 1 to {len(offered)}, or a choice" if offered else "some text"
            self.console.print(f"[yellow]  answer with {hint}[/]", highlight=False)

    def _show(self, action: Action, number: int, total: int) -> None:
        from rich.text import Text

        who = action.agent or "the agent"
        counter = f" ({number} of {total})" if total > 1 else ""
        self.console.print()
        heading = Text("⏸ approval needed" + counter, style="bold yellow")
        heading.append(f"  {who} wants to call ", style="default")
        heading.append(action.name, style="bold")
        self.console.print(heading)
        description = _without_call(action.description or "", action.name)
        if description:
            self.console.print(Text("  " + description, style="italic"))
        self._show_args(action.args)

    def _show_args(self, args: dict[str, Any], *, title: str = "arguments") -> None:
        from rich.panel import Panel
        from rich.syntax import Syntax

        lines = args_to_yaml(args).rstrip("\n").splitlines() if args else ["{}"]
        shown = "\n".join(lines[:SHOWN_LINES])
        if len(lines) > SHOWN_LINES:
            shown += f"\n# … {len(lines) - SHOWN_LINES} more lines (choose edit to see them all)"
        self.console.print(
            Panel(
                Syntax(shown, "yaml", theme="ansi_dark", background_color="default"),
                title=title,
                title_align="left",
                border_style="dim",
                expand=False,
            )
        )

    # ------------------------------------------------------------------ input

    def _prompt(self) -> PromptSession[str]:
        if self._session is None:
            from prompt_toolkit import PromptSession

            self._session = PromptSession(output=self._prompt_output)
        return self._session

    def _ask(self, message: str) -> str:
        # prompt() keeps its arguments on the session: say multiline=False every time
        return self._prompt().prompt(message, multiline=False)

    def _edit(self, action: Action, text: str) -> str | None:
        """The edited text; None when the editor failed (nothing is decided then)."""
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.console.print(
                "[dim]  edit the arguments below; Esc then Enter to finish[/]", highlight=False
            )
            return self._prompt().prompt("", default=text, multiline=True)
        with tempfile.NamedTemporaryFile(
            "w", suffix=f"-{action.name}.yaml", delete=False, encoding="utf-8"
        ) as handle:
            handle.write(text)
            path = handle.name
        try:
            self.console.print(f"[dim]  opening {_escape(editor)}…[/]", highlight=False)
            try:
                done = subprocess.run([*shlex.split(editor), path], check=False)
            except OSError as exc:
                self.console.print(
                    f"[red]  ✗ cannot start the editor {_escape(editor)}: {_escape(str(exc))}[/]",
                    highlight=False,
                )
                return None
            if done.returncode != 0:
                self.console.print(
                    f"[red]  ✗ the editor exited with code {done.returncode}; nothing changed[/]",
                    highlight=False,
                )
                return None
            with open(path, encoding="utf-8") as edited:
                return edited.read()
        finally:
            os.unlink(path)


def _without_call(description: str, tool: str) -> str:
    """The description without the `Tool: NAME / Args: ...` paragraph LangChain appends to its
    default one: the arguments are shown below it, readably."""
    paragraphs = description.strip().split("\n\n")
    return "\n\n".join(p for p in paragraphs if not p.startswith(f"Tool: {tool}\n")).strip()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
