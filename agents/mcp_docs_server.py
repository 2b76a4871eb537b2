"""An MCP server over a folder of Markdown documents, for the `docs` example agent.

It speaks MCP over stdio (FastMCP) and offers three tools: `list_documents`, `search` and `read`.
agentctl starts it once per run (see docs.yaml) and stops it when the run ends. Run it by hand
with `python mcp_docs_server.py --corpus corpus`, or inspect it with `agentctl inspect docs.yaml`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mcp.server.fastmcp import FastMCP

server = FastMCP("docs", log_level="WARNING")
corpus = Path("corpus")


def _documents() -> dict[str, Path]:
    return {path.name: path for path in sorted(corpus.glob("*.md"))}


@server.tool()
def list_documents() -> list[str]:
    """The file names of all documents."""
    return list(_documents())


@server.tool()
def search(query: str) -> str:
    """Find the lines that mention `query` (any case) in the documents, as `file:line: text`."""
    hits = []
    for name, path in _documents().items():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if query.lower() in line.lower():
                hits.append(f"{name}:{number}: {line.strip()}")
    return "\n".join(hits) or f"no document mentions {query!r}"


@server.tool()
def read(name: str) -> str:
    """The full text of one document, by file name (e.g. `sqlite.md`)."""
    documents = _documents()
    if name not in documents:  # names only: no path can reach outside the corpus
        raise ValueError(f"no document {name!r}; there are: {', '.join(documents)}")
    return documents[name].read_text(encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="corpus", help="folder of *.md documents")
    corpus = Path(parser.parse_args().corpus)
    server.run("stdio")
