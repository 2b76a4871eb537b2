"""Every example agent runs offline from its cassette: with `agentctl run` and in-process.

Each run works in a copy of agents/ (so the repo's agents/workspace/ is never touched) and checks
the final answer, the approvals it passed and the files it left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

import runner
from runner.agent.resolve import Resolver
from runner.check.validate import find_specs
from tests.conftest import AGENTS, ROOT, run_cli
from tests.middleware.helpers import timeless

GUIDE = """\
# Getting started

In this guide we are going to take a look at how you can make use of agentctl in
order to run an agent that is defined in a YAML file.

Install it with `pip install agentctl`.
"""
FAQ = """\
# FAQ

**Can I continue a conversation?** You can make use of --thread with the id printed by the
first run.
"""
REPORT = """\
# Embedded databases: SQLite and DuckDB

SQLite and DuckDB are both embedded databases: SQLite for transactions, DuckDB for
analytics.

## Findings

- SQLite is a serverless SQL engine whose whole database is a single file. Its documentation
  calls it the most widely deployed database engine in the world.
- DuckDB runs inside the host process too, but stores data by column, which makes
  aggregations over large tables fast.
- Choose SQLite for an application's own data, DuckDB to analyse large tables.

## Sources

- sqlite.md
- duckdb.md
"""
NOTE = "/books/le-guin-the-dispossessed.md"


@dataclass
class Outcome:
    """What one run produced, however it was run."""

    final: str
    results: list[tuple[str, str]]  # (tool, content) of the main agent's tool calls
    approved: list[str] = field(default_factory=list)  # tools whose approval was asked for
    structured: Any = None


@dataclass
class Example:
    message: str
    check: Callable[[Path, Outcome], None]
    cassette: str = ""  # default: <name>.cassette.yaml
    final: int = -1  # which reply of the cassette ends the turn (the showcase keeps one more)
    tracker: bool = False  # needs the example issue tracker (agents/issues_api/server.py)
    vars: dict[str, str] = field(default_factory=dict)  # --var NAME=VALUE (typed inputs)
    answers: list[str] = field(default_factory=list)  # to the agent's questions (ask_user)


def last_reply(cassette: Path, agent: str, index: int = -1) -> str:
    return str(yaml.safe_load(cassette.read_text())["agents"][agent][index]["content"])


def check_coder(agents: Path, out: Outcome) -> None:
    assert out.approved == ["execute"]
    assert ("execute", "sample.txt: 15 words\n[Command succeeded with exit code 0]") in out.results
    code = agents / "workspace" / "code"
    assert sorted(p.name for p in code.iterdir()) == ["sample.txt", "word_counts.py"]


def check_notes(agents: Path, out: Outcome) -> None:
    assert out.approved == []
    listing = next(text for name, text in out.results if name == "ls")
    assert timeless(listing) == (
        "/notes/garden.md (108 bytes, modified <time>)\n"
        "/notes/reading.md (109 bytes, modified <time>)"
    )
    assert [name for name, _ in out.results].count("write_todos") == 3
    assert not (agents / "workspace").exists()  # a state backend writes nothing to disk


def check_writer(agents: Path, out: Outcome) -> None:
    docs = agents / "workspace" / "docs"
    assert (docs / "guide.md").read_text() == GUIDE.replace(
        "In this guide we are going to take a look at how you can make use of agentctl in\n"
        "order to run an agent that is defined in a YAML file.\n",
        "This guide shows how to run an agent defined in a YAML file with agentctl.\n",
    )
    assert (docs / "faq.md").read_text() == FAQ.replace(
        "You can make use of --thread", "Use --thread"
    )
    assert out.structured == {
        "changed_files": ["/guide.md", "/faq.md"],
        "summary": 'Shortened the guide\'s introduction to one sentence and replaced "make use of" '
        'with "use" in the FAQ; the meaning of both documents is unchanged.',
    }


def check_researcher(agents: Path, out: Outcome) -> None:
    # the coder's `execute` (inside the subagent) and the write of /report.md waited for approval
    assert out.approved == ["execute", "write_file"]
    workspace = agents / "workspace"
    assert (workspace / "report.md").read_text() == REPORT
    assert (workspace / "notes" / "sources.md").read_text().startswith("# Sources\n")
    assert (workspace / "code" / "count_words.py").is_file()  # the coder's own backend
    assert not (workspace / "memories").exists()  # /memories/ is routed to the store
    tasks = [content for name, content in out.results if name == "task"]
    assert tasks[0] == (
        "I ran `python3 count_words.py`; it printed 13, so the sentence has 13 words."
    )
    assert tasks[1].startswith('1. "The most widely deployed database engine in the world"')
    assert ("word_count", "13") in out.results
    assert ("write_file", "Updated file /memories/research.md") in out.results


def check_librarian_files(agents: Path, out: Outcome) -> None:
    assert out.results[:2] == [
        ("grep", "No matches for 'Dispossessed'"),
        ("write_file", f"Updated file {NOTE}"),
    ]


def check_librarian_finds(agents: Path, out: Outcome) -> None:
    assert out.results[0] == ("grep", NOTE)  # filed by the earlier thread, found in the store
    assert out.results[1][1].startswith("     1\t# The Dispossessed, Ursula K. Le Guin\n")


def check_showcase(agents: Path, out: Outcome) -> None:
    # planning, the skill read from /skills/, the notes written, a reviewer subagent, an approval
    notes = (agents / "workspace" / "showcase" / "RELEASE_NOTES.md").read_text()
    assert notes.startswith("# agentctl 0.1.0")
    names = [name for name, _ in out.results]
    assert names.count("write_todos") >= 2
    assert ("read_file" in names) and ("task" in names) and ("edit_file" in names)
    assert any(
        name == "read_file" and "name: release-notes" in content for name, content in out.results
    )
    assert out.approved, "the showcase waits for an approval"
    assert ("write_file", "Updated file /RELEASE_NOTES.md") in out.results


def check_issues(agents: Path, out: Outcome) -> None:
    assert out.approved == ["createIssue"]
    names = [name for name, _ in out.results]
    assert names == ["tracker_status", "listIssues", "getIssue", "createIssue"]
    issue = json.loads(out.results[2][1])
    assert issue["title"] == "Crash when the config file is empty"
    created = json.loads(out.results[3][1])
    assert (created["number"], created["state"]) == (3, "open")


def check_maintainer(agents: Path, out: Outcome) -> None:
    assert out.approved == []  # `ls` is allowed, `rm` denied: nobody is asked
    hostile = out.results[1]
    assert hostile[0] == "count_words"
    assert hostile[1].startswith("wc: 'notes.txt; rm -rf / $(touch pwned) `touch pwned`': No such")
    assert out.results[2] == ("count_words", "7 notes.txt\n[Command succeeded with exit code 0]")
    denied = next(text for name, text in out.results if text.startswith("Error: this call"))
    assert "denied by permissions.deny[0]" in denied
    workspace = agents / "workspace" / "maintainer"
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]


def check_briefing(agents: Path, out: Outcome) -> None:
    # topic, depth and tone came from --var, converted to their types before the prompt rendered
    assert out.results == [("write_file", "Updated file /briefing.md")]


def check_planner(agents: Path, out: Outcome) -> None:
    # the run stopped at the question; the answer resumed it and came back as the tool result
    assert out.results == [("ask_user", "Lisbon"), ("write_file", "Updated file /plan.md")]


def check_digest(agents: Path, out: Outcome) -> None:
    # within its budgets: the reader subagent's facts came back and the run finished
    [(name, facts)] = out.results
    assert name == "task" and facts.startswith("- A whole SQL database in one file")


EXAMPLES: dict[str, list[Example]] = {
    "digest": [Example("Digest SQLite", check_digest)],
    "planner": [Example("Plan a team offsite", check_planner, answers=["Lisbon"])],
    "briefing": [
        Example(
            "Go",
            check_briefing,
            vars={"topic": "SQLite", "depth": "3", "tone": "casual"},
        )
    ],
    "coder": [Example("How many words are in the sample text?", check_coder)],
    "notes": [
        Example(
            "Tomatoes go in after the frost, the shed leaks, book club is on the 14th and Sam "
            "still has my atlas.",
            check_notes,
        )
    ],
    "writer": [Example("Tighten the docs.", check_writer)],
    "showcase": [Example("Write the release notes for agentctl 0.1.0", check_showcase, final=-2)],
    "researcher": [Example("Compare SQLite and DuckDB.", check_researcher)],
    "issues": [
        Example(
            "agentctl crashes on an empty agent.yaml, and validate is slow on big folders.",
            check_issues,
            tracker=True,
        )
    ],
    "maintainer": [Example("Measure the notes and clear out old files.", check_maintainer)],
    "librarian": [
        Example("File my note on The Dispossessed by Le Guin.", check_librarian_files),
        Example(
            "What did I think of The Dispossessed?",
            check_librarian_finds,
            cassette="librarian.lookup.cassette.yaml",
        ),
    ],
}


def test_every_example_has_a_cassette_and_a_run_here() -> None:
    names = sorted(path.stem for path, _ in find_specs([AGENTS]))
    # docs: tests/tools/test_mcp.py runs its CLI (and build_agent below runs it too)
    assert names == sorted([*EXAMPLES, "docs"])
    for name in names:
        assert (AGENTS / f"{name}.cassette.yaml").is_file(), name


def test_a_replay_model_replays_subagents_with_a_model_of_their_own_too() -> None:
    # The researcher's `coder` (a ref) names openai:gpt-4.1; offline, its replies come from the
    # same cassette, under its name. Any other override leaves a subagent's own model alone.
    spec = runner.load_spec(AGENTS / "researcher.yaml")
    replay = f"replay:{AGENTS / 'researcher.cassette.yaml'}"
    coder = next(
        s.agent for s in Resolver(model=replay).resolve(spec).subagents if s.name == "coder"
    )
    assert coder is not None and coder.model.id == replay
    resolved = Resolver(model="openai:gpt-4.1-mini", with_models=False).resolve(spec)
    coder = next(s.agent for s in resolved.subagents if s.name == "coder")
    assert coder is not None and coder.model.id == "openai:gpt-4.1"


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    """A copy of agents/ without its workspace."""
    copy = tmp_path / "agents"
    shutil.copytree(AGENTS, copy, ignore=shutil.ignore_patterns("workspace", "__pycache__"))
    if (ROOT / "skills").is_dir():  # the researcher's `skills: [../skills]`
        shutil.copytree(ROOT / "skills", tmp_path / "skills")
    return copy


def prepare(name: str, agents: Path) -> None:
    """The writer edits documents already in its folder."""
    if name == "writer":
        docs = agents / "workspace" / "docs"
        docs.mkdir(parents=True)
        (docs / "guide.md").write_text(GUIDE)
        (docs / "faq.md").write_text(FAQ)


def cassette_of(name: str, example: Example) -> str:
    return example.cassette or f"{name}.cassette.yaml"


def cli_outcome(lines: list[dict[str, Any]], main: str) -> Outcome:
    final = lines[-1]
    assert final["type"] == "final", final
    return Outcome(
        final=final["content"],
        results=[
            (e["name"], e["content"])
            for e in lines
            if e["type"] == "tool_result" and e["agent"] == main
        ],
        approved=[a["name"] for e in lines if e["type"] == "interrupt" for a in e["actions"]],
        structured=final.get("structured_response"),
    )


@pytest.mark.parametrize("name", EXAMPLES)
def test_agentctl_run_replays_the_example(
    name: str, agents: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    prepare(name, agents)
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if any(example.tracker for example in EXAMPLES[name]):
        env["ISSUES_API"] = request.getfixturevalue("tracker")
    for example in EXAMPLES[name]:
        cassette = cassette_of(name, example)
        done = run_cli(
            "run",
            f"agents/{name}.yaml",
            example.message,
            "--model",
            f"replay:agents/{cassette}",
            "--output",
            "jsonl",
            "--auto-approve",
            *[f"--var={name}={value}" for name, value in example.vars.items()],
            cwd=tmp_path,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        for answer in example.answers:  # the run waits for the question: answer it, go on
            assert lines[-1]["type"] == "interrupt", lines[-1]
            thread = lines[-1]["thread_id"]
            done = run_cli(
                *("run", f"agents/{name}.yaml", "--thread", thread, "--answer", answer),
                *("--output", "jsonl"),
                cwd=tmp_path,
                env=env,
            )
            assert done.returncode == 0, done.stderr
            lines += [json.loads(line) for line in done.stdout.splitlines()]
        out = cli_outcome(lines, name)
        assert out.final == last_reply(agents / cassette, name, example.final)
        example.check(agents, out)


def invoke_approving(
    agent: Any, message: str, thread: str, answers: list[str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Run one turn with `invoke`, approving every call that waits (as --auto-approve does) and
    answering the agent's questions with `answers`, in order."""
    answers = list(answers or ())
    config = {"configurable": {"thread_id": thread}}
    inputs: Any = {"messages": [{"role": "user", "content": message}]}
    approved: list[str] = []
    while True:
        result = agent.invoke(inputs, config)
        waiting = result.get("__interrupt__") or []
        if not waiting:
            return result, approved
        resume = {}
        for interrupt in waiting:
            if interrupt.value.get("type") == "ask_user":
                resume[interrupt.id] = answers.pop(0)
                continue
            requests = interrupt.value["action_requests"]
            approved += [r["name"] for r in requests]
            resume[interrupt.id] = {"decisions": [{"type": "approve"}] * len(requests)}
        inputs = Command(resume=resume)


def results_of(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(str(m.name), str(m.content)) for m in messages if m.type == "tool"]


@pytest.mark.parametrize("name", [*EXAMPLES, "docs"])
def test_build_agent_invoke_replays_the_example(
    name: str, agents: Path, request: pytest.FixtureRequest
) -> None:
    prepare(name, agents)
    if any(example.tracker for example in EXAMPLES.get(name, ())):
        request.getfixturevalue("tracker")
    store = InMemoryStore()  # shared by the librarian's two threads
    examples = EXAMPLES.get(name) or [Example("Which databases are embedded?", lambda a, o: None)]
    for index, example in enumerate(examples):
        cassette = agents / cassette_of(name, example)
        agent = runner.build_agent(
            agents / f"{name}.yaml",
            model=f"replay:{cassette}",
            vars=example.vars,
            checkpointer=InMemorySaver(),
            store=store,
        )
        result, approved = invoke_approving(
            agent, example.message, f"thread-{index}", example.answers
        )
        last_ai = next(m for m in reversed(result["messages"]) if m.type == "ai")
        out = Outcome(
            final=last_ai.text,
            results=results_of(result["messages"]),
            approved=approved,
            structured=result.get("structured_response"),
        )
        assert out.final == last_reply(cassette, name, example.final)
        example.check(agents, out)
