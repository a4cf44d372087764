"""A replica watching its peers (clarion/server/replica.py): a peer that holds no liveness lock is
taken over once its silence has outlasted its fencing window, never before; a failed look at
the peers is retried."""

from __future__ import annotations

import asyncio
import contextlib
from typing import cast

from clarion.ports.cluster import DeadPeer
from clarion.server.replica import Replica
from clarion.store.db.membership import Membership

CEILING_S = 30.0


class _Member:
    """What Replica reads of its membership here."""

    replica_id = "me"
    timeout_s = 0.4  # heartbeat interval 0.1 s, fencing window 0.2 s: settled after 0.3 s


async def _watching(replica: Replica, peers: list[object], taken: list[str]) -> list[str]:
    """Run the watch over `peers` (each look returns the next entry, or raises it) until a
    take-over has happened for every peer that should be taken; returns what was taken."""
    looks = iter(peers)
    done = asyncio.Event()

    async def dead_peers() -> list[DeadPeer]:
        entry = next(looks, None)
        if entry is None:
            done.set()
            return []
        if isinstance(entry, Exception):
            raise entry
        return cast(list[DeadPeer], entry)

    async def take_over(dead: str) -> None:
        taken.append(dead)

    watch = asyncio.ensure_future(replica.watch_peers(dead_peers, take_over))
    try:
        await asyncio.wait_for(done.wait(), CEILING_S)
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
    return taken


async def test_a_dead_peer_is_taken_over_only_once_its_fencing_window_has_passed() -> None:
    replica = Replica(cast(Membership, _Member()), lambda: 0)
    settled = replica.fence_s + replica.interval
    taken = await _watching(
        replica,
        [
            [DeadPeer("fresh", silent_s=settled / 3)],  # may still act: wait
            [DeadPeer("fresh", silent_s=settled * 2 / 3), DeadPeer("stopped", silent_s=86400)],
            [DeadPeer("fresh", silent_s=settled)],
        ],
        [],
    )
    assert taken == ["stopped", "fresh"]


async def test_a_failed_look_at_the_peers_is_retried() -> None:
    replica = Replica(cast(Membership, _Member()), lambda: 0)
    taken = await _watching(
        replica, [OSError("database unreachable"), [DeadPeer("gone", silent_s=86400)]], []
    )
    assert taken == ["gone"]


def test_a_dead_peer_is_adopted_within_the_replica_timeout_plus_one_look() -> None:
    """The horizon callers wait for an adoption: silence past the fencing window (half the
    timeout plus one heartbeat interval), one heartbeat interval the peer's last beat may
    predate its death by, and one look."""
    replica = Replica(cast(Membership, _Member()), lambda: 0)
    assert replica.adoption_horizon_s <= _Member.timeout_s + min(1.0, replica.interval)
