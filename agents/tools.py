"""Tools used by the example agents (imported by `tools: - import: ./tools.py:NAME`)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import BaseTool, tool


def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def make_search_tool(corpus: str) -> BaseTool:
    """A factory: a search tool over the Markdown files in `corpus`."""
    root = Path(corpus)
    if not root.is_absolute():
        root = Path(__file__).parent / root

    @tool
    def search_corpus(query: str) -> str:
        """Search the research corpus for a word or phrase; returns matching lines by file."""
        hits = []
        for path in sorted(root.glob("*.md")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if query.lower() in line.lower():
                    hits.append(f"{path.name}:{number}: {line}")
        return "\n".join(hits) or f"no matches for {query!r}"

    return search_corpus
