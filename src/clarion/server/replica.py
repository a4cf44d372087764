"""A cluster replica's life: join, serve its own sessions, adopt those of peers that are gone;
and stop the moment it may have been taken for gone itself.

Every replica runs agents: a session belongs to the replica that runs it (store/ownership.py).
A replica watches its peers' liveness locks; once a peer holds none (it stopped, died or fenced
itself) and its fencing window has passed, this replica tries to adopt it, and exactly one
survivor does (`take_over`, in the composition root).

Fencing, three layers deep: the liveness lock lives on the membership connection, and every
heartbeat runs on that connection, on the membership's own thread and event loop, so that no
work of the server's holds one back. A heartbeat that fails (the connection, and so the lock,
may be gone; or the row is gone: a survivor adopted this replica) or that has not succeeded for
half the replica timeout (a hung connection, a frozen process; seen by a thread) ends the
process at once (`stop_fenced`). A survivor adopts only once the dead peer's last heartbeat
is older than that half plus one heartbeat interval, so the two never act at the same time.
And every session write checks the session's owner in the statement that locks it
(store/db/owner_fence.py): a replica frozen past all of that and then resumed is refused by the
database on its first write, and stopped.

Imported by the composition root only.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable

from clarion.ports.cluster import DeadPeer, ReplicaInfo, Role
from clarion.store.db.membership import Membership

log = logging.getLogger(__name__)

# Exit status of a replica that stopped itself because it may have lost its locks.
FENCED_EXIT = 70


class Replica:
    """Implements ports.ClusterView for the HTTP edge; drives the heartbeat and the watch."""

    def __init__(self, member: Membership, sessions: Callable[[], int]) -> None:
        self._member = member
        self._sessions = sessions
        self._role: Role = "starting"
        self._last_ok = time.monotonic()
        self._stopping = threading.Event()
        timeout = member.timeout_s
        self.interval = timeout / 4
        self.fence_s = timeout / 2

    @property
    def replica_id(self) -> str:
        return self._member.replica_id

    @property
    def role(self) -> Role:
        return self._role

    @property
    def timeout_s(self) -> float:
        return self._member.timeout_s

    @property
    def adoption_horizon_s(self) -> float:
        """The longest from a peer's death until a survivor has adopted it: its silence
        outlasting the fencing window, and one watch interval more."""
        return self.fence_s + 2 * self.interval + self._watch_every

    @property
    def _watch_every(self) -> float:
        return min(1.0, self.interval)

    async def replicas(self) -> list[ReplicaInfo]:
        return await self._member.replicas()

    async def join(self, advertise_url: str) -> None:
        await self._member.register(advertise_url)
        self._last_ok = time.monotonic()

    async def serving(self) -> None:
        """This replica's own recovery is done: it serves, and placement may choose it."""
        self._role = "active"
        await self._member.heartbeat(self._status)
        log.info("replica is active", extra={"replica": self.replica_id})

    async def heartbeats(self) -> None:
        """Run until cancelled; ends the process when a heartbeat fails."""
        watchdog = threading.Thread(target=self._watch, name="replica-watchdog", daemon=True)
        watchdog.start()
        try:
            await self._member.heartbeats(
                self._status,
                every_s=self.interval,
                within_s=self.fence_s,
                succeeded=self._beat_ok,
                failed=lambda exc: self.stop_fenced(f"heartbeat failed: {exc!r}"),
            )
        finally:
            self._stopping.set()

    def _beat_ok(self) -> None:
        self._last_ok = time.monotonic()

    async def watch_peers(
        self,
        dead_peers: Callable[[], Awaitable[list[DeadPeer]]],
        take_over: Callable[[str], Awaitable[None]],
    ) -> None:
        """Run until cancelled: take over every peer that holds no liveness lock once its
        last heartbeat is older than its fencing window (by then it has stopped, or fenced
        itself). A failure to read is logged and retried; `take_over` stops the replica
        itself when it cannot finish."""
        settled = self.fence_s + self.interval
        while True:
            try:
                for peer in await dead_peers():
                    if peer.silent_s >= settled:
                        await take_over(peer.replica_id)
                    else:
                        log.info(
                            "waiting out a stopped replica's fencing window",
                            extra={
                                "replica": self.replica_id,
                                "dead_replica": peer.replica_id,
                                "seconds": round(settled - peer.silent_s, 2),
                            },
                        )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning(
                    "watching the peers failed",
                    extra={"replica": self.replica_id, "reason": repr(exc)},
                )
            await asyncio.sleep(self._watch_every)

    def _status(self) -> tuple[str, int]:
        return self._role, self._sessions()

    def _watch(self) -> None:
        while not self._stopping.wait(self.interval / 2):
            silent = time.monotonic() - self._last_ok
            if silent > self.fence_s:
                self.stop_fenced(f"no heartbeat for {silent:.1f} s")

    def stop_fenced(self, reason: str) -> None:
        """Stop now: this replica may have lost its locks, so another may already act."""
        if self._stopping.is_set():
            return
        log.critical("replica fenced itself", extra={"replica": self.replica_id, "reason": reason})
        sys.stderr.write(f"clarion: replica {self.replica_id} stopped: {reason}\n")
        sys.stderr.flush()
        os._exit(FENCED_EXIT)
