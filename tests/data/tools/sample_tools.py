"""Tools of every importable kind, for the import tests."""

from __future__ import annotations

from langchain_core.tools import BaseTool, tool


@tool
def shout(text: str) -> str:
    """Repeat the text in capitals."""
    return text.upper()


def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def undocumented(x: str) -> str:
    return x


def make_greeters(greeting: str) -> list[BaseTool]:
    """A factory: one greeter tool per style."""

    @tool
    def greet(name: str) -> str:
        """Greet someone."""
        return f"{greeting}, {name}!"

    @tool
    def greet_loudly(name: str) -> str:
        """Greet someone loudly."""
        return f"{greeting.upper()}, {name.upper()}!"

    return [greet, greet_loudly]


class Counter(BaseTool):
    name: str = "counter"
    description: str = "Count characters."
    offset: int = 0

    def _run(self, text: str) -> int:
        return len(text) + self.offset


NOT_A_TOOL = 42


def broken_factory() -> BaseTool:
    raise RuntimeError("the factory is broken")
