"""The graph LangGraph Server serves as the benchmark's peer: one node that asks with
`interrupt()` and, resumed with the answer, runs again to ask the next question (a loop)."""

from typing import Any, TypedDict

from langgraph.graph import StateGraph
from langgraph.types import interrupt

QUESTION = {"id": "db", "prompt": "Which database should the service use?"}


class State(TypedDict, total=False):
    answers: int
    last: Any


def ask(state: State) -> State:
    answer = interrupt(QUESTION)
    return {"answers": state.get("answers", 0) + 1, "last": answer}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.set_entry_point("ask")
builder.add_edge("ask", "ask")
graph = builder.compile()
