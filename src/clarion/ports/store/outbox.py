"""The notification outbox, as the deliverer sees it (OutboxStore)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from clarion.ports.store.records import (
    QueuedDelivery,
)


class OutboxStore(Protocol):
    """The notification outbox, as the deliverer sees it: every channel's deliveries (a
    webhook POST, an email, a Slack message). Deliveries are queued by the writes that cause
    their events, in the same transaction; nothing else adds them."""

    async def due_deliveries(self, now: datetime, limit: int) -> list[QueuedDelivery]:
        """Up to `limit` deliveries neither delivered nor given up whose next attempt is due at
        `now`, soonest first."""
        ...

    async def next_delivery_at(self) -> datetime | None:
        """When the soonest open delivery is due; None when none is open."""
        ...

    async def claim_delivery(
        self, delivery_id: str, *, attempts_before: int, now: datetime, lease_until: datetime
    ) -> bool:
        """Guarded: take an open delivery that is due at `now` and still has `attempts_before`
        attempts, by moving its next attempt to `lease_until`. Only one of several deliverers
        (servers on one database) wins; if the winner dies, the delivery is due again once
        the lease passes. Returns whether it applied."""
        ...

    async def record_delivery_attempt(
        self,
        delivery_id: str,
        *,
        attempts_before: int,
        delivered: bool,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
    ) -> bool:
        """Guarded: applies only to an open delivery that still has `attempts_before` attempts.
        Counts the attempt and marks it delivered, or due again at `next_attempt_at`, or (with
        neither) given up. Returns whether it applied."""
        ...
