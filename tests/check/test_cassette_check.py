"""Cassettes checked against their agents, `validate` finding what `run` refuses (with the same
message), shell-style `${VAR-default}`, `--var` typos, threads that keep their model and vars,
and the warning for replies no agent played."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.check.validate import validate_file
from runner.errors import RunnerError, SpecError
from runner.load.loader import load_spec
from runner.load.source import interpolate
from tests.conftest import run_cli
from tests.spec.files import write_files as write

JANITOR = """\
name: janitor
model: replay:janitor.cassette.yaml
backend: {kind: local_shell, root_dir: ./ws}
interrupt_on: {execute: true}
subagents:
  - name: critic
    description: Reviews the cleanup
    prompt: Be harsh.
"""


def lines(problems: list[object]) -> list[str]:
    return [str(p) for p in problems]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_cassette_typo_is_a_located_error_with_did_you_mean(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "janitor.yaml": JANITOR,
            "janitor.cassette.yaml": """\
            agents:
              janitor:
                - tool_calls:
                    - {name: exceute, args: {command: rm -rf tmp}}
                - tool_calls:
                    - {name: task, args: {description: check it, subagent_type: critc}}
                - tool_calls:
                    - {name: write_file, args: {file_pth: /a.md, content: x}}
                - content: Done.
              critik:
                - content: Fine.
            """,
        },
    )
    expected = [
        "janitor.cassette.yaml:4:18: agents.janitor[0].tool_calls[0].name: no tool named "
        "'exceute' in agent 'janitor'; did you mean 'execute'?",
        "janitor.cassette.yaml:6:69: agents.janitor[1].tool_calls[0].args.subagent_type: agent "
        "'janitor' has no subagent 'critc'; did you mean 'critic'? its subagents: critic, "
        "general-purpose",
        "janitor.cassette.yaml:8:36: agents.janitor[2].tool_calls[0].args: write_file needs the "
        "argument 'file_path'",
        "janitor.cassette.yaml:8:37: agents.janitor[2].tool_calls[0].args.file_pth: write_file "
        "has no argument 'file_pth'; did you mean 'file_path'?",
        "janitor.cassette.yaml:10:3: agents.critik: no agent named 'critik' plays this "
        "cassette; did you mean 'critic'? the agents that do: critic, critic/summary, "
        "general-purpose, general-purpose/summary, janitor, janitor/summary",
    ]
    # The cassette alone (found by the agent that names it), and through the agent file.
    assert lines(validate_file(tmp_path / "janitor.cassette.yaml")) == expected
    assert lines(validate_file(tmp_path / "janitor.yaml")) == expected
    result = run_cli("validate", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[:-1] == expected  # printed once, not per file


def test_a_cassette_named_after_its_agent_and_a_plain_list(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "notes.yaml": "name: notes\nprompt: Take notes.\n",
            # played with --model replay:notes.reject.cassette.yaml
            "notes.reject.cassette.yaml": "- tool_calls: [{name: rite_file, args: {}}]\n",
            "other.yaml": "- content: a cassette by its content\n",
        },
    )
    assert lines(validate_file(tmp_path / "notes.reject.cassette.yaml")) == [
        "notes.reject.cassette.yaml:1:23: [0].tool_calls[0].name: no tool named 'rite_file' in "
        "agent 'notes'; did you mean 'write_file'?"
    ]
    assert validate_file(tmp_path / "other.yaml") == []


def test_tools_only_a_build_names_are_not_reported(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.yaml": """\
            name: a
            model: replay:a.cassette.yaml
            tools:
              - {import: ./t.py:make_tools, args: {n: 2}}
            """,
            "t.py": "def make_tools(n): return []\n",
            "a.cassette.yaml": "- tool_calls: [{name: made_by_the_factory}]\n",
        },
    )
    assert validate_file(tmp_path / "a.yaml") == []


# --------------------------------------------------------------------------- run == validate

RUN_TIME_ERRORS = {
    "interrupt_on": "name: a\nmodel: replay:c.cassette.yaml\ninterrupt_on: {exec: true}\n",
    "execute": ("name: a\nmodel: replay:c.cassette.yaml\nfilesystem: {tools: [ls, execute]}\n"),
    "skills": "name: a\nmodel: replay:c.cassette.yaml\nskills: [./nowhere]\n",
    "cassette": "name: a\nmodel: replay:missing.cassette.yaml\n",
    "fraction": (
        "name: a\nmodel: replay:c.cassette.yaml\nsummarization: {keep: {fraction: 0.2}}\n"
    ),
    "subagent_interrupt_on": (
        "name: a\nmodel: replay:c.cassette.yaml\nsubagents:\n  - name: s\n    description: d\n"
        "    interrupt_on: {write_fil: true}\n"
    ),
}


@pytest.mark.parametrize("case", sorted(RUN_TIME_ERRORS))
def test_validate_reports_what_run_refuses_with_the_same_message(tmp_path: Path, case: str) -> None:
    from runner.agent.build import build_agent

    write(tmp_path, {"a.yaml": RUN_TIME_ERRORS[case], "c.cassette.yaml": "- content: hi\n"})
    with pytest.raises(RunnerError) as caught:
        build_agent(tmp_path / "a.yaml")
    problems = validate_file(tmp_path / "a.yaml")
    assert len(problems) == 1, problems
    assert str(problems[0]) == str(caught.value)
    if case != "cassette":  # inspect names models without opening them
        from runner.agent.inspect import describe

        with pytest.raises(RunnerError) as described:
            describe(tmp_path / "a.yaml")
        assert str(described.value) == str(caught.value)
    if case == "cassette":
        assert str(problems[0]) == (
            "a.yaml:2:8: model: replay cassette not found: missing.cassette.yaml"
        )


# --------------------------------------------------------------------------- vars


def test_shell_defaults_colon_dash_covers_empty_dash_only_unset() -> None:
    env = {"EMPTY": "", "SET": "x"}
    assert interpolate("${EMPTY:-d}|${EMPTY-d}|${UNSET-d}|${SET-d}|${SET:-d}", env) == "d||d|x|x"


def test_a_var_no_prompt_uses_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"a.yaml": "name: a\nvars: {tone: plain}\nprompt: 'Write in a {{ vars.tone }} tone.'\n"},
    )
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "a.yaml", vars={"tonee": "formal"})
    assert str(caught.value) == (
        "--var: tonee: a.yaml has no template variable 'tonee'; did you mean 'tone'? it uses: "
        "tone (--allow-unused-var to pass it anyway)"
    )
    assert load_spec(tmp_path / "a.yaml", vars={"tonee": "x"}, allow_unused_vars=True)
    spec = load_spec(tmp_path / "a.yaml", vars={"tone": "formal"})
    assert spec.prompt == "Write in a formal tone."
    result = run_cli("validate", "a.yaml", "--var", "tonee=formal", cwd=tmp_path)
    assert result.returncode == 2 and "did you mean 'tone'?" in result.stderr


# --------------------------------------------------------------------------- threads


def test_a_thread_resumes_with_its_own_model_and_says_when_it_changes(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.yaml": """\
            name: a
            model: replay:approve.cassette.yaml
            backend: {kind: filesystem, root_dir: ./ws}
            interrupt_on: {write_file: true}
            """,
            "approve.cassette.yaml": "- content: the spec's own cassette\n",
            "reject.cassette.yaml": """\
            - tool_calls: [{name: write_file, args: {file_path: /a.md, content: x}}]
            - content: rejected, as asked
            """,
        },
    )
    (tmp_path / "ws").mkdir()
    env = {"AGENTCTL_HOME": str(tmp_path / "home")}
    first = run_cli(
        "run", "a.yaml", "go", "--model", "replay:reject.cassette.yaml", "-q", cwd=tmp_path, env=env
    )
    assert first.returncode == 0, first.stderr
    hint = next(line for line in first.stderr.splitlines() if line.startswith("Answer with"))
    assert hint.startswith("Answer with: agentctl run a.yaml --thread ")  # the real file name
    thread = hint.split("--thread ")[1].split()[0]
    second = run_cli("run", "a.yaml", "--thread", thread, "--reject", "-q", cwd=tmp_path, env=env)
    assert (second.returncode, second.stdout.strip()) == (0, "rejected, as asked")
    assert "warning" not in second.stderr
    third = run_cli(
        "run",
        "a.yaml",
        "again",
        "--thread",
        thread,
        "--model",
        "replay:approve.cassette.yaml",
        "-q",
        cwd=tmp_path,
        env=env,
    )
    assert f"warning: thread {thread} was started with --model replay:" in third.stderr
    assert "reject.cassette.yaml; this run uses --model replay:" in third.stderr
    assert not os.path.exists(tmp_path / "ws" / "a.md")


def test_replies_no_agent_played_are_a_warning_at_the_end(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "lead.yaml": """\
            name: lead
            model: replay:lead.cassette.yaml
            subagents:
              - {name: critic, description: Reviews, prompt: Review.}
            """,
            "lead.cassette.yaml": """\
            agents:
              lead:
                - content: Done, and the critic agreed.
              critic:
                - content: never asked
            """,
        },
    )
    result = run_cli("run", "lead.yaml", "go", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        "warning: replay cassette lead.cassette.yaml has replies no agent played: critic "
        "played 0 of 1" in result.stderr
    )


def test_the_main_agents_text_replies_left_for_later_messages_are_no_slip(
    tmp_path: Path,
) -> None:
    """A closing text reply kept for the next message (the showcase's "no more replies" note) is
    not reported; a call left behind is."""
    write(
        tmp_path,
        {
            "a.yaml": "name: a\nmodel: replay:a.cassette.yaml\n",
            "a.cassette.yaml": """\
            - content: Done.
            - content: (no more replies; set a real model to go on)
            """,
            "b.yaml": "name: b\nmodel: replay:b.cassette.yaml\n",
            "b.cassette.yaml": """\
            - content: Done.
            - tool_calls: [{name: ls, args: {path: /}}]
            """,
        },
    )
    quiet = run_cli("run", "a.yaml", "go", "-q", cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "Done.\n", "")
    warned = run_cli("run", "b.yaml", "go", "-q", cwd=tmp_path)
    assert "has replies no agent played: b played 1 of 2" in warned.stderr


def test_a_tool_that_fails_in_a_replay_is_a_warning_not_a_silent_done(tmp_path: Path) -> None:
    """A replayed model plays on whatever a tool returns: a misspelt tool, or a file that an
    earlier run of the same cassette left, is said out loud (a rejection is not a failure)."""
    write(
        tmp_path,
        {
            "a.yaml": "name: a\nmodel: replay:a.cassette.yaml\n"
            "backend: {kind: filesystem, root_dir: ./ws}\n",
            "a.cassette.yaml": """\
            - tool_calls: [{name: write_file, args: {file_path: /x.md, content: hi}}]
            - content: Done.
            """,
        },
    )
    (tmp_path / "ws").mkdir()
    first = run_cli("run", "a.yaml", "go", "-q", cwd=tmp_path)
    assert (first.returncode, first.stdout, first.stderr) == (0, "Done.\n", "")
    again = run_cli("run", "a.yaml", "go", "-q", cwd=tmp_path)
    assert again.returncode == 0
    assert again.stderr.startswith(
        "warning: write_file failed in a replayed run (Error: File '/x.md' already exists"
    )
    assert "agentctl validate a.cassette.yaml" in again.stderr


def test_a_database_from_before_thread_settings_gets_their_table(tmp_path: Path) -> None:
    """Threads of an older database have no settings: resuming them takes what is given."""
    import sqlite3

    from runner.run import ThreadSettings, resume_settings
    from runner.threads import open_home

    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE agentctl_threads (thread_id TEXT PRIMARY KEY, agent TEXT, spec TEXT, "
            "created_at TEXT, updated_at TEXT, first_message TEXT)"
        )
        conn.execute("INSERT INTO agentctl_threads VALUES ('t1', 'a', NULL, '', '', 'hi')")
    home = open_home(db)
    try:
        assert home.settings("t1") is None
        assert resume_settings(home, "t1", None, {"x": 1}) == (None, {"x": 1})
        home.remember_settings("t1", ThreadSettings.of("replay:c.yaml", {"tone": "dry"}))
        home.remember_settings("t1", ThreadSettings.of("openai:gpt-4.1", {}))  # the first stays
        model, variables = resume_settings(home, "t1", None, {})
        assert model == f"replay:{tmp_path / 'c.yaml'}" and variables == {"tone": "dry"}
        assert resume_settings(home, "t1", "openai:gpt-4.1", {"tone": "warm"}) == (
            "openai:gpt-4.1",
            {"tone": "warm"},
        )
    finally:
        home.close()


def test_a_run_whose_agent_has_no_replies_lists_the_names_in_the_cassette(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "j.yaml": "name: janitor\nmodel: replay:j.cassette.yaml\n",
            "j.cassette.yaml": "agents:\n  janitr:\n    - content: hi\n",
        },
    )
    result = run_cli("run", "j.yaml", "hi", "-q", cwd=tmp_path)
    assert result.returncode == 1
    assert (
        "replay cassette j.cassette.yaml has 0 replies for agent 'janitor', and the run asked for "
        "reply 1; did you mean 'janitr'? its agents: janitr; agentctl validate j.cassette.yaml "
        "checks the names"
    ) in result.stderr
