"""The benchmark code paths still run against a real server (tiny sizes, no timing asserted)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

import pytest
from bench.cluster import ClusterSizes
from bench.idle_rows import idle_agents_rows
from bench.run import Results, Sizes, _growth, _idle_agents, _memory, _online, _peer
from bench.server import fresh_database, postgres_reachable
from bench.stats import render

from bench import cluster, commits, growth, idle_agents, peer, recovery, statements
from clarion.runtime.clock import SystemClock
from tests.bench.load import host_load, smoke_ceiling, smoke_sizes
from tests.conftest import services_required
from tests.whole_store import open_whole_store

pytestmark = pytest.mark.e2e

TINY = Sizes(
    live=1,
    detached=1,
    sessions=(1,),
    builtin_sessions=(1,),
    idle_sessions=(1, 2),
    throughput_s=0.2,
    throughput_warmup_s=0.1,
    throughput_rounds=1,
    peer=2,
    idle_agents=2,
    idle_cpu_window_s=1.0,
    restart_answers=1,
)


@pytest.mark.slow
async def test_online_measurements_produce_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commits, "REPEATS", 1)
    out = Results()
    load = host_load()
    sizes = smoke_sizes(TINY, load)
    await asyncio.wait_for(_memory("sqlite", tmp_path, sizes, out), smoke_ceiling(180, load))
    await asyncio.wait_for(_online("sqlite", tmp_path, sizes, out), smoke_ceiling(180, load))
    names = {row.name for row in out.rows}
    assert "live answer POST -> 200 p50" in names
    assert "detached answer POST -> 200 resumed p50" in names
    assert "commits per live respond (at 200)" in names
    assert "live answer POST -> MCP tool call returns p50" in names
    assert "throughput, 1 concurrent sessions (MCP clients)" in names
    throughput = next(r for r in out.rows if r.name.startswith("throughput, 1 concurrent"))
    assert "after 0.1 s of warm-up" in throughput.note
    cpu = next(r for r in out.rows if r.name == "server CPU per cycle, 1 sessions (MCP clients)")
    assert re.search(r"garbage collector \d+\.\d\d ms of it", cpu.note)
    assert f"server RSS, {sizes.idle_sessions[-1]} idle sessions holding a question" in names
    assert "full turns, 1 concurrent sessions (builtin agent)" in names
    assert all(row.value for row in out.rows)
    assert "live answer POST -> 200 p50" in render(out.rows)


@pytest.mark.slow
@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_statement_rows_count_the_live_and_the_detached_cycle_without_and_with_a_policy(
    tmp_path: Path, db: str
) -> None:
    if db == "postgres" and not await postgres_reachable():
        if services_required():
            pytest.fail("PostgreSQL is required")
        pytest.skip("PostgreSQL unreachable")
    rows = {
        row.name: row
        for row in await asyncio.wait_for(
            statements.rows(db, tmp_path, 1), smoke_ceiling(180, host_load())
        )
    }
    live = rows["statements per live cycle (MCP client)"]
    detached = rows["statements per detached cycle"]
    # A cycle writes the question and the answer at the least, whichever driver ran them.
    assert int(live.value) >= 2 and int(detached.value) >= 2
    # A question under a waiting policy writes its deadline row beside the question, too.
    policy_live = rows["statements per live cycle (MCP client), waiting policy"]
    assert int(policy_live.value) > int(live.value)
    assert "on no policy" in rows["statements per detached cycle, waiting policy"].note
    assert live.note.startswith("median of 1;")
    assert ("prepared anew" in detached.note) == (db == "postgres")
    if db == "postgres":  # every round trip: the statements, BEGIN/COMMIT (some), prepares
        trips = re.search(r"(\d+) round trips with (\d+) BEGIN/COMMIT", live.note)
        assert trips is not None, live.note
        assert int(trips[1]) > int(live.value) and int(trips[2]) >= 2
    assert "statements per live cycle (MCP client)" in render(list(rows.values()))


@pytest.mark.slow
async def test_idle_agents_rows_measure_the_stop_and_the_restart(tmp_path: Path) -> None:
    out = Results()
    await asyncio.wait_for(
        _idle_agents("sqlite", tmp_path, TINY, out), smoke_ceiling(300, host_load())
    )
    rows = {row.name: row for row in out.rows}
    running = rows["RSS server + agents, 2 sessions with a detached question, agents running"]
    assert "2 built-in agents" in running.note
    stopped = rows["RSS server + agents, 2 sessions, after the idle stop"]
    assert "0 agent processes left" in stopped.note
    assert float(stopped.value.split()[0]) < float(running.value.split()[0])
    assert "server idle CPU after the idle stop, 2 sessions" in rows
    restart = rows["answer POST -> 200 resumed, agent stopped while idle (restart) p50"]
    assert restart.value.endswith(" ms")


@pytest.mark.slow
async def test_idle_agents_in_waves_keep_at_most_two_waves_running_and_project_the_before(
    tmp_path: Path,
) -> None:
    # Waves of one: the third session starts only once the first one's agent stopped, so at
    # most two agents run at once, though each agent's idle stop (20 s) would let all three
    # run together.
    r = await asyncio.wait_for(
        idle_agents.measure(
            "sqlite", tmp_path, 3, 1, idle_stop_s=20, wave=1, idle_cpu_window_s=1.0
        ),
        smoke_ceiling(300, host_load()),
    )
    assert [w.sessions for w in r.waves] == [1, 2, 3]
    assert 1 <= r.most_agents <= 2
    assert r.agents_after == [] and len(r.restarts) == 1
    rows = {row.name: row for row in idle_agents_rows("sqlite", r)}
    running = rows["RSS server + agents, 3 sessions with a detached question, agents running"]
    assert running.value.endswith("GiB (projected)")
    assert f"waves of 1 (3 waves, at most {r.most_agents} agents running at once" in running.note
    stopped = rows["RSS server + agents, 3 sessions, after the idle stop"]
    assert "per session over the waves" in stopped.note


@pytest.mark.slow
async def test_idle_agents_set_up_no_wave_after_the_budget_and_say_how_many_they_measured(
    tmp_path: Path,
) -> None:
    r = await asyncio.wait_for(
        idle_agents.measure(
            "sqlite", tmp_path, 2, 1, wave=1, idle_cpu_window_s=1.0, setup_budget_s=0.0
        ),
        smoke_ceiling(300, host_load()),
    )
    assert (r.sessions, r.target, len(r.waves)) == (1, 2, 1)
    rows = {row.name: row for row in idle_agents_rows("sqlite", r)}
    stopped = rows["RSS server + agents, 1 sessions, after the idle stop"]
    assert "the set-up budget (0 s) ran out at 1 of 2" in stopped.note


async def test_seeding_builds_history_bundles_and_reservations(tmp_path: Path) -> None:
    async with fresh_database("sqlite", tmp_path) as url:
        async with open_whole_store(url, SystemClock()) as store:
            ws = await store.ensure_workspace("default")
            task = await store.create_task(title="t", description="", workspace_id=ws.id)
            session = await store.create_session(task_id=task.id, agent="builtin", is_primary=True)
        assert await growth._grow_to(url, session.id, 250) == 250
        await recovery.seed(url, bundles=20, reservations=4)
        async with open_whole_store(url, SystemClock()) as store:
            assert len(await store.list_detachable_bundles()) == 20
            assert len(await store.reconcile_reservations()) == 4


def test_peer_cycle_runs_when_langgraph_is_installed(tmp_path: Path) -> None:
    out = Results(live_return_p50={"sqlite": 0.01})
    _peer(tmp_path, TINY, out)
    if not peer.available("langgraph"):
        assert out.rows[0].value == "skipped"
        return
    assert any(row.name.startswith("ratio: live tool return") for row in out.rows)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.nats
async def test_cluster_phase_measures_answers_posted_to_the_sessions_replica_and_another(
    tmp_path: Path,
) -> None:
    if not (await postgres_reachable() and await cluster.nats_reachable()):
        if services_required():
            pytest.fail("the cluster phase needs PostgreSQL and NATS")
        pytest.skip("the cluster phase needs PostgreSQL and NATS")
    sizes = ClusterSizes(
        replicas=(2,), sessions=1, throughput_s=0.2, live=1, rounds=1, redirects=False
    )
    rows = await asyncio.wait_for(cluster.rows(tmp_path, sizes), smoke_ceiling(240, host_load()))
    names = {row.name for row in rows}
    prefix = "cluster, 2 replicas: "
    assert prefix + "throughput, 1 sessions (MCP clients)" in names
    assert prefix + "server CPU per cycle, 1 sessions, all replicas" in names
    returns = "live answer POST -> MCP tool call returns p50"
    assert prefix + f"{returns}, posted to the session's replica" in names
    assert prefix + f"{returns}, posted to another replica" in names
    assert all(row.value and row.value != "skipped" for row in rows)
    cpu = next(row for row in rows if "server CPU" in row.name)
    assert "; per replica " in cpu.note and cpu.note.count(" ms") >= 3
    # Every replica's garbage collector CPU, read around the window beside the replicas' CPU.
    assert re.search(
        r"the median window \d+\.\d\d ms, of which the garbage collector \d+\.\d\d ms; "
        r"per replica \d+\.\d\d, \d+\.\d\d ms, "
        r"of which the garbage collector \d+\.\d\d, \d+\.\d\d ms; ",
        cpu.note,
    ), cpu.note


async def test_the_cluster_phases_client_follows_redirects_to_the_owner_nothing_carried(
    tmp_path: Path,
) -> None:
    if not (await postgres_reachable() and await cluster.nats_reachable()):
        if services_required():
            pytest.fail("the cluster phase needs PostgreSQL and NATS")
        pytest.skip("the cluster phase needs PostgreSQL and NATS")
    sizes = ClusterSizes(replicas=(2,), sessions=1, throughput_s=0.2, live=1, rounds=1)
    result = await asyncio.wait_for(
        cluster.measure(2, tmp_path, sizes, redirects=True), smoke_ceiling(240, host_load())
    )
    assert result.via_other is not None and result.throughput.cycles > 0
    assert len(result.gc_per_cycle) == 2 and all(gc >= 0 for gc in result.gc_per_cycle)
    # Carried: only the placements of its two sessions (the latency's and the window's), none
    # of the answers posted to the replica that does not run the session.
    assert result.carried is not None and result.carried <= 2


async def test_cluster_phase_is_skipped_without_nats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "NATS_URL", "nats://127.0.0.1:9")  # discard: nobody listens
    rows = await cluster.rows(tmp_path, ClusterSizes(replicas=(1,)))
    assert len(rows) == 1 and rows[0].value == "skipped"
    assert "unreachable" in rows[0].note


async def test_growth_rows_give_every_size_its_samples_and_the_ratio(tmp_path: Path) -> None:
    out = Results()
    sizes = replace(TINY, history=(10, 30), history_samples=2)
    await asyncio.wait_for(_growth("sqlite", tmp_path, sizes, out), smoke_ceiling(180, host_load()))
    rows = {row.name: row for row in out.rows}
    for label in ("respond POST -> 200", "pending projection GET task-sessions"):
        assert rows[f"{label} p50, 10 messages"].note == "1.00x; n=2"
        last = rows[f"{label} p50, 30 messages"]
        assert last.target == "<= 1.2x the 10 figure"
        assert last.note.endswith("x; n=2")


def test_the_sandbox_rows_time_both_modes(tmp_path: Path) -> None:
    from bench import sandbox_start
    from clarion.agents.sandbox import bwrap_problem

    rows = asyncio.run(sandbox_start.rows(tmp_path, 1))
    if bwrap_problem() is not None:
        assert [r.value for r in rows] == ["skipped"]
        return
    names = [r.name for r in rows]
    assert "agent start to ACP initialize reply, sandbox none p50" in names
    assert "agent start to ACP initialize reply, sandbox bwrap p50" in names
    assert rows[-1].target == "<= 20 ms"
    assert all(r.value.endswith(" ms") for r in rows)
