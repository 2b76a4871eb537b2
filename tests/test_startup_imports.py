"""What starting an agent imports: nothing heavy that the agent does not use."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import last_line_of


def test_building_a_non_anthropic_agent_does_not_import_the_anthropic_sdk(tmp_path: Path) -> None:
    spec = tmp_path / "agent.yaml"
    spec.write_text(yaml.safe_dump({"name": "plain", "prompt": "Plain text."}), encoding="utf-8")
    cassette = tmp_path / "c.cassette.yaml"
    cassette.write_text(
        yaml.safe_dump({"agents": {"plain": [{"content": "hi"}]}}), encoding="utf-8"
    )
    code = (
        "import sys, runner\n"
        f"runner.build_agent({str(spec)!r}, model='replay:{cassette}')\n"
        "print(sorted(m for m in ('langchain_anthropic', 'jinja2') if m in sys.modules))\n"
    )
    assert last_line_of(code) == "[]"


def loaded_by_cli(args: list[str], cwd: Path, *, also: tuple[str, ...] = ()) -> list[str]:
    """The LangChain and LangGraph packages `agentctl ARGS` imports (`langchain` itself, and
    `langchain_core` / `langgraph` as "core" / "langgraph"), and those of the modules `also` it
    imports."""
    code = (
        "import sys\n"
        "from runner.cli import main\n"
        f"main({args!r})\n"
        "found = {m.split('.')[0] for m in sys.modules}\n"
        "found = found & {'langchain', 'langchain_core', 'langgraph'}\n"
        f"print(sorted(found | {{m for m in {also!r} if m in sys.modules}}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True
    )
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


_EVENTS = ("runner.events",)


def test_the_threads_commands_do_not_import_langchain(tmp_path: Path) -> None:
    from runner.run import Session
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import spec_file

    db = str(tmp_path / "threads.db")
    empty = str(tmp_path / "empty.db")
    assert loaded_by_cli(["threads", "list", "--db", empty], tmp_path) == []
    with Session(
        spec_file(tmp_path), model=ScriptedChatModel(script=[{"content": "hi"}]), db=db
    ) as session:
        thread = session.run("hello").thread_id
    # nor the run's event classes (about 10 ms of the import): a list shows none
    assert loaded_by_cli(["threads", "list", "--db", db], tmp_path, also=_EVENTS) == []
    assert loaded_by_cli(["threads", "keep-checkpoints", "--db", db], tmp_path) == []
    # the saved messages are read as plain values (runner.threads.transcripts)
    assert loaded_by_cli(["threads", "show", thread, "--db", db], tmp_path) == []
    assert loaded_by_cli(["threads", "rm", thread, "--yes", "--db", db], tmp_path) == []


def test_listing_and_showing_postgres_threads_import_no_langchain(
    tmp_path: Path, postgres_url: str
) -> None:
    """On Postgres too (`--db postgresql://...`): the registry and LangGraph's tables are read
    with psycopg, the saved messages decoded as plain values; LangGraph's saver is imported only
    when a run needs it."""
    from runner.run import Session
    from tests.fakes import ScriptedChatModel
    from tests.middleware.helpers import spec_file

    assert loaded_by_cli(["threads", "list", "--db", postgres_url], tmp_path) == []
    with Session(
        spec_file(tmp_path), model=ScriptedChatModel(script=[{"content": "hi"}]), db=postgres_url
    ) as session:
        thread = session.run("hello").thread_id
    assert loaded_by_cli(["threads", "--db", postgres_url], tmp_path, also=_EVENTS) == []
    assert loaded_by_cli(["threads", "show", thread, "--db", postgres_url], tmp_path) == []
    # and `python -X importtime` agrees: no module of LangChain or LangGraph is imported
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "runner",
            "threads",
            "show",
            thread,
            "--db",
            postgres_url,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "user: hello" in done.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    assert "psycopg" in imported
    assert [m for m in imported if m.split(".")[0] in ("langchain_core", "langgraph")] == []


def test_validating_an_agent_loads_no_cassette_test_file_or_sandbox_code() -> None:
    """`agentctl validate` tells cassettes and test files by their names without their models or
    loaders, checks cassettes (`runner.check.cassettes`) only for an agent that plays one, and
    sandboxes (`runner.backends.sandbox`) only for an agent with a `local_shell` backend."""
    code = (
        "import sys\n"
        "from runner.cli import main\n"
        "main(['validate', 'agents/notes.yaml'])\n"
        "print(sorted(m for m in sys.modules\n"
        "    if 'cassette' in m or m.startswith(('runner.testing', 'runner.backends'))))\n"
    )
    assert last_line_of(code) == "[]"


def test_validating_a_valid_agent_imports_only_what_it_uses() -> None:
    """`agentctl validate` of a valid agentctl file, as the program: no other tool's dialect
    code, nothing for `--json`, a did-you-mean, a URL or a warning line (`logging`)."""
    code = (
        "import atexit, sys\n"
        "unused = ('runner.load.dialects.common', 'runner.load.dialects.adk', 'json', 'difflib',\n"
        "          'urllib.parse', 'logging')\n"
        "atexit.register(lambda: print(sorted(m for m in unused if m in sys.modules)))\n"
        "sys.argv = ['agentctl', 'validate', 'agents/notes.yaml']\n"
        "from runner.program import main\n"
        "sys.exit(main())\n"
    )
    assert last_line_of(code) == "[]"


def test_a_run_imports_the_middleware_of_the_features_its_agent_uses_only(tmp_path: Path) -> None:
    """`agents/notes.yaml` sets no budget, permission, subagent or summarization, runs no command
    (a `state` backend), and the run is not traced and attaches no file: their modules stay
    unimported."""
    cassette = tmp_path / "c.cassette.yaml"
    cassette.write_text(yaml.safe_dump({"agents": {"notes": [{"content": "Done."}]}}))
    args = ["run", "agents/notes.yaml", "hi", "--model", f"replay:{cassette}", "--quiet"]
    args += ["--db", str(tmp_path / "t.db")]
    unused = [
        "runner.middleware.budgets",
        "runner.middleware.permissions",
        "runner.middleware.subagents",
        "runner.middleware.summarization",
        "runner.run.telemetry",
        "runner.run.attachments",
        "runner.backends.local_shell",
        "runner.backends.sandbox",
    ]
    code = (
        "import os, sys\n"
        f"os.environ['AGENTCTL_HOME'] = {str(tmp_path)!r}\n"
        "os.environ.pop('OTEL_EXPORTER_OTLP_ENDPOINT', None)\n"
        "os.environ.pop('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', None)\n"
        "from runner.cli import main\n"
        f"assert main({args!r}) == 0\n"
        f"print(sorted(m for m in {unused!r} if m in sys.modules))\n"
    )
    assert last_line_of(code) == "[]"
