"""Authoring cassettes and test files: `answers` where a run starts, cassettes shared by several
agents, test files checked as test files, approvals' keys and hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.check.validate import validate_file
from tests.conftest import run_cli
from tests.spec.files import write_files as write

LEAD = """\
name: lead
model: replay:lead.cassette.yaml
subagents:
  - name: triager
    description: Classifies one ticket
    prompt: You classify.
"""


def lines(problems: list[object]) -> list[str]:
    return [str(p) for p in problems]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_answers_goes_on_a_subagent_runs_first_reply(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "lead.yaml": LEAD,
            "lead.cassette.yaml": """\
            agents:
              lead:
                - answers: ticket 1
                  tool_calls: [{name: task, args: {description: ticket 1, subagent_type: triager}}]
                - content: Done.
              triager:
                - answers: {id: t1}
                  tool_calls: [{name: ls, args: {path: /}}]
                - answers: {description: ticket 1}
                  content: x
                - answers: {description: ticket 2}
                  content: y
            """,
        },
    )
    assert lines(validate_file(tmp_path / "lead.yaml")) == [
        "lead.cassette.yaml:3:7: agents.lead[0].answers: only a subagent's replies answer a "
        "`task` call; remove `answers`",
        "lead.cassette.yaml:9:7: agents.triager[1].answers: `answers` names the call a run "
        "answers, so it goes on the run's first reply (the first of the list, or one after a "
        "reply without tool calls)",
    ]


def test_answers_must_name_a_call(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"lead.yaml": LEAD, "lead.cassette.yaml": "agents:\n  triager:\n    - answers: {}\n"},
    )
    assert lines(validate_file(tmp_path / "lead.cassette.yaml")) == [
        "lead.cassette.yaml:3:16: agents.triager[0].answers: name the call by `description` or `id`"
    ]


def test_todo_ids_are_kept_from_cassette_to_state_and_events(tmp_path: Path) -> None:
    from runner.events import TodosUpdate
    from runner.run import Session

    planned = [
        {"content": "Outline", "status": "in_progress", "id": "outline"},
        {"content": "Draft", "status": "pending", "id": "draft"},
    ]
    write(
        tmp_path,
        {
            "planner.yaml": "name: planner\nmodel: replay:planner.cassette.yaml\n",
            "planner.cassette.yaml": """\
            - tool_calls:
                - name: write_todos
                  args:
                    todos:
                      - {content: Outline, status: in_progress, id: outline}
                      - {content: Draft, status: pending, id: draft}
            - content: Planned.
            """,
        },
    )
    assert validate_file(tmp_path / "planner.yaml") == []
    with Session(tmp_path / "planner.yaml", db=tmp_path / "db") as session:
        result = session.run("plan")
        assert [e.todos for e in result.events if isinstance(e, TodosUpdate)] == [planned]
        assert session.values(result.thread_id)["todos"] == planned


def test_an_interrupt_on_typo_is_located_at_its_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hitl.yaml": """\
            name: hitl
            interrupt_on:
              write_fil:
                allowed_decisions: [approve, reject]
            subagents:
              - name: helper
                description: Helps
                interrupt_on:
                  edit_fiel: true
            """,
            "hitl.cassette.yaml": "- content: hi\n",
        },
    )
    expected = [
        "hitl.yaml:3:3: interrupt_on.write_fil: no tool named 'write_fil' in agent 'hitl'; "
        "did you mean 'write_file'?",
        "hitl.yaml:9:7: subagents[0].interrupt_on.edit_fiel: no tool named 'edit_fiel' in agent "
        "'helper'; did you mean 'edit_file'?",
    ]
    assert lines(validate_file(tmp_path / "hitl.yaml")) == expected
    result = run_cli("run", "hitl.yaml", "go", "--model", "replay:hitl.cassette.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] in expected  # the first the build meets


def test_approval_hints_offer_only_allowed_decisions_and_a_refused_one_exits_2(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "hitl.yaml": """\
            name: hitl
            model: replay:hitl.cassette.yaml
            interrupt_on:
              write_file: {allowed_decisions: [approve, reject]}
            """,
            "hitl.cassette.yaml": """\
            - tool_calls: [{name: write_file, args: {file_path: /a.md, content: x}}]
            - content: Done.
            """,
        },
    )
    first = run_cli("run", "hitl.yaml", "go", cwd=tmp_path)
    assert first.returncode == 0
    hint = next(line for line in first.stderr.splitlines() if line.startswith("Answer with"))
    thread = hint.split("--thread ")[1].split()[0]
    assert hint == (
        f"Answer with: agentctl run hitl.yaml --thread {thread} --approve "
        "(or --reject [--reason TEXT])"
    )
    shown = run_cli("threads", "show", thread, cwd=tmp_path)
    assert shown.stdout.splitlines()[-1] == (
        f"answer with: agentctl run hitl.yaml --thread {thread} --approve "
        "(or --reject [--reason TEXT]); or without them in a terminal"
    )
    refused = run_cli(
        "run", "hitl.yaml", "--thread", thread, "--edit", '{"content": "y"}', cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "write_file: 'edit' is not allowed here; allowed: approve, reject" in refused.stderr
    assert run_cli("run", "hitl.yaml", "--thread", thread, "--reject", cwd=tmp_path).returncode == 0


SHARED = {
    "_model.yaml": "model: replay:shared.cassette.yaml\n",
    "announcer.yaml": "include: [_model.yaml]\nname: announcer\nprompt: Announce.\n",
    "summarizer.yaml": "include: [_model.yaml]\nname: summarizer\nprompt: Summarize.\n",
    "shared.cassette.yaml": """\
    agents:
      announcer:
        - content: Hear ye.
      summarizer:
        - content: In short.
      ghost:
        - content: Boo.
    """,
}


def test_a_cassette_shared_through_an_include_serves_every_agent_that_plays_it(
    tmp_path: Path,
) -> None:
    from runner.events import RunWarning
    from runner.run import Session

    write(tmp_path, SHARED)
    ghost = (
        "shared.cassette.yaml:6:3: agents.ghost: no agent named 'ghost' plays this cassette; the "
        "agents that do: announcer, announcer/summary, general-purpose, general-purpose/summary, "
        "summarizer, summarizer/summary"
    )
    for name in ("announcer.yaml", "summarizer.yaml", "shared.cassette.yaml"):
        assert lines(validate_file(tmp_path / name)) == [ghost], name
    result = run_cli("validate", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        ghost + " (found through announcer.yaml, summarizer.yaml)",
        "3 of 3 files have problems",
    ]
    assert "checked for its format only" not in result.stdout
    # The run's warning names only the replies no agent of the folder plays.
    with Session(tmp_path / "announcer.yaml", db=tmp_path / "db") as session:
        warnings = [e.message for e in session.run("go").events if isinstance(e, RunWarning)]
    assert warnings == [
        "replay cassette shared.cassette.yaml has replies no agent played: ghost played 0 of 1 "
        "(a misspelt tool or subagent name in it, or a run that took another path)"
    ]


NOTES = {
    "notes.yaml": """\
    name: notes
    model: replay:notes.cassette.yaml
    prompt: You keep notes about {{ vars.topic }}.
    vars: {topic: work}
    backend: {kind: filesystem, root_dir: ./ws}
    """,
    "notes.cassette.yaml": """\
    - tool_calls: [{name: write_file, args: {file_path: /today.md, content: notes}}]
    - content: Noted.
    """,
}


def test_validate_checks_a_test_file_as_agentctl_test_reads_it(tmp_path: Path) -> None:
    head = "version: 1\nagent: ./notes.yaml\n"
    write(
        tmp_path,
        {
            **NOTES,
            "typo.test.yaml": head
            + "cases: [{name: a, input: go, expect: {final: {contain: x}}}]\n",
            "fixture.test.yaml": head
            + "fixtures: {/data: ./missing}\ncases: [{name: a, input: go}]\n",
            "vars.test.yaml": head
            + "cases:\n  - {name: a, input: go}\n  - {name: b, input: go, vars: {topik: home}}\n",
            "good.test.yaml": head + "cases: [{name: a, input: go, vars: {topic: home}}]\n",
        },
    )
    names = ["typo.test.yaml", "fixture.test.yaml", "vars.test.yaml", "good.test.yaml"]
    result = run_cli("validate", *names, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == "ok: good.test.yaml (a test file)\n"
    assert result.stderr.splitlines() == [
        "typo.test.yaml:3:47: cases[0].expect.final.contain: unknown key; did you mean 'contains'?",
        'fixture.test.yaml:3:19: fixtures["/data"]: folder not found: missing',
        "vars.test.yaml:5:40: cases[1].vars.topik: notes.yaml has no template variable "
        "'topik'; did you mean 'topic'? it uses: topic",
        "3 of 4 files have problems",
    ]


def test_each_case_starts_from_an_empty_workspace_plus_its_fixtures(tmp_path: Path) -> None:
    from runner.testing.suite import run_suite

    write(
        tmp_path,
        {
            **NOTES,
            "ws/today.md": "left by a manual run",  # write_file refuses to overwrite it
            "fixture/data/input.txt": "from the fixture",
            "clean.test.yaml": """\
            version: 1
            agent: ./notes.yaml
            fixtures: {/: ./fixture}
            cases:
              - name: writes today's notes
                input: go
                expect:
                  final: {contains: Noted}
                  files: {/today.md: {contains: notes}, /data/input.txt: {contains: fixture}}
            """,
            "copy.test.yaml": """\
            version: 1
            agent: ./notes.yaml
            workspace: copy
            cases:
              - name: sees what a manual run left
                input: go
                expect: {files: {/today.md: {contains: manual run}}}
            """,
        },
    )
    suite = run_suite([tmp_path], workdir=tmp_path / ".kept")
    assert not suite.problems, suite.problems
    statuses = {
        r.name: (r.status, r.problems, [c.message for c in r.checks if c.status != "passed"])
        for r in suite.results
    }
    assert statuses == {
        "writes today's notes": ("passed", [], []),
        "sees what a manual run left": ("passed", [], []),
    }
    assert (tmp_path / "ws" / "today.md").read_text() == "left by a manual run"
