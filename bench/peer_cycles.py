"""One ask -> answer -> resume cycle per peer, built once and called repeatedly (see bench.peer).

`make(kind, workdir)` returns `(cycle, commits)`: `cycle()` runs one full cycle and returns
(seconds of the resume alone, CPU seconds of this process during it); `commits()` counts the
write transactions of one more resume, outside the timed cycles (None where not countable).
"""

from __future__ import annotations

import logging
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

QUESTION = {"id": "db", "prompt": "Which database should the service use?"}
ANSWER = {"db": {"selected_options": ["postgres"], "custom_text": ""}}

Cycle = Callable[[], tuple[float, float]]
Commits = Callable[[], int | None]


class _State(TypedDict, total=False):
    answer: dict[str, Any]
    reply: str


def make(kind: str, workdir: Path) -> tuple[Cycle, Commits]:
    if kind == "dbos":
        return _dbos(workdir)
    return _langgraph(workdir, as_before=kind == "langgraph-as-before")


def _langgraph(workdir: Path, *, as_before: bool) -> tuple[Cycle, Commits]:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    def ask(state: _State) -> _State:
        answer = interrupt(QUESTION)
        if as_before:
            return {"answer": answer}
        return {"answer": answer, "reply": f"You answered: {answer}"}

    def reply(state: _State) -> _State:
        return {"reply": f"You answered: {state['answer']}"}

    builder = StateGraph(_State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    if as_before:
        builder.add_node("reply", reply)
        builder.add_edge("ask", "reply")
        builder.add_edge("reply", END)
    else:
        builder.add_edge("ask", END)
    conn = sqlite3.connect(workdir / f"{uuid.uuid4().hex}.db", check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    durability: Any = "async" if as_before else "sync"

    def timed() -> tuple[float, float]:
        config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
        graph.invoke({}, config, durability=durability)
        cpu, t = time.process_time(), time.perf_counter()
        out = graph.invoke(Command(resume=ANSWER), config, durability=durability)
        elapsed, cpu_s = time.perf_counter() - t, time.process_time() - cpu
        if not str(out.get("reply", "")).startswith("You answered"):
            raise RuntimeError(f"LangGraph cycle did not finish: {out}")
        return elapsed, cpu_s

    def commits() -> int:
        seen = {"n": 0}

        def trace(statement: str) -> None:
            if statement.strip().upper().startswith(("COMMIT", "END")):
                seen["n"] += 1

        config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
        graph.invoke({}, config, durability=durability)
        conn.set_trace_callback(trace)
        graph.invoke(Command(resume=ANSWER), config, durability=durability)
        conn.set_trace_callback(None)
        return seen["n"]

    return timed, commits


def _dbos(workdir: Path) -> tuple[Cycle, Commits]:
    from dbos import DBOS, SetWorkflowID

    DBOS(
        config={
            "name": "clarion-bench-peer",
            "system_database_url": f"sqlite:///{workdir / uuid.uuid4().hex}.sqlite",
            "notification_listener_polling_interval_sec": 0.001,
        }
    )
    received: list[float] = []

    def asking() -> str:
        DBOS.set_event("asked", QUESTION)
        answer = DBOS.recv("answer", timeout_seconds=60)
        received.append(time.perf_counter())
        return f"You answered: {answer}"

    # Registered by a call, not a decorator: without the bench extra, mypy sees dbos as Any.
    ask: Callable[[], str] = DBOS.workflow()(asking)

    DBOS.launch()
    logging.getLogger("dbos").setLevel(logging.WARNING)

    def timed() -> tuple[float, float]:
        workflow_id = str(uuid.uuid4())
        with SetWorkflowID(workflow_id):
            handle = DBOS.start_workflow(ask)
        DBOS.get_event(workflow_id, "asked", timeout_seconds=60)
        cpu, t = time.process_time(), time.perf_counter()
        DBOS.send(workflow_id, ANSWER, "answer")
        out = handle.get_result(polling_interval_sec=0.001)
        cpu_s = time.process_time() - cpu
        if not out.startswith("You answered"):
            raise RuntimeError(f"DBOS cycle did not finish: {out}")
        return received[-1] - t, cpu_s

    return timed, lambda: None
