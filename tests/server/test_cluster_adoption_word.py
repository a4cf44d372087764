"""What a replica tells its routing about its peers (clarion/server/cluster.py, `Joined`): every
peer the watch sees gone, at once, and the adopter's announcement of an adoption, made before
the adopted sessions' recovery (requests then reach the adopter, which holds them until they
are recovered), and only by the survivor that adopted."""

from __future__ import annotations

import asyncio
import contextlib
from types import SimpleNamespace
from typing import Any, cast

from clarion.api.session_gate import SessionGate
from clarion.domain.scope import SessionScope
from clarion.orchestrator.recovery import RecoveryReport
from clarion.ports.cluster import DeadPeer
from clarion.server.cluster import Joined
from clarion.server.replica import Replica
from clarion.server.wiring import App
from clarion.store.db.membership import Membership

CEILING_S = 30.0


class _Member:
    replica_id = "me"
    timeout_s = 0.4


def _joined(
    adopted: list[str] | None,
    said: list[str],
    peers: list[DeadPeer],
    each_gone: asyncio.Event | None = None,
) -> Joined:
    async def adopt_replica(me: str, dead: str) -> list[str] | None:
        said.append(f"adopted {dead}")
        return adopted

    async def dead_peers(me: str) -> list[DeadPeer]:
        return peers

    async def run(scope: SessionScope) -> RecoveryReport:
        said.append("recovered")
        return RecoveryReport(1, 0, 0, 0, 0, 0, 0, 0)

    async def announce(dead: str) -> None:
        said.append(f"announced {dead}")

    app: Any = SimpleNamespace(
        ownership=SimpleNamespace(adopt_replica=adopt_replica, dead_peers=dead_peers),
        metrics=SimpleNamespace(adopted=lambda n: None),
        recovery=SimpleNamespace(run=run),
        deadlines=SimpleNamespace(wake=lambda: None),
        slack_answerer=None,
    )

    def owner_gone(replica_id: str) -> None:
        said.append(f"gone {replica_id}")
        if each_gone is not None and {f"gone {p.replica_id}" for p in peers} <= set(said):
            each_gone.set()

    replica = Replica(cast(Membership, _Member()), lambda: 0)
    return Joined(
        cast(App, app),
        replica,
        SessionGate(),
        owner_gone=owner_gone,
        announce=announce,
    )


async def test_the_adopter_announces_the_adoption_before_it_recovers_the_sessions() -> None:
    said: list[str] = []
    await _joined(["s1"], said, []).take_over("dead")
    assert said == ["adopted dead", "announced dead", "recovered"]


async def test_a_survivor_that_adopted_nothing_announces_nothing() -> None:
    said: list[str] = []
    await _joined(None, said, []).take_over("dead")  # another survivor deleted its row first
    assert said == ["adopted dead"]


async def test_every_peer_the_watch_sees_gone_is_told_at_once_before_its_fencing_window() -> None:
    said: list[str] = []
    each_gone = asyncio.Event()
    peers = [DeadPeer("fresh", silent_s=0.0), DeadPeer("old", 86400.0)]
    watch = asyncio.ensure_future(_joined(None, said, peers, each_gone).watch_peers())
    try:
        await asyncio.wait_for(each_gone.wait(), CEILING_S)
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
    assert said.index("gone old") < said.index("adopted old")
    assert "adopted fresh" not in said[: said.index("gone fresh") + 1]
