"""The server's retention: `[retention] older_than` applied in the background, as `clarion db
prune --older-than` would, once at start and then every `every`.

A supervised loop: a pass that fails is logged and the next one tries again; it never stops
the server. In cluster mode each replica prunes only the sessions it owns.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from datetime import timedelta

from clarion.ports import Clock
from clarion.store.retention import Prunable, prune

log = logging.getLogger(__name__)


async def retention_loop(
    store: Prunable, clock: Clock, *, older_than_s: float, every_s: float
) -> None:
    while True:
        cutoff = clock.now() - timedelta(seconds=older_than_s)
        try:
            pruned = await prune(store, cutoff)
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
        await clock.sleep(every_s)
