"""Cluster mode: holding back requests for sessions this replica is still adopting.

A replica that adopts a dead peer's sessions keeps serving its own meanwhile. Until the
adopted sessions are reconciled (reservations, delivery intents, detach: startup recovery,
scoped to them), no request may act on them: an answer served before the reservations are
reconciled could supersede an unrecovered claim. The adoption commits before the replica
knows which sessions it got, so while an adoption transaction runs every request for a
session this replica owns waits a moment (the transaction is short); afterwards only the
requests for the adopted sessions wait, until their recovery ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable


class SessionGate:
    def __init__(self) -> None:
        self._adopting = 0
        self._recovering: set[str] = set()
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def adopting(self) -> AsyncIterator[None]:
        """Around an adoption transaction: its sessions are not known until it returns."""
        async with self._changed:
            self._adopting += 1
        try:
            yield
        finally:
            async with self._changed:
                self._adopting -= 1
                self._changed.notify_all()

    async def recovering(self, session_ids: Iterable[str]) -> None:
        """Hold these sessions until `recovered`; call before leaving `adopting`."""
        async with self._changed:
            self._recovering.update(session_ids)

    async def recovered(self, session_ids: Iterable[str]) -> None:
        async with self._changed:
            self._recovering.difference_update(session_ids)
            self._changed.notify_all()

    def is_held(self, session_id: str) -> bool:
        return self._adopting > 0 or session_id in self._recovering

    async def wait(self, session_id: str) -> None:
        """Return once `session_id` may be served here."""
        if not self.is_held(session_id):
            return
        async with self._changed:
            await self._changed.wait_for(lambda: not self.is_held(session_id))
