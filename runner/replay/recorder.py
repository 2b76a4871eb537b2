"""Recording a cassette: `agentctl run --record FILE` writes each model reply as it arrives, per
agent, in the format `--model replay:FILE` plays (`runner.spec.cassette`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from runner.events import SUMMARY_TAG

__all__ = ["Recorder"]


class Recorder:
    """A callback handler that writes each model reply to a cassette as it arrives."""

    def __init__(self, path: Path, *, main_agent: str, append: bool) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        self.path = path
        self.main = main_agent
        self.lock = threading.Lock()
        self.agents: dict[str, list[dict[str, Any]]] = {}
        if append and path.exists():
            from runner.replay.cassette import load_cassette

            existing = load_cassette(path)
            for name, replies in existing.agents.items():
                self.agents[name] = [r.model_dump(exclude_defaults=True) for r in replies]
            if existing.main:
                self.agents.setdefault(main_agent, []).extend(
                    r.model_dump(exclude_defaults=True) for r in existing.main
                )
        self.starts: dict[Any, str] = {}
        recorder = self

        class Handler(BaseCallbackHandler):
            def on_chat_model_start(
                self,
                serialized: Any,
                messages: Any,
                *,
                run_id: Any,
                metadata: dict[str, Any] | None = None,
                tags: list[str] | None = None,
                **kwargs: Any,
            ) -> None:
                meta = metadata or {}
                if meta.get("langgraph_node") == "model":
                    agent = str(meta.get("lc_agent_name") or recorder.main)
                    if SUMMARY_TAG in (tags or ()):
                        agent += "/summary"  # replayed from the `<agent>/summary` replies
                    recorder.starts[run_id] = agent

            def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
                agent = recorder.starts.pop(run_id, None)
                if agent is None:
                    return
                message = response.generations[0][0].message
                recorder.add(agent, message)

        self.handler = Handler()

    def add(self, agent: str, message: Any) -> None:
        reply: dict[str, Any] = {"content": message.content}
        if message.tool_calls:
            reply["tool_calls"] = [
                {"name": c["name"], "args": c["args"], "id": c["id"]} for c in message.tool_calls
            ]
        usage = getattr(message, "usage_metadata", None)
        if usage:
            reply["usage"] = {
                "input_tokens": usage.get("input_tokens", 0),
                "output_tokens": usage.get("output_tokens", 0),
            }
        with self.lock:
            self.agents.setdefault(agent, []).append(reply)
            self._write()

    def _write(self) -> None:
        import yaml

        document = {"version": 1, "agents": self.agents}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(
            yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
        tmp.replace(self.path)
