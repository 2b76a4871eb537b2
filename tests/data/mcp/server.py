"""A small FastMCP server for the MCP tests.

    python server.py                  stdio
    python server.py http PORT        streamable HTTP on 127.0.0.1:PORT
    python server.py sse PORT         SSE on 127.0.0.1:PORT

When $MCP_TEST_STARTS names a file, each start appends this process's PID to it, so a test can
count the starts and check the process is gone afterwards.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("notes", log_level="WARNING")
NOTES = {"sqlite": "SQLite is an embedded database.", "duckdb": "DuckDB is for analytics."}


@server.tool()
def search(query: str) -> str:
    """Find the notes that mention a word."""
    found = [name for name, text in NOTES.items() if query.lower() in text.lower()]
    return ", ".join(found) or "nothing found"


@server.tool()
def read_note(name: str) -> str:
    """Read one note by name."""
    return NOTES[name]


@server.tool()
def fail(why: str) -> str:
    """Always fails, with the reason given."""
    raise ValueError(why)


@server.tool()
def crash() -> str:
    """Ends the server process at once, as a crash would."""
    os._exit(1)


@server.tool()
async def nap(seconds: float) -> str:
    """Sleeps, then answers."""
    await asyncio.sleep(seconds)
    return "rested"


@server.tool()
def whoami() -> str:
    """The server's process id and the value of $MCP_TEST_SECRET."""
    return f"{os.getpid()} {os.environ.get('MCP_TEST_SECRET', '-')}"


def meet(folder: str, count: int) -> None:
    """Sign in, then wait until `count` servers have: starts that are not concurrent fail."""
    import pathlib
    import time

    pathlib.Path(folder, str(os.getpid())).touch()
    for _ in range(400):
        if len(os.listdir(folder)) >= count:
            return
        time.sleep(0.05)
    sys.exit("the other servers never started")


if __name__ == "__main__":
    starts = os.environ.get("MCP_TEST_STARTS")
    if starts:
        with open(starts, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")
    if os.environ.get("MCP_TEST_MEET"):
        meet(os.environ["MCP_TEST_MEET"], int(os.environ["MCP_TEST_MEET_COUNT"]))
    if len(sys.argv) == 3:
        server.settings.port = int(sys.argv[2])
        server.run("streamable-http" if sys.argv[1] == "http" else "sse")
    else:
        server.run("stdio")
