"""Summarization near the context limit, through the whole agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

import runner
from runner.events import TextDelta
from runner.middleware.summarization import approx_tokens, cut_point
from runner.run import Session
from tests.fakes import ScriptedChatModel, ai

NOTE = "observation " * 60  # ~180 tokens per tool result


def spec(tmp_path: Path, **data: Any) -> Path:
    path = tmp_path / "agent.yaml"
    base = {"name": "long", "summarization": {"trigger": {"tokens": 1200}, "keep": {"messages": 4}}}
    path.write_text(yaml.safe_dump({**base, **data}, sort_keys=False), encoding="utf-8")
    return path


def scripted(steps: int) -> ScriptedChatModel:
    """Writes `steps` notes, then answers; summarizer calls get a structured summary."""

    written = 0

    def reply(messages: list[BaseMessage]) -> Any:
        nonlocal written
        if "<conversation>" in messages[0].text:
            return ai(
                "## Intent\nTake notes.\n\n## Done and produced\nNotes 0-3 in /notes/.\n\n## Next steps\nFinish."
            )
        if written < steps:
            written += 1
            return ai(
                f"Note {written - 1}.",
                ("write_file", {"file_path": f"/notes/{written - 1}.md", "content": NOTE}),
            )
        done = sum(1 for m in messages if m.type == "tool")
        return ai(f"Finished after {done} visible tool results.")

    return ScriptedChatModel(script=reply)


def test_old_messages_are_replaced_by_a_summary_and_saved(tmp_path: Path) -> None:
    model = scripted(8)
    agent = runner.build_agent(spec(tmp_path), model=model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "th-1"}}
    result = agent.invoke({"messages": [{"role": "user", "content": "take eight notes"}]}, config)
    messages = result["messages"]
    summary = messages[0]
    assert summary.type == "system" and summary.additional_kwargs.get("agentctl_summary")
    assert summary.text.startswith(
        "## Summary of the conversation so far\n\n## Intent\nTake notes."
    )
    assert "saved in full in /conversation_history/th-1.md" in summary.text
    assert messages[1].type != "tool"  # the kept tail never starts with a tool result
    assert messages[-1].text.startswith("Finished")
    # the model saw the summary and the kept tail, not the replaced messages
    summarizer_calls = [c for c in model.calls if "<conversation>" in c[0].text]
    assert summarizer_calls
    # ... as context: in the system message, not as a user turn
    after = next(c for c in model.calls if "## Summary of the conversation so far" in c[0].text)
    assert after[0].type == "system" and after[0].text.index("## Intent") > 0
    assert not any(m.additional_kwargs.get("agentctl_summary") for m in after)
    assert [m.type for m in after[1:2]] == ["human"]
    assert "Summary of the conversation" not in after[1].text
    assert "take eight notes" not in [m.text for m in after[1:]]
    # everything replaced is in the history file, on the agent's backend (state here)
    history = result["files"]["/conversation_history/th-1.md"]["content"]
    assert history.startswith("# Conversation history\n\n## Replaced by a summary at ")
    assert "Human: take eight notes" in history and "Note 0." in history
    # every note survived in the files
    assert sorted(result["files"]) == sorted(
        [f"/notes/{i}.md" for i in range(8)] + ["/conversation_history/th-1.md"]
    )


def test_below_the_trigger_nothing_happens(tmp_path: Path) -> None:
    model = scripted(1)
    agent = runner.build_agent(spec(tmp_path), model=model)
    result = agent.invoke({"messages": [{"role": "user", "content": "one note"}]})
    assert result["messages"][0].text == "one note"
    assert not any("<conversation>" in c[0].text for c in model.calls)


def test_cut_point_keeps_tool_calls_with_their_results() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    history = [
        HumanMessage("go", id="1"),
        AIMessage(
            "",
            tool_calls=[{"name": "a", "args": {}, "id": "x"}, {"name": "b", "args": {}, "id": "y"}],
            id="2",
        ),
        ToolMessage("ra", tool_call_id="x", id="3"),
        ToolMessage("rb", tool_call_id="y", id="4"),
        AIMessage("done", id="5"),
    ]
    # keeping 2 messages would start at a ToolMessage: the cut moves back to the AI message
    assert cut_point(history, ("messages", 2), None, approx_tokens) == 1
    assert cut_point(history, ("messages", 1), None, approx_tokens) == 4
    budget = approx_tokens(history[-1]) + approx_tokens(history[-2])
    assert cut_point(history, ("tokens", budget), None, approx_tokens) == 1


def test_replayed_summaries_come_from_the_summary_replies(tmp_path: Path) -> None:
    calls = [
        {"name": "write_file", "args": {"file_path": f"/n{i}.md", "content": NOTE}}
        for i in range(6)
    ]
    cassette = {
        "agents": {
            "long": [{"content": f"step {i}", "tool_calls": [call]} for i, call in enumerate(calls)]
            + [{"content": "All written."}],
            "long/summary": [
                {
                    "content": "## Intent\nNotes.\n\n## Done and produced\nSix notes.\n\n## Next steps\nNone."
                }
            ],
        }
    }
    (tmp_path / "c.cassette.yaml").write_text(yaml.safe_dump(cassette))
    path = spec(tmp_path, model="replay:c.cassette.yaml")
    with Session(path, db=tmp_path / "db") as session:
        events = list(session.stream("write six notes"))
        values = session.values(events[0].thread_id)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "Six notes" not in text  # the summarizer's words are not shown as the agent's
    assert events[-1].content == "All written."  # type: ignore[attr-defined]
    assert "Six notes." in values["messages"][0].text


def test_a_message_rewritten_under_its_id_is_counted_again(tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from runner.middleware.summarization import SummarizationMiddleware

    middleware = SummarizationMiddleware(
        model=None,
        provider=None,
        trigger=("tokens", 10**6),
        keep=("messages", 2),
        context_window=None,  # type: ignore[arg-type]
    )
    big = AIMessage(
        "",
        tool_calls=[
            {"name": "write_file", "args": {"file_path": "/a", "content": "x" * 40_000}, "id": "c1"}
        ],
        id="ai-1",
    )
    history = [HumanMessage("go", id="h-1"), big]
    before = middleware.conversation_tokens(history)
    evicted = big.model_copy(
        update={
            "tool_calls": [
                {
                    **big.tool_calls[0],
                    "args": {"file_path": "/a", "content": "[40,000 characters, removed]"},
                }
            ]
        }
    )
    after = middleware.conversation_tokens([history[0], evicted], rewritten=True)
    assert before > 10_000 > after
    # without the rewrite signal, a grown conversation is counted on from the last total
    grown = middleware.conversation_tokens([history[0], evicted, HumanMessage("more", id="h-2")])
    assert after < grown < after + 10


def test_an_exported_thread_shows_the_summary_as_a_summary_not_as_the_user(tmp_path: Path) -> None:
    from runner.threads import export as thread_tools

    path = spec(tmp_path)
    with Session(path, db=tmp_path / "a.db", model=scripted(8)) as session:
        thread = session.run("take eight notes").thread_id
        records = thread_tools.export_records(session.home, thread)
        markdown = thread_tools.export_markdown(session.home, thread)
    [summary] = [r for r in records if r.get("summary")]
    assert summary["role"] == "system" and summary["index"] == 0
    assert summary["content"].startswith("## Summary of the conversation so far")
    assert "### Summary of the earlier conversation\n\n## Summary of the conversation" in markdown
    users = markdown.split("### User")[1:]
    assert not any("Summary of the conversation" in part.split("###")[0] for part in users)
