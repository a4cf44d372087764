"""Answer latency, one answer at a time on an otherwise idle server.

Live, as the agent sees it (`live_mcp`): a simulated agent (`bench.simulated`) holds the real
MCP tool call open; the benchmark POSTs the answer and records (a) POST sent -> 200 received
and (b) POST sent -> the tool call returned the answer to the MCP client.

Live, through the builtin agent (`live`): its `/scenario ask` holds the MCP tool call open;
the benchmark records (a) and POST sent -> the WebSocket notification carrying the agent's
`You answered: ...` message, which the agent can only send after its MCP tool call returned.

Detached: `/scenario ask-timeout t=1` makes the agent's own MCP client give up after one
second, which detaches the bundle; once that turn has ended the benchmark POSTs the answer
and records POST sent -> 200 with `resumed: true` (the successor turn is accepted by the
agent and published before the 200).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from bench.client import (
    ASK,
    Api,
    ask_and_wait,
    ask_detaching,
    is_agent_text,
    is_turn_completed,
    new_asking_session,
    new_idle_session,
    wait,
)
from bench.context import Ctx, freeze_heap, progress
from bench.simulated import SimulatedAgent, relay_session

WARMUP = 3


async def answer_live(ctx: Ctx, session_id: str, pending_id: str) -> tuple[float, float]:
    """Answer a live question; returns (seconds to 200, seconds to the agent's reply event)."""
    reply = ctx.feed.expect(session_id, is_agent_text("You answered"))
    done = ctx.feed.expect(session_id, is_turn_completed)
    began = time.perf_counter()
    to_200, body = await ctx.api.respond(pending_id)
    if body.get("resumed"):
        raise RuntimeError(f"live answer unexpectedly resumed: {body}")
    at, _ = await wait(reply)
    await wait(done)
    return to_200, at - began


async def live(ctx: Ctx, samples: int) -> tuple[list[float], list[float]]:
    task_id = await ctx.api.create_task("live latency")
    session_id, pending_id = await new_asking_session(ctx.api, ctx.feed, task_id)
    to_200: list[float] = []
    to_reply: list[float] = []
    for i in range(WARMUP + samples):
        if i == WARMUP:
            freeze_heap()
        if i:
            pending_id = await ask_and_wait(ctx.api, ctx.feed, session_id, ASK)
        a, b = await answer_live(ctx, session_id, pending_id)
        if i >= WARMUP:
            to_200.append(a)
            to_reply.append(b)
    progress(f"{ctx.db}: live latency, {samples} answers")
    return to_200, to_reply


async def live_mcp(
    ctx: Ctx, samples: int, *, answer_to: Sequence[Api] = ()
) -> tuple[list[float], list[float]]:
    """Live answers to a simulated agent's MCP tool call: (POST -> 200, POST -> tool returns).

    With `answer_to` (several servers of a cluster) the answers take turns: measured sample
    `j` was POSTed through `answer_to[j % len(answer_to)]`, so each server's samples are
    interleaved with the others' under the same conditions (warm-ups take turns too)."""
    task_id = await ctx.api.create_task("live latency, MCP client")
    session_id, endpoint = await relay_session(ctx, task_id)
    to_200: list[float] = []
    to_return: list[float] = []
    async with SimulatedAgent.connect(ctx, session_id, endpoint) as agent:
        for i in range(WARMUP + samples):
            if i == WARMUP:
                freeze_heap()
            via = answer_to[(i - WARMUP) % len(answer_to)] if answer_to else None
            cycle = await agent.cycle(quiet_task_id=task_id, answer_to=via)
            if i >= WARMUP:
                to_200.append(cycle.to_200)
                to_return.append(cycle.to_tool_return)
    progress(f"{ctx.db}: live latency (MCP client), {samples} answers")
    return to_200, to_return


async def wait_detached(ctx: Ctx, session_id: str, pending_id: str, limit: float = 60) -> None:
    """Until the bundle reads active_detached and every turn of the session has ended."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        bundle = await ctx.api.ok("GET", f"/clarification/{pending_id}")
        if bundle["state"] == "active_detached":
            turns = (await ctx.api.ok("GET", f"/task-sessions/{session_id}/turns"))["turns"]
            if all(t["completed_at"] for t in turns):
                return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"bundle {pending_id} never detached")


async def answer_detached(ctx: Ctx, session_id: str, pending_id: str) -> float:
    """Answer a detached question; returns seconds to the 200 (which must say resumed)."""
    done = ctx.feed.expect(session_id, is_turn_completed)
    to_200, body = await ctx.api.respond(pending_id)
    if not body.get("resumed"):
        raise RuntimeError(f"detached answer did not resume: {body}")
    await wait(done)  # the successor turn ends (the agent acknowledges the resume prompt)
    return to_200


async def detached_round(ctx: Ctx, sessions: list[str], first: list[str] | None) -> list[str]:
    """Make every session ask with a 1 s client timeout; returns their detached pending ids."""
    pids = first or await asyncio.gather(*(ask_detaching(ctx.api, ctx.feed, s) for s in sessions))
    await asyncio.gather(*(wait_detached(ctx, s, p) for s, p in zip(sessions, pids, strict=True)))
    return list(pids)


async def detached(ctx: Ctx, samples: int, width: int = 10) -> list[float]:
    task_id = await ctx.api.create_task("detached latency")
    width = max(1, min(width, samples))
    sessions = list(
        await asyncio.gather(*(new_idle_session(ctx.api, task_id) for _ in range(width)))
    )
    first: list[str] | None = None
    results: list[float] = []
    warm = 1  # the first answer per run pays one-off imports; drop it
    while len(results) < samples:
        pids = await detached_round(ctx, sessions, first)
        first = None
        for session_id, pending_id in zip(sessions, pids, strict=True):
            elapsed = await answer_detached(ctx, session_id, pending_id)
            if warm:
                warm -= 1
                freeze_heap()
            elif len(results) < samples:
                results.append(elapsed)
    progress(f"{ctx.db}: detached latency, {samples} answers")
    return results
