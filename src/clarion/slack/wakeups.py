"""Cluster mode: a click queued on one replica wakes the answerer of the replica that runs
its session, through the bus, instead of waiting for that answerer's next look.

Slack may reach any replica; that one writes the click to the shared queue, then publishes
`slack.interaction.queued` (the queue's row is durable first). Every replica hears it and
wakes its answerer, which takes only the clicks of its own sessions, so the owner answers at
once and the others find nothing. The word is a hint: a lost one costs the answerer's
fallback look (`CLARION_SLACK_POLL_S`), never the click. WebSocket clients never see it (it
is no notification of the contract).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from clarion.domain.models import Bundle
from clarion.domain.slack import SlackInteraction
from clarion.ports import Bus, Event

log = logging.getLogger(__name__)

INTERACTION_QUEUED = "slack.interaction.queued"


async def announce_queued(bus: Bus, interaction: SlackInteraction, bundle: Bundle) -> None:
    """Tell every replica a click was queued; a failure is logged (the poll still finds it)."""
    event = Event(
        type=INTERACTION_QUEUED,
        task_id=bundle.session.task_id,
        session_id=bundle.session.id,
        payload={"interaction_id": interaction.id, "pending_id": interaction.pending_id},
    )
    try:
        await bus.publish(event)
    except Exception as exc:
        log.warning(
            "slack interaction not announced; the owner's answerer finds it on its next look",
            extra={"interaction_id": interaction.id, "error": str(exc)[:300]},
        )


async def hear_queued(bus: Bus, wake: Callable[[], None]) -> None:
    """Until cancelled: wake the answerer on every click any replica queued."""
    events = bus.subscribe()
    try:
        await events.listening()
        async for event in events:
            if event.type == INTERACTION_QUEUED:
                wake()
    finally:
        await events.aclose()
