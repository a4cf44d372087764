"""Which questions a replica's live waiters hold, asked over NATS request-reply.

A clarification bundle reads `active_live` only while an agent's tool call waits on it, and that
waiter lives in the memory of the replica owning the bundle's session. Each replica answers on
`clarion.replicas.<its id>.waiters`: the request is a JSON list of pending ids, the reply the
JSON list of those its waiters hold. One request carries a whole batch (an inbox page asks each
owner once). NATS tells the asker at once when nobody listens (a "no responders" status), so a
replica that is gone costs no deadline.

Imported by the composition root only; the read models see
`projection.waiter_lookup.LiveWaiterLookup`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from clarion.bus.replica_requests import is_probe, until_served
from clarion.ports.cluster import CarryFailed

log = logging.getLogger(__name__)

WAITERS_SUBJECT = "clarion.replicas.{replica}.waiters"

Live = Callable[[Sequence[str]], set[str]]


async def serve_waiters(nc: Client, replica_id: str, live: Live) -> None:
    """Answer, for `replica_id`, which of the asked pending ids `live` holds. Returns once a
    request sent by anyone would reach this subscription, so a peer that sees this replica
    registered never meets "no responders" from it."""

    async def on_request(msg: Msg) -> None:
        if not msg.reply:
            log.warning("dropped a live-waiter question without a reply subject")
            return
        if is_probe(msg):
            await msg.respond(b"")
            return
        try:
            pending_ids = _pending_ids(msg.data)
        except ValueError as exc:
            # The asker's deadline answers it: its bundles then read as detached.
            log.warning("dropped a malformed live-waiter question", extra={"reason": repr(exc)})
            return
        held = live(pending_ids)
        try:
            # No flush: the client's flusher writes the reply at once, and a reply that never
            # arrives is the asker's deadline.
            await msg.respond(json.dumps(sorted(held)).encode())
        except (NatsError, OSError) as exc:
            log.warning(
                "could not answer a live-waiter question",
                extra={"pending_ids": pending_ids, "reason": repr(exc)},
            )

    subject = WAITERS_SUBJECT.format(replica=replica_id)
    await nc.subscribe(subject, cb=on_request)
    await until_served(nc, subject)


async def ask_waiters(
    nc: Client, replica_id: str, pending_ids: Sequence[str], timeout_s: float
) -> set[str]:
    """Which of `pending_ids` replica `replica_id`'s waiters hold. Raises CarryFailed when it
    does not answer: nobody serves it (at once), or no reply within `timeout_s`."""
    subject = WAITERS_SUBJECT.format(replica=replica_id)
    try:
        msg = await nc.request(subject, json.dumps(list(pending_ids)).encode(), timeout=timeout_s)
    except NoRespondersError as exc:
        raise CarryFailed(f"replica {replica_id} is not listening", may_have_applied=False) from exc
    except NatsTimeout as exc:
        raise CarryFailed(
            f"replica {replica_id} did not answer within {timeout_s:g} s", may_have_applied=True
        ) from exc
    except (NatsError, OSError) as exc:
        raise CarryFailed(
            f"could not ask replica {replica_id}: {exc!r}", may_have_applied=False
        ) from exc
    try:
        held = _pending_ids(msg.data)
    except ValueError as exc:
        raise CarryFailed(
            f"replica {replica_id} answered with a malformed reply: {exc!r}", may_have_applied=True
        ) from exc
    # A replica vouches only for what it was asked about.
    return set(held).intersection(pending_ids)


def _pending_ids(data: bytes) -> list[str]:
    """A JSON list of pending ids; ValueError for anything else."""
    value = json.loads(data)  # JSONDecodeError is a ValueError
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a JSON list of pending ids")
    return value
