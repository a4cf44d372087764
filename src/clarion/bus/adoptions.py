"""Cluster mode: a survivor that adopted a dead replica's sessions says so to the others.

Every replica remembers which replica owns the sessions it carries requests for
(api/route_memory.py) and reads afresh the routes to a replica it knows is gone. Its own peer
watch learns that within a watch interval; the adopter's word on `clarion.replicas.adopted`
(the dead replica's id as the body) comes at once, so a request arriving just after an
adoption goes to the adopter rather than to a replica that no longer answers. A lost
announcement costs nothing but that interval: it is a hint, never the only source.

Imported by the composition root only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

log = logging.getLogger(__name__)

ADOPTED_SUBJECT = "clarion.replicas.adopted"


async def hear_adoptions(nc: Client, gone: Callable[[str], None]) -> None:
    """Call `gone` with the id of every replica another replica announces it adopted."""

    async def on_adopted(msg: Msg) -> None:
        try:
            gone(msg.data.decode())
        except UnicodeDecodeError as exc:
            log.warning("dropped a malformed adoption announcement", extra={"reason": repr(exc)})

    await nc.subscribe(ADOPTED_SUBJECT, cb=on_adopted)


async def announce_adoption(nc: Client, dead_replica_id: str) -> None:
    """Tell the other replicas that `dead_replica_id`'s sessions have a new owner; a failure
    is logged (their peer watch tells them within a watch interval)."""
    try:
        await nc.publish(ADOPTED_SUBJECT, dead_replica_id.encode())
    except (NatsError, OSError) as exc:
        log.warning(
            "could not announce an adoption",
            extra={"dead_replica": dead_replica_id, "reason": repr(exc)},
        )
