"""`ask_user`: the agent asks the person running it a question and waits for the answer.

The tool raises a LangGraph interrupt whose value is `ask_user_request(...)`: `{"type":
"ask_user", "question", "choices", "tool_call_id"}`. Whoever runs the graph resumes it with the
answer: `Command(resume=TEXT)` (or `{"answer": TEXT}`), for this interrupt's id when several
wait. The answer becomes the tool's result, which the model reads. `runner.run` shows the
question as an `Interrupt` action named `ask_user` (allowed decision: `answer`); the terminal
asks it, `agentctl run --thread ID --answer TEXT` answers it, a LangGraph server client resumes it.

The tool journal (`runner.middleware.journal`) records a call only when it returns, so a
question asked before a crash is asked again, never answered twice.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from runner.events import ASK_USER_TOOL, Action
from runner.spec.ask_user import AskUserSpec

__all__ = [
    "ASK_USER_TYPE",
    "AskUserMiddleware",
    "answer_of",
    "ask_user_request",
    "checked_answer",
]

ASK_USER_TYPE = "ask_user"
"""The `type` of an ask_user interrupt's value."""

DESCRIPTION = (
    "Ask the user a question and wait for the answer: when you need a decision, a preference "
    "or a fact only they have, and guessing would waste work. Ask one clear question. Give "
    "`choices` when the answer is one of a few options (the user picks one); leave it out for "
    "a free-text answer. The answer comes back as this tool's result."
)


class AskUserArgs(BaseModel):
    question: str = Field(description="The question, complete and self-contained.")
    choices: list[str] | None = Field(
        default=None, description="The possible answers, when the user should pick one."
    )


def ask_user_request(
    question: str, choices: list[str] | None, tool_call_id: str | None
) -> dict[str, Any]:
    """The interrupt value of one question."""
    return {
        "type": ASK_USER_TYPE,
        "question": question,
        "choices": choices,
        "tool_call_id": tool_call_id,
    }


def answer_of(resume: Any) -> str:
    """The answer in a resume value: the text itself, or `{"answer": TEXT}`."""
    if isinstance(resume, dict) and "answer" in resume:
        resume = resume["answer"]
    return resume if isinstance(resume, str) else str(resume)


def checked_answer(action: Action, decision: Any) -> str:
    """The answer text of `decision` to the question `action`, one of its choices when it has
    some (matched without regard to case); a `DecisionError` (exit 2, a usage error as for
    approvals) saying what is expected otherwise."""
    from runner.errors import DecisionError

    question = action.args.get("question", "")
    if decision.type != "answer":
        raise DecisionError(
            f"the agent asked a question ({question!r}); answer it (--answer TEXT), "
            f"not {decision.type}"
        )
    text = decision.message if isinstance(decision.message, str) else ""
    choices = action.args.get("choices") or []
    if not choices:
        if not text.strip():
            raise DecisionError(f"an answer to {question!r} is some text; the answer was empty")
        return text
    for choice in choices:
        if str(choice).lower() == text.strip().lower():
            return str(choice)
    raise DecisionError(
        f"{text!r} is not one of the choices for {question!r}: "
        + ", ".join(repr(str(c)) for c in choices)
    )


class AskUserMiddleware(AgentMiddleware):
    """Gives the agent the `ask_user` tool (no hooks)."""

    def __init__(self, spec: AskUserSpec) -> None:
        super().__init__()
        self.default_choices = list(spec.choices) if spec.choices else None

        def ask_user(
            runtime: ToolRuntime[Any, Any], question: str, choices: list[str] | None = None
        ) -> str:
            from langgraph.types import interrupt

            offered = [str(c) for c in choices] if choices else self.default_choices
            resume = interrupt(ask_user_request(question, offered, runtime.tool_call_id))
            answer = answer_of(resume)
            if offered:
                # the same choice as offered, whatever case it was typed in
                answer = next((c for c in offered if c.lower() == answer.strip().lower()), answer)
            return answer

        async def aask_user(
            runtime: ToolRuntime[Any, Any], question: str, choices: list[str] | None = None
        ) -> str:
            return ask_user(runtime, question, choices)

        self.tools = [
            StructuredTool.from_function(
                name=ASK_USER_TOOL,
                description=spec.description or DESCRIPTION,
                func=ask_user,
                coroutine=aask_user,
                args_schema=AskUserArgs,
                infer_schema=False,
            )
        ]
