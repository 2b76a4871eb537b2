"""A prebuilt LangGraph graph used as an `import:` subagent."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def make_graph(prefix: str) -> Any:
    def echo(state: State) -> dict[str, Any]:
        return {"messages": [AIMessage(content=prefix + state["messages"][-1].text)]}

    graph = StateGraph(State)
    graph.add_node("echo", echo)
    graph.add_edge(START, "echo")
    graph.add_edge("echo", END)
    return graph.compile()
