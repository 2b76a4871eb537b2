"""The README's CLI reference: every command's `--help`, generated, between two markers.

`tests/cli/test_readme.py` fails when the README's block differs from what the commands print.
To update the block after changing a command, its options or its help text, run from the
repository root:

    .venv/bin/python -m tests.cli.cli_reference
"""

from __future__ import annotations

import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import click

from runner.cli import COMMANDS, cli

README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN = (
    "<!-- BEGIN CLI REFERENCE: generated from --help by `python -m tests.cli.cli_reference`; "
    "edit the commands, not this block -->"
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
        parts += [f"### `{title}`", "", "```text", help_text(*path).rstrip("\n"), "```", ""]
    parts.append(END)
    return "\n".join(parts)


def readme_block(text: str) -> str | None:
    found = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), text, flags=re.DOTALL)
    return found.group(0) if found else None


def main() -> None:
    text = README.read_text(encoding="utf-8")
    block = readme_block(text)
    if block is None:
        raise SystemExit(f"{README}: no block between {BEGIN!r} and {END!r}")
    README.write_text(text.replace(block, render_reference()), encoding="utf-8")
    print(f"updated the CLI reference in {README}")


if __name__ == "__main__":
    main()
