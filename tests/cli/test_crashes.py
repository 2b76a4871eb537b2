"""Crashes and concurrent processes, as users meet them: `agentctl run` children killed with
SIGKILL (at random points, and right after a side effect), racing each other on one thread,
and read by a reader that leaves early. Every side effect is counted in a log file.

The guarantee under test (README "Crashes and concurrent runs"): a tool call that finished is
never run again; only the call in flight at a crash may repeat. One process runs a thread at a
time; an approval is answered once. Collisions are made with a gate (a file the test creates)
that holds a tool call in flight, never with sleeps.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

PATIENCE = 120.0
"""Seconds before a test that waits on a child gives up (a hang, not a measurement)."""


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_child_left() -> Any:
    """A failed test must not leave a child waiting at its gate for ever."""
    yield
    while STARTED:
        child = STARTED.pop()
        if child.poll() is None:
            child.kill()
            child.communicate()


class Runs:
    """`agentctl run` children on the crash agent, in one home, with one effect log."""

    def __init__(self, tmp_path: Path, db: str | None = None) -> None:
        self.db = db
        """A Postgres thread database (`--db`), else the SQLite one in the home."""
        shutil.copytree(ROOT / "tests" / "data" / "crash", tmp_path / "crash")
        self.spec = tmp_path / "crash" / "agent.yaml"
        self.log = tmp_path / "effects.log"
        self.log.touch()
        self.gate = tmp_path / "gate"
        self.env = {**os.environ, "AGENTCTL_HOME": str(tmp_path), "EFFECT_LOG": str(self.log)}
        self.env.pop("AGENTCTL_DEBUG", None)
        self.cwd = tmp_path

    def start(self, *args: str, gate: str | None = None) -> subprocess.Popen[str]:
        env = dict(self.env)
        if gate is not None:
            env["EFFECT_GATE"] = f"{gate}={self.gate}"
        child = subprocess.Popen(
            [sys.executable, "-m", "runner", "run", str(self.spec), *args, "--output", "jsonl"]
            + (["--db", self.db] if self.db else []),
            cwd=self.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        STARTED.append(child)
        return child

    def run(self, *args: str) -> tuple[int, list[dict[str, Any]], str]:
        process = self.start(*args)
        out, err = process.communicate(timeout=PATIENCE)
        return process.returncode, events(out), err

    def home(self) -> Any:
        from runner.threads import open_home

        return open_home(self.db or self.cwd / "agentctl.db")

    def effects(self) -> list[str]:
        return self.log.read_text().split()

    def until(self, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + PATIENCE
        while not condition():
            assert time.monotonic() < deadline, "the child never got there"
            time.sleep(0.01)

    def resume(self, thread: str) -> tuple[str, ...]:
        """The arguments that continue `thread`: `--thread ID`, with the first message again
        when the thread holds none (a process killed right after it printed the thread's id,
        before the message was saved: there is nothing to continue, and no call ran)."""
        home = self.home()
        try:
            transcript = home.transcript(thread)
        finally:
            home.close()
        if transcript is None or not transcript.messages:
            assert self.effects() == [], "a call ran for a thread that holds no message"
            return ("--thread", thread, "go")
        return ("--thread", thread)

    def finish(self, thread: str) -> list[dict[str, Any]]:
        """Continue the thread to its final answer (approving what asks)."""
        code, lines, err = self.run(*self.resume(thread), "--auto-approve")
        if code == 1 and "has nothing to continue" in lines[-1].get("message", ""):
            # the killed process had saved the final answer before it could print it
            home = self.home()
            try:
                transcript = home.transcript(thread)
            finally:
                home.close()
            assert transcript is not None and transcript.messages[-1].content == "All recorded."
            return lines
        assert code == 0, (err, lines[-3:])
        assert lines[-1]["type"] == "final" and lines[-1]["content"] == "All recorded.", lines
        return lines


def events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


EVERY_EFFECT = Counter({"a": 1, "b": 1, "c": 1, "x": 1, "y": 1, "approved": 1})
STEPS = [("a",), ("b", "c"), ("x",), ("y",), ("approved",)]
"""The calls of each model turn: one step's calls may be in flight together."""

SQLITE = pytest.param("sqlite", id="sqlite")
POSTGRES = pytest.param("postgres", id="postgres")


def _runs(tmp_path: Path, request: pytest.FixtureRequest, db: str) -> Runs:
    """`Runs` on the SQLite thread database, or on a fresh Postgres one (`--db postgresql://`)."""
    url = request.getfixturevalue("postgres_url") if db == "postgres" else None
    return Runs(tmp_path, url)


@pytest.mark.parametrize(
    ("in_flight", "db"),
    [
        ("a", "sqlite"),
        ("x", "sqlite"),
        ("approved", "sqlite"),
        ("a", "postgres"),
        ("approved", "postgres"),
    ],
)
def test_killed_right_after_a_side_effect_only_the_call_in_flight_runs_again(
    tmp_path: Path, request: pytest.FixtureRequest, in_flight: str, db: str
) -> None:
    """Killed while a call (of the main agent, of a subagent, an approved one) is in flight,
    just after its side effect: resuming runs that call again and no finished one."""
    runs = _runs(tmp_path, request, db)
    process = runs.start("go", "--auto-approve", gate=in_flight)
    assert process.stdout is not None
    thread = json.loads(process.stdout.readline())["thread_id"]
    runs.until(lambda: in_flight in runs.effects())
    process.send_signal(signal.SIGKILL)
    process.communicate()
    before = Counter(runs.effects())
    # resumed at once, without --wait: the dead holder's lease does not lock the thread
    runs.finish(thread)
    assert Counter(runs.effects()) == EVERY_EFFECT + Counter({in_flight: 1})
    assert before[in_flight] == 1


def test_killed_at_random_points_no_finished_call_runs_again(tmp_path: Path) -> None:
    """SIGKILL after a random number of events, again and again, until the thread is done. A
    call whose result a killed process printed must not run after that kill."""
    runs = Runs(tmp_path)
    chooser = random.Random()
    thread: str | None = None
    fixed: dict[str, int] = {}  # call -> its effects when a process printed its result
    kills = 0
    seen: list[dict[str, Any]] = []
    for _attempt in range(8):
        args = ("go",) if thread is None else runs.resume(thread)
        process = runs.start(*args, "--auto-approve")
        assert process.stdout is not None
        names: dict[str, str] = {}
        printed: set[str] = set()
        seen = []
        stop_after = chooser.randint(1, 25)
        for line in process.stdout:
            event = json.loads(line)
            seen.append(event)
            thread = thread or event.get("thread_id")
            if event["type"] == "tool_call" and event["name"] == "record":
                names[event["id"]] = event["args"]["name"]
            if event["type"] == "tool_result" and event["id"] in names:
                printed.add(names[event["id"]])
            if len(seen) >= stop_after:
                break
        done = any(e["type"] == "final" for e in seen)
        if not done:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.communicate()
        counts = Counter(runs.effects())
        for name, times in fixed.items():
            assert counts[name] == times, f"{name} ran again after it finished: {counts}"
        fixed.update({name: counts[name] for name in printed - set(fixed)})
        if done:
            break
    assert thread is not None
    if not any(e["type"] == "final" for e in seen):
        runs.finish(thread)
    counts = Counter(runs.effects())
    assert set(counts) == set(EVERY_EFFECT)
    assert all(counts[name] == times for name, times in fixed.items())
    # a kill repeats at most the calls in flight then: one step's (b and c run side by side)
    repeats = sum(max(counts[name] for name in step) - 1 for step in STEPS)
    assert repeats <= kills, counts


def _waiting_for_approval(runs: Runs) -> str:
    code, lines, err = runs.run("go")
    assert code == 0, err
    assert lines[-1]["type"] == "interrupt", lines
    return str(lines[-1]["thread_id"])


@pytest.mark.parametrize("db", [SQLITE, POSTGRES])
def test_two_processes_answering_one_approval_run_it_once(
    tmp_path: Path, request: pytest.FixtureRequest, db: str
) -> None:
    runs = _runs(tmp_path, request, db)
    thread = _waiting_for_approval(runs)
    # both start before either can finish: the winner's approved call waits at the gate
    first = runs.start("--thread", thread, "--approve", gate="approved")
    second = runs.start("--thread", thread, "--approve", gate="approved")
    runs.until(lambda: first.poll() is not None or second.poll() is not None)
    loser, winner = (first, second) if first.poll() is not None else (second, first)
    out, _ = loser.communicate()
    assert loser.returncode == 1
    error = events(out)[-1]
    assert error["type"] == "error" and error["kind"] == "AlreadyAnswered"
    assert f"already answered (approve, by pid {winner.pid} at 20" in error["message"]
    assert winner.poll() is None  # it runs the call, held at the gate
    runs.gate.touch()
    out, err = winner.communicate(timeout=PATIENCE)
    assert winner.returncode == 0, err
    assert events(out)[-1]["content"] == "All recorded."
    assert Counter(runs.effects()) == EVERY_EFFECT
    # an answer after the thread went on is refused the same way
    code, lines, _ = runs.run("--thread", thread, "--reject")
    assert (
        code == 1 and f"already answered (approve, by pid {winner.pid} at" in lines[-1]["message"]
    )


@pytest.mark.parametrize("db", [SQLITE, POSTGRES])
def test_a_thread_runs_in_one_process_at_a_time(
    tmp_path: Path, request: pytest.FixtureRequest, db: str
) -> None:
    """While one process runs a thread, a second one continuing it or sending a message is told
    who runs it (exit 1), and one with --wait runs after it: nothing runs twice, no message is
    lost."""
    runs = _runs(tmp_path, request, db)
    holder = runs.start("go", "--auto-approve", gate="a")
    assert holder.stdout is not None
    thread = json.loads(holder.stdout.readline())["thread_id"]
    runs.until(lambda: "a" in runs.effects())
    for args in (("--thread", thread), ("--thread", thread, "more")):
        code, lines, _ = runs.run(*args)
        assert code == 1 and lines[-1]["kind"] == "ThreadBusy"
        message = lines[-1]["message"]
        assert f"thread {thread} is being run by another process (pid {holder.pid} on " in message
        assert "--wait" in message
    waiter = runs.start("--thread", thread, "one more", "--wait")
    assert waiter.stdout is not None
    waiting = json.loads(waiter.stdout.readline())  # it found the thread busy: it waits
    assert waiting["type"] == "warning" and waiting["code"] == "thread_busy"
    assert f"(pid {holder.pid} on " in waiting["message"]
    runs.gate.touch()
    out, err = holder.communicate(timeout=PATIENCE)
    assert holder.returncode == 0, err
    out, err = waiter.communicate(timeout=PATIENCE)
    assert waiter.returncode == 0, err
    assert events(out)[-1]["content"] == "Noted."
    assert Counter(runs.effects()) == EVERY_EFFECT
    home = runs.home()
    transcript = home.transcript(thread)
    home.close()
    assert transcript is not None
    humans = [m.content for m in transcript.messages if m.type == "human"]
    assert humans == ["go", "one more"]


def test_a_thread_being_run_is_not_deleted(tmp_path: Path) -> None:
    """`agentctl threads rm` on a thread another process runs: refused, naming the holder (exit
    1, asked or not), and the run goes on to its end; once it is over, the thread is deleted."""
    runs = Runs(tmp_path)
    holder = runs.start("go", "--auto-approve", gate="a")
    assert holder.stdout is not None
    thread = json.loads(holder.stdout.readline())["thread_id"]
    runs.until(lambda: "a" in runs.effects())  # the holder is mid-run, its lease held

    def remove(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "runner", "threads", "rm", thread, *args]
        return subprocess.run(
            command, cwd=runs.cwd, env=runs.env, capture_output=True, text=True, input=""
        )

    for args in (("--yes",), ()):
        refused = remove(*args)
        assert refused.returncode == 1, refused
        assert refused.stdout == ""
        assert f"thread {thread} is being run by another process (pid {holder.pid} on " in (
            refused.stderr
        )
        assert ", since 20" in refused.stderr and "not deleted" in refused.stderr
        assert "Delete thread" not in refused.stderr  # refused before asking
    runs.gate.touch()
    out, err = holder.communicate(timeout=PATIENCE)
    assert holder.returncode == 0, err
    assert events(out)[-1]["content"] == "All recorded."
    assert Counter(runs.effects()) == EVERY_EFFECT
    removed = remove("--yes")
    assert removed.returncode == 0, removed
    assert removed.stdout == f"deleted thread {thread}\n"


@pytest.mark.parametrize("lines", [1, 6, 14])
def test_a_reader_leaving_early_ends_the_run_quietly_with_141(tmp_path: Path, lines: int) -> None:
    """`agentctl run ... --output jsonl --auto-approve | head -N`: exit 141 (128 + SIGPIPE)
    every time, nothing on stderr, and the thread continues to its end."""
    runs = Runs(tmp_path)
    process = runs.start("go", "--auto-approve")
    assert process.stdout is not None
    read = [process.stdout.readline() for _ in range(lines)]
    process.stdout.close()  # the reader leaves
    assert process.stderr is not None
    err = process.stderr.read()
    assert process.wait(PATIENCE) == 141, err
    assert err == ""
    thread = json.loads(read[0])["thread_id"]
    before = Counter(runs.effects())
    runs.finish(thread)
    counts = Counter(runs.effects())
    assert set(counts) == set(EVERY_EFFECT)
    assert sum(counts.values()) - len(counts) <= 1  # the call in flight, if one was
    assert all(counts[name] <= before[name] + 1 for name in before)
