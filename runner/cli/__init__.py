"""The `agentctl` command line: a click group whose commands are imported on first use.

Each command is a thin call into the library. Errors the user can fix (`RunnerError`) print as
located one-liners and exit with their code (2 for specs and usage, 1 for failed runs); Ctrl-C
exits 130; anything else is a bug in agentctl and says so, with the traceback only when
`AGENTCTL_DEBUG=1`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator
from typing import Any

import click

from runner import __version__

# name -> (module, attribute, one-line help). The help is here so `agentctl --help` does not
# import every command module.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("runner.cli.run", "run", "Run an agent: one message, or a chat in a terminal."),
    "inspect": (
        "runner.cli.inspect",
        "inspect",
        "Show the resolved agent: model, tools, chain, prompt.",
    ),
    "validate": (
        "runner.cli.validate",
        "validate",
        "Check agent and workflow files and report every problem.",
    ),
    "convert": (
        "runner.cli.convert",
        "convert",
        "Convert an agent file between agentctl and other tools' formats.",
    ),
    "schema": (
        "runner.cli.schema",
        "schema",
        "Print, write or check the agent (or cassette) JSON Schema.",
    ),
    "test": ("runner.cli.test", "test", "Run agent test files (*.test.yaml), offline or live."),
    "threads": ("runner.cli.threads", "threads", "List, show, export, fork or prune threads."),
    "init": ("runner.cli.init", "init", "Start a new agent folder that runs offline at once."),
    "serve": ("runner.cli.serve", "serve", "Serve agents over the LangGraph Agent Server API."),
    "mcp": ("runner.cli.mcp_serve", "mcp", "Serve agents as MCP tools (stdio or streamable HTTP)."),
    "lsp": (
        "runner.cli.lsp",
        "lsp",
        "Serve agent files to editors (Language Server Protocol, stdio).",
    ),
}


class ReaderLeft(Exception):
    """Standard output's reader went away (`| head`): a `BrokenPipeError` raised inside click,
    carried out as an exception that is no `OSError`, since click answers `EPIPE` itself with
    exit 1 and no word (`BaseCommand.main`) before `_run` could answer it with 141."""


@contextlib.contextmanager
def _reader_may_leave() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError as exc:
        raise ReaderLeft() from exc


class LazyGroup(click.Group):
    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        with _reader_may_leave():  # `--help` and `--version` write while parsing
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _reader_may_leave():
            return super().invoke(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        from importlib import import_module

        from runner.cli import startup

        if cmd_name in startup.HELD:
            startup.skip_empty_plugin_scan()
        command: click.Command = getattr(import_module(entry[0]), entry[1])
        startup.command_found(cmd_name)
        if cmd_name not in startup.HELD:
            startup.started()
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="agentctl")
def cli() -> None:
    """Run AI agents defined as YAML.

    \b
    Start with:
      agentctl init my-agent              a starter agent that runs offline
      agentctl run my-agent/agent.yaml    chat with it (in a terminal)
      agentctl run agents/x.yaml "hi"     run an agent once
      agentctl validate agents/           check every agent file in a folder
      agentctl inspect agents/x.yaml      see the assembled agent
      agentctl test agents/               run the agents' test files
      agentctl threads                    the saved conversations
    """


@contextlib.contextmanager
def _show_warnings(*, keep: bool) -> Iterator[None]:
    """Warnings from the library (a memory file skipped, a bad skill) as `warning: ...` lines on
    this call's stderr. The program (`keep`) keeps them to its end, through exit handlers, and
    sets them up when `logging` is first imported (`agentctl validate` never imports it: 1.6% of
    its instructions); a call of `main(argv)` puts the logger back as it was, so calls in one
    process (the tests make many) neither stack handlers nor leave one writing to an old
    stream."""
    if keep:
        from runner.cli import startup

        startup.when_imported("logging", _warnings_to_stderr)
        yield
        return
    import logging

    logger = logging.getLogger("agentctl")
    level, propagate, handlers = logger.level, logger.propagate, list(logger.handlers)
    _warnings_to_stderr(logging)
    try:
        yield
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def _warnings_to_stderr(logging: types.ModuleType) -> None:
    """Send the `agentctl` logger's warnings to stderr as `warning: ...` lines, and no further."""
    logger = logging.getLogger("agentctl")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: run the CLI and map errors to exit codes.

    Called without `argv` (as the `agentctl` program), the cyclic garbage collector is held off
    while the command starts, and the process ends when this returns: so the objects it made
    are moved out of the collector's sight first, and the interpreter skips its last full
    collection over every loaded module's objects; a command in `startup.ENDS_ITSELF` ends the
    process here, without the teardown (`runner.cli.startup.finish`). Files, atexit handlers and
    finalizers of objects outside reference cycles run as before; the memory goes back with the
    process.
    """
    if argv is None:
        from runner.cli import startup

        startup.as_program()
        try:
            status = _main(argv)
        except SystemExit as exc:
            startup.finish(exc.code)
            raise
        except BaseException:
            import gc

            gc.freeze()
            raise
        startup.finish(status)
        return status
    return _main(argv)


def _main(argv: list[str] | None) -> Any:
    with _show_warnings(keep=argv is None):
        return _run(argv)


def _run(argv: list[str] | None) -> Any:
    from runner.errors import RunnerError

    try:
        return cli.main(args=argv, prog_name="agentctl", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except RunnerError as exc:
        located = getattr(exc, "problems", None) or getattr(exc, "problem", None)
        click.echo(str(exc) if located else f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (BrokenPipeError, ReaderLeft):
        # The reader left (`| head`): 128 + SIGPIPE, as for any Unix tool that SIGPIPE ended
        # (`agentctl run` ends a turn itself: runner.cli.turns.reader_left). Point stdout at
        # /dev/null so the interpreter's final flush does not fail again and print "Exception
        # ignored ... BrokenPipeError".
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(141)
    except Exception as exc:
        if os.environ.get("AGENTCTL_DEBUG"):
            raise
        click.echo(
            f"agentctl: internal error (this is a bug in agentctl, not in your spec): "
            f"{type(exc).__name__}: {exc}\nRe-run with AGENTCTL_DEBUG=1 for the traceback.",
            err=True,
        )
        sys.exit(1)
