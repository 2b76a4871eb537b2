"""`agentctl threads`: list, show and rm, as separate processes on one thread database."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from runner.run import Session
from tests.conftest import ROOT, run_cli

ROW = re.compile(r"^(\d{8}-\d{6}-[0-9a-f]{6})  calc +\d{4}-\d\d-\d\d \d\d:\d\d  (.*)$")


@pytest.fixture
def threads(tmp_path: Path) -> tuple[Path, str, str]:
    """Two threads of the `calc` agent: one finished, one waiting for an approval."""
    shutil.copytree(ROOT / "tests" / "data" / "spine", tmp_path / "spine")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    with Session(tmp_path / "spine" / "agent.yaml", db=tmp_path / "agentctl.db") as session:
        done = session.run("add two and three").thread_id
        waiting = session.run("add again").thread_id
        assert session.run("now shout", thread_id=waiting).interrupt is not None
    return tmp_path, done, waiting


def test_list_shows_agent_time_and_first_message_newest_first(
    threads: tuple[Path, str, str],
) -> None:
    home, done, waiting = threads
    for args in (("threads",), ("threads", "list"), ("threads", "list", "--agent", "calc")):
        listed = run_cli(*args, cwd=home)
        assert listed.returncode == 0, listed.stderr
        header, *rows = listed.stdout.splitlines()
        assert header.split() == ["THREAD", "AGENT", "UPDATED", "FIRST", "MESSAGE"]
        matches = [ROW.match(row) for row in rows]
        assert all(matches), rows
        assert [(m.group(1), m.group(2)) for m in matches if m] == [
            (waiting, "add again"),
            (done, "add two and three"),
        ]
    other = run_cli("threads", "list", "--agent", "writer", cwd=home)
    assert (other.returncode, other.stdout) == (0, "")
    assert other.stderr == f"no threads of agent 'writer' in {home / 'agentctl.db'}\n"


def test_show_prints_the_conversation_and_what_waits(threads: tuple[Path, str, str]) -> None:
    home, _, waiting = threads
    shown = run_cli("threads", "show", waiting, cwd=home)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"thread {waiting}  agent calc ({home / 'spine' / 'agent.yaml'})"
    assert re.fullmatch(r"created [\d-]+ [\d:]+ · updated [\d-]+ [\d:]+", lines[1])
    assert lines[3:] == [
        "user: add again",
        "calc: Adding.",
        "  ▸ add(a=2, b=3)",
        "    ✓ 5",
        "calc: The sum is 5.",
        "user: now shout",
        "calc: Now shouting.",
        "  ▸ shout(text='hello')",
        "",
        "waiting for approval:",
        "  shout(text='hello')  [approve/edit/reject]",
        f"answer with: agentctl run {home / 'spine' / 'agent.yaml'} --thread {waiting} --approve "
        "(or --reject [--reason TEXT], or --edit JSON); or without them in a terminal",
    ]
    assert "\x1b" not in shown.stdout


def test_rm_asks_first_and_deletes_checkpoints_and_entry(threads: tuple[Path, str, str]) -> None:
    home, done, waiting = threads
    kept = run_cli("threads", "rm", done, cwd=home, input="n\n")
    assert kept.returncode == 1
    assert kept.stderr == f"Delete thread {done} (calc: add two and three)? [y/N]: not deleted\n"
    removed = run_cli("threads", "rm", done, cwd=home, input="y\n")
    assert (removed.returncode, removed.stdout) == (0, f"deleted thread {done}\n")
    gone = run_cli("threads", "show", done, cwd=home)
    assert (gone.returncode, gone.stdout) == (1, "")
    assert gone.stderr == f"error: no thread '{done}' in {home / 'agentctl.db'}\n"
    assert run_cli("threads", "rm", waiting, "--yes", cwd=home).returncode == 0
    assert run_cli("threads", cwd=home).stderr == f"no threads in {home / 'agentctl.db'}\n"
    again = run_cli("threads", "rm", waiting, "--yes", cwd=home)
    assert again.returncode == 1
    assert again.stderr == f"error: no thread '{waiting}' in {home / 'agentctl.db'}\n"


def test_db_option_reads_another_database(threads: tuple[Path, str, str], tmp_path: Path) -> None:
    home, done, _ = threads
    moved = tmp_path / "elsewhere" / "threads.db"
    moved.parent.mkdir()
    shutil.copy(home / "agentctl.db", moved)
    shown = run_cli("threads", "show", done, "--db", str(moved), cwd=tmp_path / "elsewhere")
    assert shown.returncode == 0, shown.stderr
    assert "user: add two and three" in shown.stdout


@pytest.mark.parametrize(
    "zone", ["UTC", "Europe/Berlin", "America/St_Johns", "Australia/Lord_Howe"]
)
def test_local_time_is_what_astimezone_gives(zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`threads list` writes thousands of these, through `time.localtime` (a third of the cost
    of `datetime.astimezone`): the same local time, across daylight saving changes too."""
    import time
    from datetime import UTC, datetime, timedelta

    from runner.cli.threads import local_time

    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        start = datetime(2026, 1, 1, tzinfo=UTC)
        for hours in range(0, 366 * 24, 7):  # every seventh hour of a year, both changes in it
            moment = start + timedelta(hours=hours, minutes=hours % 60, seconds=hours % 59)
            iso = moment.isoformat()
            expected = moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
            assert local_time(iso, seconds=True) == expected, iso
            assert local_time(iso) == expected[:16], iso
        naive = "2026-03-29T02:30:00"  # a stored time without a zone is read as local
        assert local_time(naive) == datetime.fromisoformat(naive).astimezone().strftime(
            "%Y-%m-%d %H:%M"
        )
        assert local_time("not a time") == "not a time"
    finally:
        monkeypatch.undo()
        time.tzset()
