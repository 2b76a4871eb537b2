"""Harness tools: argument models built once, and the runtime's state never dumped per call."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage

from runner.backends import provider_from_spec
from runner.middleware.filesystem import FilesystemMiddleware


def runtime(state: dict[str, Any]) -> ToolRuntime:
    return ToolRuntime(
        state=state, context=None, config={}, stream_writer=None, tool_call_id="c1", store=None
    )


def test_file_tools_share_their_argument_models_across_agents() -> None:
    first = FilesystemMiddleware(provider_from_spec(None))
    second = FilesystemMiddleware(provider_from_spec(None))
    assert [t.args_schema for t in first.tools] == [t.args_schema for t in second.tools]


def test_the_runtime_is_injected_but_never_dumped_nor_shown_to_the_model() -> None:
    write = next(
        t for t in FilesystemMiddleware(provider_from_spec(None)).tools if t.name == "write_file"
    )
    assert "runtime" not in write.tool_call_schema.model_json_schema()["properties"]
    args = {"file_path": "/a.md", "content": "x", "runtime": runtime({"messages": [], "files": {}})}
    assert write.args_schema.model_validate(args).model_dump() == {  # type: ignore[union-attr]
        "file_path": "/a.md",
        "content": "x",
    }
    state = {"messages": [HumanMessage("hello")], "files": {}}
    call = {"name": "write_file", "args": {"file_path": "/a.md", "content": "x"}, "id": "c1"}
    result = write.invoke(
        {**call, "type": "tool_call", "args": {**call["args"], "runtime": runtime(state)}}
    )
    assert result.update["messages"][0].content == "Updated file /a.md"  # type: ignore[union-attr]
