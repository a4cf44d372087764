"""Which clarification bundles a live waiter holds, wherever in the cluster that waiter is.

A bundle is `active_live` only while an agent's tool call waits on it, and that waiter lives in
the memory of the replica that owns the bundle's session. A read served by any replica asks
this question through one callable, `LiveWaitersOf`, for a batch of pending ids at once, so a
page of inbox items costs one round trip per owning replica rather than one per item.

Built from injected callables (this replica's waiters, the ownership lookup, the request to a
peer), so the read models import no I/O library; the composition root gives it NATS and the
store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

log = logging.getLogger(__name__)

LiveWaitersOf = Callable[[Sequence[str]], Awaitable[set[str]]]
"""Given pending ids, the subset that a live waiter holds."""

Owners = Callable[[Sequence[str]], Awaitable[dict[str, str | None]]]
"""Pending id -> the id of the replica owning its session; None when no replica owns it."""

AskReplica = Callable[[str, Sequence[str]], Awaitable[set[str]]]
"""Ask replica X which of these pending ids its waiters hold; raises when it cannot answer."""


def local_only(local: Callable[[str], bool]) -> LiveWaitersOf:
    """Single mode: every waiter is in this process."""

    async def live_waiters(pending_ids: Sequence[str]) -> set[str]:
        return {pending_id for pending_id in pending_ids if local(pending_id)}

    return live_waiters


class LiveWaiterLookup:
    """Cluster mode: this replica's own and unowned bundles are answered from its memory, the
    others by their owners, one request per owner, all at once."""

    def __init__(
        self,
        *,
        replica_id: str,
        local: Callable[[str], bool],
        owners: Owners,
        ask: AskReplica,
    ) -> None:
        self._replica_id = replica_id
        self._local = local
        self._owners = owners
        self._ask = ask

    async def __call__(self, pending_ids: Sequence[str]) -> set[str]:
        wanted = list(dict.fromkeys(pending_ids))
        if not wanted:
            return set()
        owner_of = await self._owners(wanted)
        live: set[str] = set()
        remote: dict[str, list[str]] = {}
        for pending_id in wanted:
            owner = owner_of.get(pending_id)
            if owner is None or owner == self._replica_id:
                # Only an owner runs agents, so no other replica holds an unowned bundle's waiter.
                if self._local(pending_id):
                    live.add(pending_id)
            else:
                remote.setdefault(owner, []).append(pending_id)
        answers = await asyncio.gather(*(self._ask_owner(o, ids) for o, ids in remote.items()))
        for (_, ids), held in zip(remote.items(), answers, strict=True):
            # An owner vouches only for the ids it was asked about.
            live.update(held.intersection(ids))
        return live

    async def _ask_owner(self, owner: str, pending_ids: list[str]) -> set[str]:
        """The owner's answer, or none held when it cannot answer: a replica that cannot be
        asked has no waiter anyone could reach either, so its bundles read as detached rather
        than failing the whole read."""
        try:
            return await self._ask(owner, pending_ids)
        except Exception as exc:
            log.warning(
                "could not ask a replica which questions it holds; counting them as detached",
                extra={"owner": owner, "pending_ids": pending_ids, "reason": repr(exc)},
            )
            return set()
