"""A thread whose last AI message has unanswered tool calls resumes without a provider error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import runner
from runner.events import Interrupt
from runner.run import Session
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import MODES, call, reply, run, spec_file

PROVIDER_ERROR = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)


def check_like_a_provider(messages: list[BaseMessage]) -> None:
    """Raise as OpenAI does when an AI tool call is not answered by the messages right after it."""
    for index, message in enumerate(messages):
        if not isinstance(message, AIMessage) or not message.tool_calls:
            continue
        answered = set()
        for following in messages[index + 1 :]:
            if following.type != "tool":
                break
            answered.add(following.tool_call_id)
        missing = [c["id"] for c in message.tool_calls if c["id"] not in answered]
        if missing:
            raise ValueError(PROVIDER_ERROR.format(ids=", ".join(missing)))


def strict(replies: list[dict[str, Any]]) -> ScriptedChatModel:
    def answer(messages: list[BaseMessage]) -> dict[str, Any]:
        check_like_a_provider(messages)
        return replies[sum(1 for m in messages if m.type == "ai")]

    return ScriptedChatModel(script=answer)


def cancelled(name: str, call_id: str) -> str:
    return (
        f"Tool call {name} with id {call_id} was cancelled - another message came in before it "
        "could be completed."
    )


def history(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in messages]


def test_the_strict_model_rejects_a_dangling_call() -> None:
    dangling = [HumanMessage("hi"), AIMessage("", tool_calls=[call("ls", "call_1", path="/")])]
    with pytest.raises(ValueError, match="did not have response messages: call_1"):
        check_like_a_provider(dangling)


def test_a_new_message_instead_of_an_approval_cancels_the_pending_call(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, interrupt_on={"write_file": True})
    model = strict(
        [
            reply("Writing it.", call("write_file", "call_w", file_path="/a.md", content="x")),
            reply("Here is the summary instead."),
        ]
    )
    with Session(spec, model=model, db=tmp_path / "db") as session:
        paused = session.run("write it")
        assert isinstance(paused.events[-1], Interrupt)
        done = session.run("actually, just summarise", thread_id=paused.thread_id)
        values = session.values(paused.thread_id)
    assert done.error is None and done.content == "Here is the summary instead."
    assert history(values["messages"]) == [
        ("human", "write it"),
        ("ai", "Writing it."),
        ("tool", cancelled("write_file", "call_w")),
        ("human", "actually, just summarise"),
        ("ai", "Here is the summary instead."),
    ]
    assert values["messages"][2].status == "error" and not values.get("files")


@pytest.mark.parametrize("mode", MODES)
def test_a_checkpoint_left_mid_tool_call_resumes_with_a_new_message(
    tmp_path: Path, mode: str
) -> None:
    # The process died after the model asked for two tools and before they answered: the
    # checkpoint ends with that AI message. The graph alone (no Session) patches what the model
    # is sent; the saved history keeps what happened.
    model = strict([reply("Listing and reading."), reply("Starting over: what do you need?")])
    agent = runner.build_agent(spec_file(tmp_path), model=model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "killed"}}
    interrupted = AIMessage(
        "Listing and reading.",
        tool_calls=[call("ls", "call_ls", path="/"), call("read_file", "call_rf", file_path="/a")],
    )
    agent.update_state(config, {"messages": [HumanMessage("look around"), interrupted]})
    result = run(agent, "are you there?", mode, config)
    assert history(model.calls[-1])[1:] == [
        ("human", "look around"),
        ("ai", "Listing and reading."),
        ("tool", cancelled("ls", "call_ls")),
        ("tool", cancelled("read_file", "call_rf")),
        ("human", "are you there?"),
    ]
    check_like_a_provider(model.calls[-1])
    assert history(result["messages"])[-1] == ("ai", "Starting over: what do you need?")


def test_a_session_saves_the_cancelled_answers_and_adds_no_step_when_nothing_dangles(
    tmp_path: Path,
) -> None:
    model = strict([reply("(never asked)"), reply("Again?"), reply("Still here.")])
    with Session(spec_file(tmp_path), model=model, db=tmp_path / "db") as session:
        graph = session.graph
        config: Any = {"configurable": {"thread_id": "killed"}}
        graph.update_state(
            config,
            {
                "messages": [
                    HumanMessage("look"),
                    AIMessage("Listing.", tool_calls=[call("ls", "call_ls", path="/")]),
                ]
            },
        )
        session.home.register("killed", agent=session.name, spec=None, first_message="look")
        done = session.run("are you there?", thread_id="killed")
        values = session.values("killed")
        # a turn without dangling calls: a model call and no other step (input, loop start,
        # model: three checkpoints)
        before = len(list(graph.get_state_history(config)))
        again = session.run("and now?", thread_id="killed")
        after = len(list(graph.get_state_history(config)))
    assert done.error is None and done.content == "Again?"
    assert history(values["messages"]) == [
        ("human", "look"),
        ("ai", "Listing."),
        ("tool", cancelled("ls", "call_ls")),
        ("human", "are you there?"),
        ("ai", "Again?"),
    ]
    assert again.content == "Still here." and after - before == 3


def test_the_remembering_check_agrees_with_a_full_read_on_every_history() -> None:
    """DanglingCheck reads only what was added since the conversation's last call, though each
    call brings new objects (a turn decodes the checkpoint); whatever the history does between
    calls, as LangGraph's `add_messages` and agentctl can change it (grows, is cut back, has a
    message removed, has an approval's edit replace a reply under its id, has its dangling calls
    answered in place, starts over), its answer is has_dangling's."""
    import random
    import uuid

    from langchain_core.messages import ToolMessage

    from runner.middleware.patch_tool_calls import DanglingCheck, has_dangling

    rng = random.Random(17)
    check = DanglingCheck()
    ids = iter(range(1_000_000))

    def new_id() -> str:
        return uuid.UUID(int=rng.getrandbits(128)).hex

    def asked() -> AIMessage:
        return AIMessage("", id=new_id(), tool_calls=[call("ls", f"c{next(ids)}", path="/")])

    def answer(message: BaseMessage) -> ToolMessage:
        call_id = message.tool_calls[0]["id"]  # type: ignore[attr-defined]
        return ToolMessage("ok", id=new_id(), tool_call_id=call_id)

    def human() -> HumanMessage:
        return HumanMessage(str(rng.random()), id=new_id())

    conversations: list[list[BaseMessage]] = [[human()] for _ in range(3)]
    seen = {True: 0, False: 0}
    full_reads = 0
    for _ in range(1_500):
        messages = rng.choice(conversations)
        move = rng.random()
        if move < 0.5:  # a step: a call and (mostly) its answer
            messages.append(asked())
            if rng.random() < 0.9:
                messages.append(answer(messages[-1]))
        elif move < 0.6 and len(messages) > 2:  # an approval's edit: same id, same call id
            index = max(i for i, m in enumerate(messages) if i == 0 or m.type == "ai")
            if index:
                edited = {**messages[index].tool_calls[0], "args": {"path": "/x"}}  # type: ignore[attr-defined]
                messages[index] = messages[index].model_copy(update={"tool_calls": [edited]})
        elif (
            move < 0.7 and len(messages) > 2
        ):  # one removed by id, or cut back (an older checkpoint)
            del messages[rng.randrange(1, len(messages)) :][: rng.choice((1, len(messages)))]
        elif move < 0.8:  # a summary: every message removed, a new first one, the latest kept
            messages[:] = [human(), *messages[-rng.randrange(1, 4) :]]
        elif move < 0.9:  # the dangling calls answered in place (Session's new history)
            answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
            rebuilt: list[BaseMessage] = []
            for message in messages:
                rebuilt.append(message)
                if message.type == "ai" and message.tool_calls[0]["id"] not in answered:  # type: ignore[attr-defined]
                    rebuilt.append(answer(message))
            messages[:] = rebuilt
        else:  # a new conversation
            messages[:] = [human()]
        expected = has_dangling(messages)
        assert check([m.model_copy() for m in messages]) is expected
        seen[expected] += 1
        full_reads += len(messages)
    assert seen[True] > 100 and seen[False] > 100, seen
    assert check.tallies.messages_read < full_reads / 3, (check.tallies.messages_read, full_reads)
