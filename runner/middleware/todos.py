"""Planning with `write_todos` (pending / in_progress / completed), LangChain's TodoListMiddleware.

Its system-prompt text joins the statically assembled prompt (see `runner.middleware.prompt`)
instead of being appended on every model call, so this subclass drops the per-call wrap hook and
keeps the tool, the `todos` state key and the check against parallel `write_todos` calls.
"""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware, TodoListMiddleware

from runner.middleware.prompt import PromptSection


class TodosMiddleware(TodoListMiddleware):
    # Restoring the base hooks tells create_agent this middleware does not wrap model calls.
    wrap_model_call = AgentMiddleware.wrap_model_call  # type: ignore[assignment]
    awrap_model_call = AgentMiddleware.awrap_model_call  # type: ignore[assignment]

    def prompt_section(self) -> PromptSection:
        return PromptSection("todos", text=self.system_prompt)
