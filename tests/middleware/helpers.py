"""Driving a whole compiled agent with a scripted model: specs, scripted replies, results."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import yaml
from langchain_core.messages import BaseMessage

MODES = ("invoke", "ainvoke")


def spec_file(directory: Path, filename: str = "agent.yaml", **fields: Any) -> Path:
    """An agent spec (named `t` unless given), without todos or the general-purpose subagent
    unless given."""
    data = {"name": "t", "todos": False, "general_purpose_agent": False, **fields}
    path = directory / filename
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    """One tool call of a scripted reply (the id is generated when not given)."""
    return {"name": name, "args": args, **({"id": call_id} if call_id else {})}


def reply(content: str = "", *calls: dict[str, Any]) -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def run(agent: Any, message: str, mode: str = "invoke", config: Any = None) -> dict[str, Any]:
    """One turn through the compiled agent, with `invoke` or `ainvoke`."""
    inputs = {"messages": [{"role": "user", "content": message}]}
    if mode == "ainvoke":
        return dict(asyncio.run(agent.ainvoke(inputs, config)))
    return dict(agent.invoke(inputs, config))


def tool_texts(messages: list[BaseMessage]) -> list[str]:
    """The content of every ToolMessage, in order: what the model saw from its tools."""
    return [str(m.content) for m in messages if m.type == "tool"]


LS_TIME = re.compile(r"modified \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def timeless(text: str) -> str:
    """`text` with the modification times `ls` shows replaced by `<time>`."""
    return LS_TIME.sub("modified <time>", text)


NEXT_OFFSET = re.compile(r"offset=(\d+)\.\]$")


def next_page(
    messages: list[BaseMessage], file_path: str, limit: int = 100
) -> dict[str, Any] | None:
    """The read_file call a model following read_file's notes makes next, or None when the last
    read reached the end of `file_path` (its result has no note saying where to read on)."""
    last = messages[-1]
    offset = 0
    if last.type == "tool" and last.name == "read_file":
        found = NEXT_OFFSET.search(str(last.content))
        if found is None:
            return None
        offset = int(found.group(1))
    return reply("", call("read_file", file_path=file_path, offset=offset, limit=limit))


def reassemble(pages: list[str]) -> dict[int, str]:
    """Line number -> text, from read_file pages (rows `N\ttext`, continuation rows `N.k`, and
    the note after a blank line)."""
    lines: dict[int, str] = {}
    for page in pages:
        for row in page.split("\n\n[")[0].split("\n"):
            label, _, text = row.partition("\t")
            number = int(label.strip().split(".")[0])
            lines[number] = lines.get(number, "") + text if "." in label else text
    return lines
