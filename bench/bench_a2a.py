"""The A2A hop: a `task` call to an A2A subagent against the same call to a local one.

Run: .venv/bin/python bench/bench_a2a.py [--repeat 7] [--parallel 4] [--apart]

The lead agent asks for N `task` calls in one message, then answers. The worker is either an
inline subagent whose model answers at once, or an A2A agent built with the official SDK in
this process (or, with `--apart`, another one), served by uvicorn on loopback, whose executor
answers at once. So the difference
is the hop itself: the card (fetched once, at build), one `message/stream` request per call with
its SSE events, the client set-up, and on the sync path an event loop per call. Both run on the
sync (`invoke`) and async (`ainvoke`) paths, interleaved.

Prints a table (median seconds per run, and the A2A run's added seconds per call) and one JSON
line.
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from _common import InstantModel, calls, median, run_agent, timed
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_worker(port: int | None = None) -> tuple[str, Any]:
    """An A2A agent that completes each task at once with its text upper-cased."""
    import uvicorn
    from a2a.helpers import new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from starlette.applications import Starlette

    class Upper(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            if context.message is not None:
                await event_queue.enqueue_event(new_task_from_user_message(context.message))
            updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
            await updater.add_artifact([new_text_part(context.get_user_input().upper())])
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    port = port or _free_port()
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="worker",
        description="Upper-cases text",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="upper", name="upper", description="Upper-cases", tags=["text"])],
        version="1.0",
    )
    handler = DefaultRequestHandler(
        agent_executor=Upper(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return url, server


def script(last: BaseMessage, _call: int) -> AIMessage:
    """The lead asks for N calls (its message says N); a local worker answers its item."""
    text = str(last.content)
    if isinstance(last, HumanMessage) and text.startswith("go "):
        count = int(text.split()[1])
        return calls(
            *[
                ("task", {"description": f"item {i}", "subagent_type": "worker"})
                for i in range(count)
            ]
        )
    if isinstance(last, HumanMessage):
        return AIMessage(content=text.upper())
    return AIMessage(content="done")


def spec(folder: Path, kind: str, url: str) -> Path:
    worker: dict[str, Any] = {"name": "worker", "description": "Upper-cases text"}
    if kind == "a2a":
        worker["a2a"] = {"card": url}
    else:
        worker.update(prompt="Upper-case the text.", tools=[])
    data = {
        "name": f"lead_{kind}",
        "model": "openai:gpt-4.1",  # replaced by the model passed to build_agent
        "general_purpose_agent": False,
        "subagents": [worker],
    }
    path = folder / f"lead_{kind}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument(
        "--apart", action="store_true", help="serve the A2A agent from another process"
    )
    parser.add_argument("--serve-only", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_only:
        serve_worker(args.serve_only)
        while True:
            time.sleep(3600)

    from langgraph.checkpoint.memory import InMemorySaver

    import runner

    process = None
    if args.apart:
        import subprocess
        import sys
        import urllib.request

        port = _free_port()
        command = [sys.executable, __file__, "--serve-only", str(port)]
        process = subprocess.Popen(command)
        url, server = f"http://127.0.0.1:{port}/", None
        for _ in range(300):
            try:
                urllib.request.urlopen(url + ".well-known/agent-card.json", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
    else:
        url, server = serve_worker()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        agents = {
            kind: runner.build_agent(
                spec(Path(tmp), kind, url),
                model=InstantModel(script=script),
                checkpointer=InMemorySaver(),
            )
            for kind in ("local", "a2a")
        }
        for mode in ("invoke", "ainvoke"):
            for count in (1, args.parallel):
                times: dict[str, list[float]] = {"local": [], "a2a": []}
                for round_ in range(args.repeat + 1):  # the first round warms up
                    for kind in ("local", "a2a") if round_ % 2 else ("a2a", "local"):
                        config = {"configurable": {"thread_id": f"{kind}-{mode}-{count}-{round_}"}}
                        message = {"messages": [HumanMessage(content=f"go {count}")]}
                        seconds = timed(lambda: run_agent(agents[kind], message, mode, config))  # noqa: B023
                        if round_:
                            times[kind].append(seconds)
                results[f"{mode} x{count}"] = {k: median(v) for k, v in times.items()}
    if server is not None:
        server.should_exit = True
    if process is not None:
        process.terminate()
        process.wait(timeout=30)

    print(f"{'run':<14}{'local s':>10}{'A2A s':>10}{'added per call ms':>20}")
    for label, found in results.items():
        count = int(label.split("x")[1])
        added = (found["a2a"] - found["local"]) / count * 1000
        print(f"{label:<14}{found['local']:>10.3f}{found['a2a']:>10.3f}{added:>20.1f}")
    print(json.dumps({"bench": "a2a", "median_seconds": results}))


if __name__ == "__main__":
    main()
