"""Cost growth: respond and pending-projection latency as a session's history grows.

One task and session per size (10, 1,000, 100,000 messages of history: completed turns of 100
messages each, written while the server is stopped; see bench.seed), all in one database. One
server then serves every size side by side: a few warm-up rounds, then each round takes one
sample of every size in turn. A sample asks a question and, while it is pending, times GET
/tasks/{id}/task-sessions (the pending projection) and then the live answer (POST -> 200).

Interleaving is what makes the ratio readable: the host's speed drifts by tens of percent
within minutes here, and a drift between one size's samples and the next's would show up as
growth (or hide it). The small sessions share the database with the 100,000-message one, as a
real server's sessions do.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bench.client import ask_and_wait, new_idle_session
from bench.context import Ctx, progress
from bench.latency import answer_live
from bench.seed import clone_turn
from bench.server import BenchServer
from clarion.ports import NewMessage
from clarion.runtime.clock import SystemClock
from clarion.store import open_store

TURN_SIZE = 100


async def _history_turn(url: str, session_id: str, size: int) -> str:
    """Write one completed turn of `size` alternating user/agent messages via the store API."""
    async with open_store(url, SystemClock()) as opened:
        store = opened.stores.turns
        turn = await store.create_turn(session_id)
        for i in range(size):
            author = "user" if i % 2 == 0 else "agent"
            await store.add_message(
                NewMessage(
                    session_id=session_id,
                    author_type=author,
                    type="message",
                    content=f"history message {i}: " + "lorem ipsum " * 8,
                    turn_id=turn.id,
                )
            )
        await store.complete_turn(turn.id)
        return turn.id


async def _count(url: str, session_id: str) -> int:
    async with open_store(url, SystemClock()) as opened:
        return (await opened.stores.reads.list_messages(session_id, limit=1)).total


async def _grow_to(url: str, session_id: str, target: int) -> int:
    have = await _count(url, session_id)
    missing = target - have
    if missing <= 0:
        return have
    if missing < TURN_SIZE:
        await _history_turn(url, session_id, missing)
    else:
        template = await _history_turn(url, session_id, TURN_SIZE)
        copies, rest = divmod(missing - TURN_SIZE, TURN_SIZE)
        if copies:
            await clone_turn(url, template, copies)
        if rest:
            await _history_turn(url, session_id, rest)
    return await _count(url, session_id)


WARM_UP_ROUNDS = 3


async def _sample(ctx: Ctx, task_id: str, session_id: str) -> tuple[float, float]:
    """One question: (respond POST -> 200, projection GET) in seconds."""
    pending_id = await ask_and_wait(ctx.api, ctx.feed, session_id)
    began = time.perf_counter()
    body = await ctx.api.ok("GET", f"/tasks/{task_id}/task-sessions")
    project = time.perf_counter() - began
    if body["sessions"][0]["pending_action"] != "clarification":
        raise RuntimeError(f"projection did not show the pending question: {body}")
    to_200, _ = await answer_live(ctx, session_id, pending_id)
    return to_200, project


async def measure(
    ctx: Ctx, sessions: dict[int, tuple[str, str]], samples: int
) -> dict[int, tuple[list[float], list[float]]]:
    """Round-robin over the sizes: WARM_UP_ROUNDS untimed rounds, then `samples` timed ones."""
    out: dict[int, tuple[list[float], list[float]]] = {size: ([], []) for size in sessions}
    for round_no in range(WARM_UP_ROUNDS + samples):
        for size, (task_id, session_id) in sessions.items():
            respond, project = await _sample(ctx, task_id, session_id)
            if round_no >= WARM_UP_ROUNDS:
                out[size][0].append(respond)
                out[size][1].append(project)
    return out


async def _first_turns(ctx: Ctx, sizes: Sequence[int]) -> dict[int, tuple[str, str]]:
    """A task and a session per size, each with its first turn finished: size -> (task, session)."""
    sessions = {}
    for size in sizes:
        task_id = await ctx.api.create_task(f"cost growth, {size:,} messages")
        sessions[size] = (task_id, await new_idle_session(ctx.api, task_id))
    return sessions


async def run(
    db: str, server: BenchServer, sizes: Sequence[int], samples: int
) -> dict[int, tuple[list[float], list[float]]]:
    await server.start()
    ctx = await Ctx.connect(db, server)
    try:
        sessions = await _first_turns(ctx, sizes)
    finally:
        await ctx.close()
        server.stop()
    for size, (_, session_id) in sessions.items():
        began = time.perf_counter()
        have = await _grow_to(server.database_url, session_id, size)
        seeded_s = time.perf_counter() - began
        progress(f"{db}: cost growth, a session at {have} messages (seeded in {seeded_s:.1f}s)")
    await server.start()
    ctx = await Ctx.connect(db, server)
    try:
        return await measure(ctx, sessions, samples)
    finally:
        await ctx.close()
        server.stop()
