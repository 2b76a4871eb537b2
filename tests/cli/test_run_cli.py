"""`agentctl run` as a user runs it: separate processes, JSON lines, exit codes, SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli


@pytest.fixture
def spine(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tests" / "data" / "spine", tmp_path / "spine")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    return tmp_path / "spine" / "agent.yaml"


def events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_jsonl_events_have_the_promised_fields(spine: Path, tmp_path: Path) -> None:
    done = run_cli("run", str(spine), "add", "--output", "jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    assert all({"type", "agent"} <= set(e) for e in lines)
    by_type = {e["type"]: e for e in lines}
    assert set(by_type["tool_call"]) >= {"name", "args", "id"}
    assert set(by_type["tool_result"]) >= {"name", "id", "content"}
    assert by_type["final"]["content"] == "The sum is 5."
    assert by_type["final"]["thread_id"] == lines[0]["thread_id"]
    assert lines[0]["type"] == "start"


def test_text_output_and_thread_resume_across_processes(spine: Path, tmp_path: Path) -> None:
    first = run_cli("run", str(spine), "add", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "▸ add(a=2, b=3)" in first.stdout and "The sum is 5." in first.stdout
    thread = first.stderr.split()[1]
    second = run_cli(
        "run", str(spine), "shout now", "--thread", thread, "--output", "jsonl", cwd=tmp_path
    )
    assert second.returncode == 0, second.stderr
    last = events(second.stdout)[-1]
    assert last["type"] == "interrupt" and last["thread_id"] == thread
    assert last["actions"][0]["name"] == "shout" and last["actions"][0]["args"] == {"text": "hello"}
    # the approval survives the process; answered from a third one
    third = run_cli(
        "run", str(spine), "--thread", thread, "--approve", "--output", "jsonl", cwd=tmp_path
    )
    assert third.returncode == 0, third.stderr
    lines = events(third.stdout)
    assert [e["content"] for e in lines if e["type"] == "tool_result"] == ["HELLO"]
    assert lines[-1] == {
        "type": "final",
        "agent": "calc",
        "thread_id": thread,
        "content": "I shouted.",
    }


def test_auto_approve_answers_what_a_thread_already_waits_for(spine: Path, tmp_path: Path) -> None:
    """A run that stopped (or was killed) after asking: continuing it with --auto-approve
    approves what it waits for, as the run that asked would have."""
    first = run_cli("run", str(spine), "add", "--output", "jsonl", cwd=tmp_path)
    thread = events(first.stdout)[0]["thread_id"]
    asked = run_cli(
        "run", str(spine), "shout now", "--thread", thread, "--output", "jsonl", cwd=tmp_path
    )
    assert events(asked.stdout)[-1]["type"] == "interrupt"
    done = run_cli(
        "run", str(spine), "--thread", thread, "--auto-approve", "--output", "jsonl", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    assert [e["content"] for e in lines if e["type"] == "tool_result"] == ["HELLO"]
    assert lines[-1]["type"] == "final" and lines[-1]["content"] == "I shouted."


def test_stdin_message_and_vars(spine: Path, tmp_path: Path) -> None:
    done = run_cli(
        "run",
        str(spine),
        "-",
        "--var",
        "who=ops",
        "--output",
        "jsonl",
        cwd=tmp_path,
        input="add please",
    )
    assert done.returncode == 0, done.stderr
    assert events(done.stdout)[-1]["content"] == "The sum is 5."


def test_decisions_answer_several_waiting_calls_one_by_one(spine: Path, tmp_path: Path) -> None:
    cassette = spine.parent / "twice.cassette.yaml"
    cassette.write_text(
        "- content: Shouting twice.\n"
        "  tool_calls:\n"
        "    - {name: shout, args: {text: one}}\n"
        "    - {name: shout, args: {text: two}}\n"
        "- content: Done.\n"
    )
    first = run_cli(
        "run",
        str(spine),
        "shout",
        "--model",
        f"replay:{cassette}",
        "--output",
        "jsonl",
        cwd=tmp_path,
    )
    waiting = events(first.stdout)[-1]
    assert [a["args"] for a in waiting["actions"]] == [{"text": "one"}, {"text": "two"}]
    calls = [e["id"] for e in events(first.stdout) if e["type"] == "tool_call"]
    assert [a["id"] for a in waiting["actions"]] == calls and all(calls)  # which call each is
    thread = waiting["thread_id"]
    answer = ["run", str(spine), "--model", f"replay:{cassette}", "--thread", thread]
    one = run_cli(*answer, "--edit", '{"text": "edited"}', cwd=tmp_path)
    assert one.returncode == 2  # a usage error
    assert "waits on 2 approvals; give 2 decisions, not 1 (from the command line: --decisions" in (
        one.stderr
    )
    done = run_cli(
        *answer,
        "--decisions",
        '[{"type": "edit", "args": {"text": "edited"}}, {"type": "reject", "message": "no"}]',
        "--output",
        "jsonl",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    results = [
        (e["content"], e.get("status")) for e in events(done.stdout) if e["type"] == "tool_result"
    ]
    edited, rejected = sorted(results)
    assert edited[0].endswith("\nEDITED") and edited[1] == "success"
    assert rejected == ("User rejected the tool call for `shout` with reason: no", "error")
    assert events(done.stdout)[-1]["content"] == "Done."


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a MESSAGE"),
        (
            ("--approve",),
            "--approve, --reject, --edit, --decisions and --answer answer a waiting thread: add "
            "--thread ID",
        ),
        (("--thread", "x", "--decisions", '["approve", "maybe"]'), 'decision 2 ("maybe") needs'),
        (("--thread", "x", "--decisions", "[]"), "expected a JSON list with one decision"),
        (("--thread", "x", "--approve", "--decisions", '["approve"]'), "choose one of"),
        (("hi", "--thread", "x", "--approve"), "send a MESSAGE or answer approvals, not both"),
        (("--thread", "x", "--edit", "{nope"), "not valid JSON"),
        (("--thread", "x", "--reason", "r"), "--reason goes with --reject"),
        (("hi", "--output", "xml"), "'xml' is not one of 'text', 'jsonl'"),
    ],
)
def test_usage_errors_exit_2(
    spine: Path, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = run_cli("run", str(spine), *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_bad_spec_exits_2_and_run_failure_exits_1(spine: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nmodle: openai:gpt-4.1\n")
    done = run_cli("run", str(bad), "hi", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == "bad.yaml:2:1: modle: unknown key; did you mean 'model'?"
    short = tmp_path / "short.yaml"
    short.write_text("- content: Adding.\n  tool_calls: [{name: add, args: {a: 1, b: 1}}]\n")
    failed = run_cli("run", str(spine), "add", "--model", f"replay:{short}", cwd=tmp_path)
    assert failed.returncode == 1
    assert "error: replay cassette" in failed.stderr and "asked for reply 2" in failed.stderr
    assert "Traceback" not in failed.stderr


@pytest.mark.slow
def test_a_run_killed_mid_step_resumes_from_its_last_checkpoint(
    spine: Path, tmp_path: Path
) -> None:
    slow = spine.parent / "slow.cassette.yaml"
    env = {**os.environ, "AGENTCTL_HOME": str(tmp_path)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runner",
            "run",
            str(spine),
            "go",
            "--model",
            f"replay:{slow}",
            "--output",
            "jsonl",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    seen: list[dict[str, Any]] = []
    for line in process.stdout:
        seen.append(json.loads(line))
        if seen[-1]["type"] == "tool_result":
            break  # step one is checkpointed; the model now sleeps in step two
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    thread = seen[0]["thread_id"]
    # Cut off before any approval: answering one says how to continue instead.
    rejected = run_cli("run", str(spine), "--thread", thread, "--reject", cwd=tmp_path)
    assert rejected.returncode == 1
    assert (
        f"thread {thread} has no approval waiting; nothing to answer; its last run was cut off "
        f"before it asked: continue it with `agentctl run {spine.relative_to(tmp_path)} --thread "
        f"{thread}` alone"
    ) in rejected.stderr
    resumed = run_cli(
        "run",
        str(spine),
        "--thread",
        thread,
        "--model",
        f"replay:{slow}",
        "--output",
        "jsonl",
        cwd=tmp_path,
    )
    assert resumed.returncode == 0, resumed.stderr
    lines = events(resumed.stdout)
    assert [e["args"] for e in lines if e["type"] == "tool_call"] == [{"a": 2, "b": 2}]
    assert lines[-1]["content"] == "Finished."
    from runner.run import Session

    with Session(spine, db=tmp_path / "agentctl.db", model=f"replay:{slow}") as session:
        history = session.values(thread)["messages"]
    assert [(m.type, m.text) for m in history] == [
        ("human", "go"),
        ("ai", "Step one."),
        ("tool", "2"),
        ("ai", "Step two."),
        ("tool", "4"),
        ("ai", "Finished."),
    ]
