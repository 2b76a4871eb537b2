"""A thread's usage and cost on the page (`/web/api/threads/{id}/usage`): counted from the
replies its state keeps, priced as `agentctl run` prices a reply (the spec's `model.price` and
its fallbacks', matched by the reply's model name), and only for a thread the engine shows the
caller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from runner.spec.budgets import PriceSpec
from runner.web.app import WebAgent, create_app
from runner.web.usage import thread_usage

PRICED = """\
name: priced
model:
  id: replay:priced.cassette.yaml
  price: {input: 2, output: 8}
prompt: p
"""


def _reply(tokens_in: int, tokens_out: int, model: str | None = None) -> dict[str, Any]:
    meta = {"model_name": model} if model else {}
    return {
        "type": "ai",
        "content": "x",
        "usage_metadata": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        "response_metadata": meta,
    }


def test_replies_are_counted_and_priced_by_their_model() -> None:
    prices = {
        "openai:gpt-4.1": PriceSpec(input=2, output=8),
        "openai:o4-mini": PriceSpec(input=0.4, output=1.6),
    }
    messages = [
        {"type": "human", "content": "hi"},
        _reply(1000, 500, "gpt-4.1"),
        {"type": "tool", "content": "ok", "tool_call_id": "1"},
        _reply(2000, 100, "o4-mini-2025-04-16"),  # a fallback answered
    ]
    usage = thread_usage(messages, prices)
    expected = (1000 * 2 + 500 * 8 + 2000 * 0.4 + 100 * 1.6) / 1_000_000
    assert usage == {
        "model_calls": 2,
        "input_tokens": 3000,
        "output_tokens": 600,
        "reported": True,
        "cost": pytest.approx(expected),
        "cost_text": "$0.007",
        "priced_all": True,
    }


def test_counts_kept_under_additional_kwargs_are_read() -> None:
    # how the in-memory engine's state gives a reply back: `usage_metadata` null at the top
    reply = {
        "type": "ai",
        "content": "x",
        "usage_metadata": None,
        "additional_kwargs": {"usage_metadata": {"input_tokens": 7, "output_tokens": 3}},
    }
    usage = thread_usage([reply], {"replay:x.yaml": PriceSpec(input=1_000_000, output=0)})
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_text"]) == (7, 3, "$7.00")


def test_no_price_no_cost_and_no_counts_unknown_tokens() -> None:
    unpriced = thread_usage([_reply(10, 5)], {})
    assert (unpriced["cost"], unpriced["cost_text"], unpriced["priced_all"]) == (None, None, False)
    assert unpriced["input_tokens"] == 10
    silent = thread_usage([{"type": "ai", "content": "x"}], {"m:x": PriceSpec(input=1, output=1)})
    assert silent["model_calls"] == 1 and silent["reported"] is False
    assert silent["cost"] is None


def _client(tmp_path: Path, states: dict[str, Any]) -> TestClient:
    (tmp_path / "priced.yaml").write_text(PRICED, encoding="utf-8")
    (tmp_path / "priced.cassette.yaml").write_text("- content: ok\n", encoding="utf-8")
    seen: list[str] = []

    async def thread_state(request: Any, thread_id: str) -> dict[str, Any] | None:
        seen.append(thread_id)
        return states.get(thread_id)

    agents = [WebAgent("priced", tmp_path / "priced.yaml")]
    app = create_app(agents, graph_for=lambda path: None, thread_state=thread_state)
    return TestClient(app)


def test_the_usage_route_prices_with_the_threads_agent(tmp_path: Path) -> None:
    thread = {"thread_id": "t1", "metadata": {"graph_id": "priced"}}
    state = {"values": {"messages": [{"type": "human", "content": "hi"}, _reply(1_000_000, 0)]}}
    client = _client(tmp_path, {"t1": {"thread": thread, "state": state}})
    answer = client.get("/web/api/threads/t1/usage")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["thread_id"], body["model_calls"], body["cost_text"]) == ("t1", 1, "$2.00")


def test_a_thread_the_engine_does_not_show_is_not_found(tmp_path: Path) -> None:
    client = _client(tmp_path, {})
    answer = client.get("/web/api/threads/someone-elses/usage")
    assert answer.status_code == 404
    assert answer.json() == {"error": "thread someone-elses not found"}


def test_serve_reads_the_thread_with_the_callers_own_credentials(tmp_path: Path) -> None:
    """`runner.serve.thread_guard.thread_state`, as serve passes it: the thread and its state
    are asked of the app in process with the caller's key, so the engine's ownership decides."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from runner.serve.thread_guard import thread_state

    (tmp_path / "priced.yaml").write_text(PRICED, encoding="utf-8")
    (tmp_path / "priced.cassette.yaml").write_text("- content: ok\n", encoding="utf-8")
    owners = {"t1": "alice-key"}
    state = {"values": {"messages": [_reply(500_000, 0)]}}

    def owned(request: Request) -> JSONResponse | None:
        """The engine's answer for a thread the caller does not own: 404, as the engines do."""
        if owners.get(request.path_params["id"]) != request.headers.get("x-api-key"):
            return JSONResponse({"detail": "not found"}, status_code=404)
        return None

    async def thread(request: Request) -> JSONResponse:
        found = {"thread_id": request.path_params["id"], "metadata": {"graph_id": "priced"}}
        return owned(request) or JSONResponse(found)

    async def thread_values(request: Request) -> JSONResponse:
        return owned(request) or JSONResponse(state)

    agents = [WebAgent("priced", tmp_path / "priced.yaml")]
    app = create_app(agents, graph_for=lambda path: None, thread_state=thread_state)
    app.router.routes[:0] = [  # the engine's routes, on the same app as the page's
        Route("/threads/{id}", thread, methods=["GET"]),
        Route("/threads/{id}/state", thread_values, methods=["GET"]),
    ]
    client = TestClient(app)
    mine = client.get("/web/api/threads/t1/usage", headers={"x-api-key": "alice-key"})
    assert (mine.status_code, mine.json()["cost_text"]) == (200, "$1.00")
    theirs = client.get("/web/api/threads/t1/usage", headers={"x-api-key": "bob-key"})
    assert theirs.status_code == 404
