"""The peer: the same ask -> answer -> resume cycle in LangGraph with its durable SQLite
checkpointer (`langgraph-checkpoint-sqlite`, the `bench` extra).

A two-node graph: `ask` calls `interrupt()` with the same question the builtin agent asks,
`reply` turns the answer into `You answered: ...`. A cycle is `invoke` on a fresh thread_id
(runs to the interrupt, checkpointed) then `invoke(Command(resume=answer))` on the same
thread_id (loads the checkpoint, finishes the graph). Resume latency is the second call
alone: the analogue of answer POST -> the agent's reply. Commits are the COMMIT statements
the checkpointer's sqlite3 connection issues during one resume (trace callback). It runs in
process with no HTTP, no agent process and no event fan-out, so it is a floor, not a twin.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict


@dataclass(frozen=True)
class PeerResult:
    resume: list[float]
    cycles_per_second: float
    commits_per_resume: int


class _State(TypedDict, total=False):
    answer: dict[str, Any]
    reply: str


def available() -> bool:
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        return False
    return True


def run(workdir: Path, samples: int) -> PeerResult:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    question = {"id": "db", "prompt": "Which database should the service use?"}

    def ask(state: _State) -> _State:
        return {"answer": interrupt(question)}

    def reply(state: _State) -> _State:
        return {"reply": f"You answered: {state['answer']}"}

    builder = StateGraph(_State)
    builder.add_node("ask", ask)
    builder.add_node("reply", reply)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "reply")
    builder.add_edge("reply", END)

    conn = sqlite3.connect(workdir / "langgraph.db", check_same_thread=False)
    commits = {"n": 0}

    def trace(statement: str) -> None:
        if statement.strip().upper().startswith(("COMMIT", "END")):
            commits["n"] += 1

    conn.set_trace_callback(trace)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    answer = {"db": {"selected_options": ["postgres"], "custom_text": ""}}
    resume: list[float] = []
    commit_counts: list[int] = []
    began = time.perf_counter()
    for i in range(samples + 3):
        config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
        graph.invoke({}, config)
        commits["n"] = 0
        t = time.perf_counter()
        out = graph.invoke(Command(resume=answer), config)
        elapsed = time.perf_counter() - t
        if not str(out.get("reply", "")).startswith("You answered"):
            raise RuntimeError(f"LangGraph cycle did not finish: {out}")
        if i == 2:
            began = time.perf_counter()  # three warm-up cycles
        if i >= 3:
            resume.append(elapsed)
            commit_counts.append(commits["n"])
    total = time.perf_counter() - began
    conn.close()
    return PeerResult(resume, samples / total, min(commit_counts))
