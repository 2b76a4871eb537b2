"""The CLI reference page, `docs/cli.md`: every command's `--help`, generated, between two markers.

`tests/cli/test_readme.py` fails when the page's block differs from what the commands print.
To update the block after changing a command, its options or its help text, run from the
repository root:

    .venv/bin/python -m tests.cli.cli_reference --write

(without `--write` it only says whether the page is current, exit 1 when it is not).
"""

from __future__ import annotations

import io
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

import click

from runner.cli import COMMANDS, cli

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
BEGIN = (
    "<!-- BEGIN CLI REFERENCE: generated from --help by "
    "`python -m tests.cli.cli_reference --write`; edit the commands, not this block -->"
)
END = "<!-- END CLI REFERENCE -->"
WIDTH = 80
"""`--help` is at most 80 columns wide (click's default), whatever the terminal."""


def help_text(*argv: str) -> str:
    """What `agentctl ARGV --help` prints, at the reference width."""
    out = io.StringIO()
    with redirect_stdout(out):
        try:
            cli.main([*argv, "--help"], prog_name="agentctl", terminal_width=WIDTH)
        except SystemExit as exc:
            assert not exc.code, f"agentctl {' '.join(argv)} --help exited {exc.code}"
    return out.getvalue()


def command_paths() -> list[tuple[str, ...]]:
    """Every command and subcommand: (), ("run",), ("threads",), ("threads", "list"), ..."""
    paths: list[tuple[str, ...]] = [()]
    context = click.Context(cli, info_name="agentctl")
    for name in sorted(COMMANDS):
        paths.append((name,))
        command = cli.get_command(context, name)
        if isinstance(command, click.Group):
            paths.extend((name, sub) for sub in command.list_commands(context))
    return paths


def render_reference() -> str:
    parts = [BEGIN, ""]
    for path in command_paths():
        title = " ".join(("agentctl", *path))
        parts += [f"## `{title}`", "", "```text", help_text(*path).rstrip("\n"), "```", ""]
    parts.append(END)
    return "\n".join(parts)


def reference_block(text: str) -> str | None:
    """The generated block of the page's text, markers included; None when it has none."""
    found = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), text, flags=re.DOTALL)
    return found.group(0) if found else None


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    block = reference_block(text)
    if block is None:
        print(f"{PAGE}: no block between {BEGIN!r} and {END!r}", file=sys.stderr)
        return 2
    fresh = render_reference()
    if block == fresh:
        print(f"the CLI reference in {PAGE} is current")
        return 0
    if "--write" not in argv:
        print(f"the CLI reference in {PAGE} is out of date: run with --write", file=sys.stderr)
        return 1
    PAGE.write_text(text.replace(block, fresh), encoding="utf-8")
    print(f"updated the CLI reference in {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
