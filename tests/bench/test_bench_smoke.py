"""The benchmark code paths still run against a real server (tiny sizes, no timing asserted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bench.run import Results, Sizes, _memory, _online, _peer
from bench.server import fresh_database
from bench.stats import render

from bench import commits, growth, peer, recovery
from clarion.clock import SystemClock
from clarion.store import open_store

pytestmark = pytest.mark.e2e

TINY = Sizes(
    live=1,
    detached=1,
    sessions=(1,),
    builtin_sessions=(1,),
    idle_sessions=(1, 2),
    throughput_s=0.2,
    peer=2,
)


async def test_online_measurements_produce_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commits, "REPEATS", 1)
    out = Results()
    await asyncio.wait_for(_memory("sqlite", tmp_path, TINY, out), 180)
    await asyncio.wait_for(_online("sqlite", tmp_path, TINY, out), 180)
    names = {row.name for row in out.rows}
    assert "live answer POST -> 200 p50" in names
    assert "detached answer POST -> 200 resumed p50" in names
    assert "commits per live respond (at 200)" in names
    assert "live answer POST -> MCP tool call returns p50" in names
    assert "throughput, 1 concurrent sessions (MCP clients)" in names
    assert "server CPU per cycle, 1 sessions (MCP clients)" in names
    assert "server RSS, 2 idle sessions holding a question" in names
    assert "full turns, 1 concurrent sessions (builtin agent)" in names
    assert all(row.value for row in out.rows)
    assert "live answer POST -> 200 p50" in render(out.rows)


async def test_seeding_builds_history_bundles_and_reservations(tmp_path: Path) -> None:
    async with fresh_database("sqlite", tmp_path) as url:
        async with open_store(url, SystemClock()) as store:
            ws = await store.ensure_workspace("default")
            task = await store.create_task(title="t", description="", workspace_id=ws.id)
            session = await store.create_session(task_id=task.id, agent="builtin", is_primary=True)
        assert await growth._grow_to(url, session.id, 250) == 250
        await recovery.seed(url, bundles=20, reservations=4)
        async with open_store(url, SystemClock()) as store:
            assert len(await store.list_detachable_bundles()) == 20
            assert len(await store.reconcile_reservations()) == 4


def test_peer_cycle_runs_when_langgraph_is_installed(tmp_path: Path) -> None:
    out = Results(live_return_p50={"sqlite": 0.01})
    _peer(tmp_path, TINY, out)
    if not peer.available("langgraph"):
        assert out.rows[0].value == "skipped"
        return
    assert any(row.name.startswith("ratio: live tool return") for row in out.rows)
