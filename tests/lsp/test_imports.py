"""The language server starts without LangChain: editors start it often, and it must be quick."""

from __future__ import annotations

from tests.conftest import last_line_of


def test_the_server_does_not_import_langchain() -> None:
    code = (
        "import sys\n"
        "import runner.lsp.server, runner.cli.lsp\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}"
        " & {'langchain', 'langchain_core', 'langgraph'}))\n"
    )
    assert last_line_of(code) == "[]"
