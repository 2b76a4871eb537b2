"""The hand-built graph `bench_serve.py` serves against agentctl: a bare `create_agent` with the
same replayed model (the cassette named by $BENCH_SERVE_CASSETTE) and the same `step` tool,
and nothing else. The engine loads it by file path (`_serve_bare.py:graph`)."""

from __future__ import annotations

import os

from _common import step
from langchain.agents import create_agent

from runner.agent.models import init_model

graph = create_agent(
    init_model(f"replay:{os.environ['BENCH_SERVE_CASSETTE']}", agent="bare", is_main=True),
    tools=[step],
)
