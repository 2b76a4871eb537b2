"""`agentctl lsp`: the language server for agent files, on stdin/stdout."""

from __future__ import annotations

import click


@click.command(short_help="Serve agent files to editors (Language Server Protocol, stdio).")
@click.option(
    "--debounce",
    type=click.FloatRange(min=0),
    default=None,
    metavar="MS",
    help="Wait this long after a keystroke before checking (default 30 ms).",
)
@click.option("--stdio", is_flag=True, help="Talk over stdin/stdout (the default and only way).")
def lsp(debounce: float | None, stdio: bool) -> int:
    """Start a language server for agent files, cassettes and test files, talking LSP over
    stdin/stdout: what `agentctl validate` (and, for test files, `agentctl test`) reports, as
    you type, with completion, hover, go to definition, symbols and "did you mean" fixes.
    Editors start it themselves: see the Editor support page of the docs.

    Needs the `lsp` extra: `pip install 'agentctl[lsp]'`.
    """
    try:
        from runner.lsp.server import serve
    except ImportError as exc:
        raise click.ClickException(
            f"`agentctl lsp` needs pygls ({exc.name} is not installed): pip install 'agentctl[lsp]'"
        ) from None
    serve(debounce=None if debounce is None else debounce / 1000)
    return 0
