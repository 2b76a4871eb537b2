"""The language server starts without LangChain: editors start it often, and it must be quick."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_the_server_does_not_import_langchain() -> None:
    code = (
        "import sys\n"
        "import runner.lsp.server, runner.cli.lsp\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}"
        " & {'langchain', 'langchain_core', 'langgraph'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
