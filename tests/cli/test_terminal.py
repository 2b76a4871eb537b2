"""`agentctl run` in a terminal, driven through a pseudo-terminal as a person would use it:
the interactive session, approvals asked in place, Ctrl-C, history; and plain text elsewhere."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.conftest import ROOT, run_cli

ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]|\x1b[=>78]"
)
THREAD = re.compile(r"thread (\d{8}-\d{6}-[0-9a-f]{6})")
CTRL_C, CTRL_D, UP, ESC_ENTER = "\x03", "\x04", "\x1b[A", "\x1b\r"


class Terminal:
    """An agentctl process on a pseudo-terminal; `expect` waits for text on its screen (colour
    and cursor codes removed), each match moving past the previous one."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        full_env = {
            **os.environ,
            "AGENTCTL_HOME": str(cwd / "home"),
            "TERM": "xterm-256color",
            "PROMPT_TOOLKIT_NO_CPR": "1",  # no cursor position requests: nobody answers them
            **(env or {}),
        }
        # the pty's size rules, not COLUMNS/LINES inherited from whatever runs the tests
        for name in ("AGENTCTL_DEBUG", "EDITOR", "VISUAL", "NO_COLOR", "COLUMNS", "LINES"):
            if name not in (env or {}):
                full_env.pop(name, None)
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "runner", *args],
            cwd=str(cwd),
            env=full_env,
            dimensions=(40, 140),
            encoding="utf-8",
            # A terminal user's Ctrl-C interrupts, even when the tests were started in the
            # background (where the shell has the children ignore SIGINT).
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.raw = ""
        self.position = 0

    @property
    def screen(self) -> str:
        return ANSI.sub("", self.raw).replace("\r", "")

    def _read(self) -> None:
        with contextlib.suppress(pexpect.TIMEOUT):
            self.raw += self.child.read_nonblocking(65536, timeout=0.1)

    def expect(self, text: str, timeout: float = 20) -> str:
        """Wait for `text`; returns the screen from the previous match up to this one."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen
            found = screen.find(text, self.position)
            if found >= 0:
                seen, self.position = screen[self.position : found], found + len(text)
                return seen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not on the screen; it shows:\n{screen[-3000:]}")
            try:
                self._read()
            except pexpect.EOF:
                raise AssertionError(
                    f"{text!r} not on the screen before agentctl exited:\n{screen[-3000:]}"
                ) from None

    def send(self, text: str) -> None:
        self.child.send(text)

    def line(self, text: str) -> None:
        self.child.send(text + "\r")

    def exit_status(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while self.child.isalive() and time.monotonic() < deadline:
            try:
                self._read()
            except pexpect.EOF:
                break
        self.child.close()
        assert self.child.exitstatus is not None, self.screen[-2000:]
        return int(self.child.exitstatus)


@pytest.fixture
def calc(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tests" / "data" / "terminal", tmp_path / "terminal")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    return tmp_path / "terminal"


@pytest.mark.slow
def test_session_turns_approval_edited_in_editor_and_ctrl_c(calc: Path) -> None:
    editor = f"{sys.executable} {calc / 'edit_args.py'}"
    term = Terminal("run", "agent.yaml", cwd=calc, env={"EDITOR": editor})
    term.expect("calc  Adds numbers and shouts when allowed")
    term.expect("model replay:calc.cassette.yaml")
    term.expect("\u276f")

    # turn 1: streamed text, a tool call with its arguments, its result, the usage line
    term.line("add please")
    term.expect("Adding now.")
    term.expect("● add(a=2, b=3)")
    term.expect("⎿ 5")
    term.expect("The sum is 5.")
    usage = term.expect("\u276f")
    assert re.search(r"✓ done in [\d.]+s · 2 model calls · tokens [\d,]+ in / \d+ out", usage)
    match = THREAD.search(usage)
    assert match, usage
    thread = match.group(1)

    # turn 2: the approval shows tool, agent, description and arguments; edit in $EDITOR
    term.line("shout")
    term.expect("Now shouting.")
    term.expect("⏸ approval needed  calc wants to call shout")
    term.expect("Shouting needs a yes")
    term.expect("text: hello")
    term.expect("[a] approve  [e] edit  [r] reject")
    term.line("e")
    term.expect("text: goodbye")
    term.expect("✓ shout runs with the edited arguments")
    term.expect("⎿ GOODBYE")
    term.expect("I shouted.")
    term.expect(f"thread {thread}")
    term.expect("\u276f")

    # turn 3: Ctrl-C while the model is slow cancels the turn and keeps the thread
    term.line("slow")
    term.expect("thinking…")
    term.send(CTRL_C)
    term.expect("⏹ cancelled; the thread is kept")
    term.expect("\u276f")
    term.line("still there?")
    term.expect("That took a while.")
    term.expect(f"· thread {thread}")
    term.expect("\u276f")
    term.line("/exit")
    term.expect(f"thread {thread} is saved")
    assert term.exit_status() == 0

    shown = run_cli("threads", "show", thread, cwd=calc, env={"AGENTCTL_HOME": str(calc / "home")})
    assert shown.returncode == 0, shown.stderr
    said = [line for line in shown.stdout.splitlines() if line.startswith(("user:", "calc:"))]
    assert said == [
        "user: add please",
        "calc: Adding now.",
        "calc: The sum is 5.",
        "user: shout",
        "calc: Now shouting.",
        "calc: I shouted.",
        "user: slow",
        "user: still there?",
        "calc: That took a while.",
    ]


@pytest.mark.slow
def test_session_commands_history_reopen_and_reject(calc: Path) -> None:
    term = Terminal("run", "agent.yaml", cwd=calc)
    term.expect("\u276f")
    term.line("/todos")
    term.expect("no todos yet")
    term.line("/thread")
    term.expect("no thread yet")
    term.line("add please")
    term.expect("The sum is 5.")
    thread = THREAD.search(term.expect("\u276f"))
    assert thread, term.screen
    term.line("/thread")
    term.expect(f"thread {thread.group(1)} · agent calc · 4 messages")
    term.line("/files")
    term.expect("no files yet")
    term.line("/nope")
    term.expect("unknown command /nope; /help lists them")
    term.line("/help")
    term.expect("/continue")
    term.expect("\u276f")  # Ctrl-D exits at the prompt (sent earlier, a busy machine loses it)
    term.send(CTRL_D)
    term.expect(f"thread {thread.group(1)} is saved")
    assert term.exit_status() == 0
    assert (calc / "home" / "history").read_text(encoding="utf-8").count("add please") == 1

    # a new process on the same thread: where it stands, the history under the arrow keys
    term = Terminal("run", "agent.yaml", "--thread", thread.group(1), cwd=calc)
    term.expect(f"thread {thread.group(1)} · 4 messages so far")
    term.expect("last answer: The sum is 5.")
    term.expect("\u276f")
    term.send("ad" + UP)  # the history, filtered by what is typed
    term.expect("add please")
    term.send(CTRL_C)  # at the prompt: clears the line, stays in the session
    term.line("shout")
    term.expect("[a] approve  [e] edit  [r] reject")
    term.line("x")
    term.expect("answer with a (approve), e (edit), r (reject)")
    term.line("r")
    term.expect("reason for the agent (optional)")
    term.line("too loud")
    term.expect("✗ rejected shout")
    term.expect("⎿ ✗ User rejected the tool call")
    term.expect("I shouted.")
    term.expect("\u276f")
    term.send(CTRL_D)
    assert term.exit_status() == 0


@pytest.mark.slow
def test_one_shot_run_asks_approval_and_edits_inline_without_an_editor(calc: Path) -> None:
    term = Terminal("run", "agent.yaml", "shout", "--model", "replay:shout.cassette.yaml", cwd=calc)
    term.expect("thread ")
    term.expect("text: hello")
    term.line("e")
    term.expect("Esc then Enter to finish")
    term.send("\b" * len("hello\n") + "inline")
    term.send(ESC_ENTER)
    term.expect("text: inline")
    term.expect("⎿ INLINE")
    term.expect("I shouted.")
    term.expect("✓ done")
    assert term.exit_status() == 0


def test_session_needs_a_terminal_and_pipes_get_plain_text(calc: Path) -> None:
    done = run_cli("run", "agent.yaml", cwd=calc)
    assert done.returncode == 2
    assert "in a terminal, no MESSAGE opens an interactive session" in done.stderr
    done = run_cli("run", "agent.yaml", "add", cwd=calc)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    assert done.stdout == "Adding now.\n▸ add(a=2, b=3)\n  ✓ 5\nThe sum is 5.\n"


@pytest.mark.slow
def test_session_attach_queues_files_for_the_next_message(calc: Path) -> None:
    (calc / "notes.txt").write_text("two and three\n", encoding="utf-8")
    (calc / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    term = Terminal("run", "agent.yaml", cwd=calc)
    term.expect("\u276f")
    term.line("/attach missing.txt")
    term.expect("missing.txt: no such file")
    term.line("/attach photo.png")
    term.expect("photo.png: the model of agent calc")
    term.line("/attach notes.txt")
    term.expect("attached notes.txt (file, 14 bytes); it goes with your next message")
    term.line("add please")
    term.expect("The sum is 5.")
    thread = THREAD.search(term.expect("\u276f"))
    assert thread, term.screen
    term.send(CTRL_D)
    assert term.exit_status() == 0
    exported = run_cli(
        "threads", "export", thread.group(1), cwd=calc, env={"AGENTCTL_HOME": str(calc / "home")}
    )
    first = exported.stdout.splitlines()[1]
    assert '"content": "add please<attachment name=\\"notes.txt\\">\\ntwo and three\\n' in first


@pytest.mark.slow
def test_batch_shows_a_progress_bar_on_a_terminal(calc: Path) -> None:
    (calc / "inputs.jsonl").write_text(
        '{"message": "add please"}\n{"message": "add again"}\n{"mesage": "typo"}\n',
        encoding="utf-8",
    )
    term = Terminal("run", "agent.yaml", "--batch", "inputs.jsonl", "--out", "out.jsonl", cwd=calc)
    term.expect("line 3: error: inputs.jsonl:3: unknown key 'mesage'")
    term.expect("3/3")
    term.expect("1 failed")
    term.expect("batch: 3 lines, 2 ok, 1 failed; results in out.jsonl")
    assert term.exit_status() == 1
    assert len((calc / "out.jsonl").read_text(encoding="utf-8").splitlines()) == 3
