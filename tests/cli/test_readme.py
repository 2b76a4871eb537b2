"""The CLI reference page (`docs/cli.md`) matches `--help`, and `--help` stays fast (no LangChain
import).

After changing a command, its options or its help text, regenerate the page's block from the
repository root with `.venv/bin/python -m tests.cli.cli_reference --write` and commit it.
"""

from __future__ import annotations

import subprocess
import sys

import click

from runner.cli import COMMANDS, cli
from tests.cli.cli_reference import BEGIN, PAGE, command_paths, reference_block, render_reference
from tests.conftest import ROOT


def test_the_cli_reference_page_is_what_help_prints() -> None:
    block = reference_block(PAGE.read_text(encoding="utf-8"))
    assert block is not None, f"docs/cli.md has no {BEGIN!r} block"
    assert block == render_reference(), (
        "docs/cli.md is out of date: run `.venv/bin/python -m tests.cli.cli_reference --write`"
    )


def test_the_reference_covers_every_command_and_subcommand() -> None:
    paths = command_paths()
    assert {path[0] for path in paths if path} == set(COMMANDS)
    assert {("threads", "list"), ("threads", "show"), ("threads", "rm")} <= set(paths)
    context = click.Context(cli, info_name="agentctl")
    for name, (_, _, short_help) in COMMANDS.items():
        command = cli.get_command(context, name)
        assert command is not None and command.short_help == short_help, name


_PROBE = """
import sys
from runner.cli import main

for argv in [[], *([name] for name in sys.argv[1:])]:
    try:
        main([*argv, "--help"])
    except SystemExit as exc:
        assert not exc.code, (argv, exc.code)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("langchain", "langgraph", "rich"))
assert not heavy, heavy
"""


def test_help_imports_neither_langchain_nor_rich() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *sorted(COMMANDS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
