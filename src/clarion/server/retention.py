"""The server's retention: `[retention] older_than` applied in the background, as `clarion db
prune --older-than` would, once at start and then every `every`: the rows of what finished,
then the worktrees of the tasks left without sessions (their branches stay).

A supervised loop: a pass that fails is logged and the next one tries again; it never stops
the server. In cluster mode each replica prunes only the sessions it owns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from datetime import timedelta

from clarion.ports import Clock
from clarion.store.retention import Prunable, prune

log = logging.getLogger(__name__)


# Removes the worktrees of tasks without sessions; the ids of those tasks.
WorktreePruner = Callable[[], Awaitable[list[str]]]


async def retention_loop(
    store: Prunable,
    clock: Clock,
    *,
    older_than_s: float,
    every_s: float,
    worktrees: WorktreePruner | None = None,
) -> None:
    while True:
        cutoff = clock.now() - timedelta(seconds=older_than_s)
        try:
            pruned = await prune(store, cutoff)
            # Also the tasks an earlier pass (or `clarion db prune`) left without sessions
            # and stopped before their worktrees: each pass finds every one still there.
            removed = await worktrees() if worktrees is not None else []
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("retention pass failed; trying again later")
        else:
            if pruned.sessions or pruned.webhook_deliveries:
                log.info(
                    "retention pass pruned",
                    extra={"cutoff": cutoff.isoformat(), **asdict(pruned)},
                )
            if removed:
                log.info(
                    "retention pass removed task worktrees; branches kept",
                    extra={"task_ids": removed},
                )
        await clock.sleep(every_s)
