"""A cluster replica's life: standby until it leads, then active; gone the moment it may not be.

What is built is active/standby: exactly one replica (the holder of the leader lock) runs
recovery and agents; the others carry API requests to it (api/forwarding.py). Per-session
ownership is not built; this keeps a cluster from ever having two replicas act on the same
sessions.

Fencing, three layers deep: the leader lock lives on the membership connection, and every
heartbeat runs on that connection. A heartbeat that fails (the connection, and so the lock,
may be gone) or that has not succeeded for half the replica timeout (a hung connection or a
starved event loop, seen by a thread) ends the process at once (`stop_fenced`). A replica
that takes over waits until the previous active replica's last heartbeat is older than that
half plus one heartbeat interval before it acts, so the two never act at the same time. And
it claims the next leadership epoch, which every session write of the store checks
(store/fence.py): a replica frozen past all of that and then resumed is refused by the
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
from collections.abc import Callable

from clarion.ports.cluster import ReplicaInfo, Role
from clarion.store.cluster import Membership

log = logging.getLogger(__name__)

# Exit status of a replica that stopped itself because it may have lost its locks.
FENCED_EXIT = 70


class Replica:
    """Implements ports.ClusterView for the HTTP edge; drives the heartbeat and leadership."""

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

    async def replicas(self) -> list[ReplicaInfo]:
        return await self._member.replicas()

    async def active(self) -> ReplicaInfo | None:
        return next((r for r in await self.replicas() if r.role == "active"), None)

    async def join(self, advertise_url: str) -> None:
        await self._member.register(advertise_url)
        self._role = "standby"
        self._last_ok = time.monotonic()

    async def heartbeats(self) -> None:
        """Run until cancelled; ends the process when a heartbeat fails."""
        watchdog = threading.Thread(target=self._watch, name="replica-watchdog", daemon=True)
        watchdog.start()
        try:
            while True:
                try:
                    await asyncio.wait_for(self._member.heartbeat(self._status), self.fence_s)
                    if self._role == "active":
                        await self._member.forget_dead(
                            older_than_s=self._member.timeout_s * 3, previous_active=False
                        )
                except Exception as exc:
                    self.stop_fenced(f"heartbeat failed: {exc!r}")
                self._last_ok = time.monotonic()
                await asyncio.sleep(self.interval)
        finally:
            self._stopping.set()

    async def lead(self) -> None:
        """Return once this replica holds the leader lock and the previous active replica has
        certainly stopped; the row says `active` before the caller runs recovery."""
        announced = False
        while not await self._member.try_lead():
            if not announced:
                log.info("replica is standby", extra={"replica": self.replica_id})
                announced = True
            await asyncio.sleep(min(1.0, self.interval))
        age = await self._member.seconds_since_other_active()
        wait = 0.0 if age is None else max(0.0, self.fence_s + self.interval - age)
        if wait:
            log.info(
                "waiting out the previous active replica",
                extra={"replica": self.replica_id, "seconds": round(wait, 2)},
            )
            await asyncio.sleep(wait)
        await self._member.forget_dead(older_than_s=self._member.timeout_s, previous_active=True)
        self._role = "active"
        await self._member.heartbeat(self._status)
        log.info("replica is active", extra={"replica": self.replica_id})

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
