"""Fan-out of durable facts to the bus, with the authoritative projection attached.

Every publish here happens after the fact it reports is committed. Message events that can
change pending ownership carry a fresh `pending_action` read (explicit None when clean); the
field is omitted when the read failed or the event is a content-only update, and clients keep
their prior value then. A failed publication is logged and never undoes the durable fact:
other clients converge on their next read or event.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from clarion.domain.models import Bundle, Message, Session, Turn
from clarion.domain.wire import iso, message_wire, turn_wire
from clarion.ports import Bus, DeadlineRecord, Event
from clarion.projection.pending import PendingProjector, Projection
from clarion.projection.summaries import SummaryService
from clarion.projection.waiting import waiting_wire

log = logging.getLogger(__name__)


class EventPublisher:
    def __init__(self, bus: Bus, projector: PendingProjector, summaries: SummaryService) -> None:
        self._bus = bus
        self._projector = projector
        self._summaries = summaries

    async def messages(self, action: str, messages: Iterable[Message]) -> None:
        """Publish `session.message.<action>` for each message. Messages of one mutation share
        one projection read (taken after the mutation committed) and one summary refresh."""
        by_session: dict[str, list[Message]] = {}
        for message in messages:
            by_session.setdefault(message.session_id, []).append(message)
        for batch in by_session.values():
            await self._announce(action, batch)

    async def message(self, action: str, message: Message, *, content_only: bool = False) -> None:
        if content_only:
            await self._publish_message(action, message, None)
        else:
            await self._announce(action, [message])

    async def _announce(self, action: str, batch: list[Message]) -> None:
        """Publish messages of one session with their projection, then refresh the task
        summary from the same read (see `SummaryService.refresh_from` for when it is reused)."""
        first = batch[0]
        ticket = self._summaries.ticket(first.task_id)
        try:
            projection, inputs = await self._projector.project_with_task(
                first.session_id, first.task_id
            )
        except Exception:
            log.exception(
                "pending projection failed; event carries no pending_action",
                extra={"session_id": first.session_id, "message_id": first.id},
            )
            for message in batch:
                await self._publish_message(action, message, None)
            return
        for message in batch:
            await self._publish_message(action, message, projection)
        try:
            await self._summaries.refresh_from(first.task_id, ticket, inputs)
        except Exception:
            log.exception("task summary refresh failed", extra={"task_id": first.task_id})

    async def _publish_message(
        self, action: str, message: Message, projection: Projection | None
    ) -> None:
        payload = message_wire(message)
        if projection is not None:
            payload["pending_action"] = (
                None if projection.pending_action is None else str(projection.pending_action)
            )
            payload["pending_action_revision"] = projection.revision.as_wire()
        await self._publish(
            f"session.message.{action}", message.task_id, message.session_id, payload
        )

    async def waiting(self, bundle: Bundle, record: DeadlineRecord | None) -> None:
        """`clarification.waiting.updated`: a question's waiting policy changed what it shows
        (asked, reminded, escalated, expired); the payload is the bundle read's fields."""
        payload = {
            "pending_id": bundle.pending_id,
            "task_id": bundle.session.task_id,
            "session_id": bundle.session.id,
            **waiting_wire(bundle, record),
        }
        await self._publish(
            "clarification.waiting.updated", bundle.session.task_id, bundle.session.id, payload
        )

    async def refresh_summary(self, task_id: str) -> None:
        try:
            await self._summaries.refresh(task_id)
        except Exception:
            log.exception("task summary refresh failed", extra={"task_id": task_id})

    async def turn(self, action: str, turn: Turn, **extra: Any) -> None:
        """`session.turn.started|completed`; raises if the bus refused (callers decide)."""
        payload = turn_wire(turn)
        payload.update(extra)
        await self._bus.publish(
            Event(
                type=f"session.turn.{action}",
                task_id=turn.task_id,
                session_id=turn.session_id,
                payload=payload,
            )
        )

    async def turn_quietly(self, action: str, turn: Turn) -> None:
        try:
            await self.turn(action, turn)
        except Exception:
            log.exception(
                "turn event publication failed",
                extra={"session_id": turn.session_id, "turn_id": turn.id},
            )

    async def session_state(self, session: Session) -> None:
        await self._publish(
            "session.state_changed",
            session.task_id,
            session.id,
            {
                "task_id": session.task_id,
                "session_id": session.id,
                "new_state": str(session.state),
                "state": str(session.state),
                "updated_at": iso(session.updated_at),
            },
        )

    async def _publish(
        self,
        type_: str,
        task_id: str,
        session_id: str | None,
        payload: Any,
    ) -> None:
        try:
            await self._bus.publish(
                Event(
                    type=type_,
                    task_id=task_id,
                    session_id=session_id,
                    payload=payload,
                )
            )
        except Exception:
            log.exception(
                "event publication failed",
                extra={"event": type_, "task_id": task_id, "session_id": session_id},
            )
