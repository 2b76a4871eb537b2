"""The spec's `middleware:`: where it runs (seed 000 §3.1) and what it may put in the system
message (seed 000 §5)."""

from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

import runner
from runner.agent.build import middleware_chain
from runner.agent.resolve import Resolver
from tests.fakes import ScriptedChatModel, ai
from tests.middleware.helpers import spec_file

MIDDLEWARE = """\
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import SystemMessage


class Mark(AgentMiddleware):
    def __init__(self, label):
        super().__init__()
        self.label = label

    @property
    def name(self):
        return "Mark-" + self.label


class Blocks(AgentMiddleware):
    \"\"\"Turns the system message into blocks: a cached text block and an image.\"\"\"

    def wrap_model_call(self, request, handler):
        blocks = [
            {"type": "text", "text": request.system_message.text,
             "cache_control": {"type": "ephemeral"}},
            {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
        ]
        return handler(request.override(system_message=SystemMessage(content=blocks)))

    async def awrap_model_call(self, request, handler):
        raise NotImplementedError
"""


def test_a_subagents_own_middleware_runs_after_the_shared_chain(tmp_path: Path) -> None:
    (tmp_path / "mw.py").write_text(MIDDLEWARE)
    spec = spec_file(
        tmp_path,
        model="openai:gpt-4.1",
        middleware=[{"import": "./mw.py:Mark", "args": {"label": "main"}}],
        interrupt_on={"write_file": True},
        subagents=[
            {
                "name": "helper",
                "description": "helps",
                "middleware": [{"import": "./mw.py:Mark", "args": {"label": "own"}}],
            }
        ],
    )
    main = Resolver(with_models=False).resolve(runner.load_spec(spec))
    sub = main.subagents[0].agent
    assert sub is not None
    names = [m.name for m in middleware_chain(sub)]
    # seed 000 §3.1: default (shared) subagent middleware first, then the subagent's own;
    # approvals stay last so they see the calls the model finally made.
    assert names.index("Mark-own") > names.index("PatchToolCallsMiddleware")
    assert names.index("Mark-own") > names.index("SummarizationMiddleware")
    assert names[-1] == "HumanInTheLoopMiddleware"
    main_names = [m.name for m in middleware_chain(main)]
    assert main_names.index("Mark-main") > main_names.index("PatchToolCallsMiddleware")
    assert main_names[-1] == "HumanInTheLoopMiddleware"


def test_text_appended_after_user_middleware_keeps_its_content_blocks(tmp_path: Path) -> None:
    """Seed 000 §5: appending to the system message keeps its blocks (cache control, images)."""
    (tmp_path / "mw.py").write_text(MIDDLEWARE)
    model = ScriptedChatModel(script=[ai("ok")])
    spec = spec_file(
        tmp_path,
        prompt="You are the test agent.",
        middleware=[{"import": "./mw.py:Blocks"}],
        interrupt_on={"write_file": True},
    )
    agent = runner.build_agent(spec, model=model, checkpointer=InMemorySaver())
    agent.invoke(
        {"messages": [{"role": "user", "content": "hi"}]}, {"configurable": {"thread_id": "t"}}
    )
    content = model.calls[0][0].content
    assert isinstance(content, list) and len(content) == 3
    first, image, tail = content
    assert isinstance(first, dict) and first["cache_control"] == {"type": "ephemeral"}
    assert str(first["text"]).startswith("You are the test agent.")
    assert image == {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
    assert isinstance(tail, dict) and tail["type"] == "text"
    assert str(tail["text"]).startswith("\n\n## Approvals")
