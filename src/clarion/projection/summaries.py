"""Task status summaries: caches of the task-level pending action, kept by compare-and-set.

A summary row may hold keys other code owns (or that no code here knows); every write reloads
the row, changes only `pending_action`, and retries a lost compare-and-set a bounded number of
times. The revision advances only on a semantic change.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clarion import failpoints
from clarion.domain.errors import ClarionError
from clarion.domain.models import PendingAction, SessionState, StatusSummary
from clarion.domain.wire import summary_wire
from clarion.ports import Bus, Event, Store

log = logging.getLogger(__name__)

CAS_ATTEMPTS = 3
# Keys of a summary this service owns; everything else in the row is preserved untouched.
OWNED_KEYS = ("pending_action",)


class SummaryConflict(ClarionError):
    """Compare-and-set kept losing; the summary could not be confirmed."""

    code = "summary_conflict"


def task_level_action(actions: Mapping[str, PendingAction | None]) -> PendingAction | None:
    """At task level a permission request outranks a clarification (the person must act)."""
    values = set(actions.values())
    if PendingAction.PERMISSION in values:
        return PendingAction.PERMISSION
    if PendingAction.CLARIFICATION in values:
        return PendingAction.CLARIFICATION
    return None


@dataclass(frozen=True, slots=True)
class TaskPending:
    """Everything a task DTO needs about pending input, from one repository read."""

    task_action: PendingAction | None
    primary_session_action: PendingAction | None
    legacy_task_action: PendingAction | None


class SummaryService:
    def __init__(self, store: Store, bus: Bus) -> None:
        self._store = store
        self._bus = bus

    async def pending_of_task(self, task_id: str) -> TaskPending:
        sessions = await self._store.list_sessions(task_id)
        actions = await self._store.pending_actions([s.id for s in sessions])
        active = {SessionState.RUNNING, SessionState.WAITING_FOR_INPUT}
        primary = next(
            (s for s in sessions if s.is_primary and s.state is SessionState.WAITING_FOR_INPUT),
            None,
        )
        return TaskPending(
            task_action=task_level_action(actions),
            primary_session_action=None if primary is None else actions.get(primary.id),
            legacy_task_action=task_level_action(
                {s.id: actions.get(s.id) for s in sessions if s.state in active}
            ),
        )

    async def refresh(self, task_id: str, *, publish: bool = True) -> StatusSummary | None:
        """Bring the summary in line with the repository. Returns the summary as stored.

        Raises SummaryConflict when the bounded retry is exhausted.
        """
        desired = (await self.pending_of_task(task_id)).task_action
        for attempt in range(CAS_ATTEMPTS):
            current = await self._store.find_summary(task_id)
            data: dict[str, Any] = dict(current.data) if current is not None else {}
            if current is not None and data.get("pending_action") == _wire(desired):
                return current
            if desired is None:
                data.pop("pending_action", None)
            else:
                data["pending_action"] = str(desired)
            await failpoints.hit("summary.cas")
            written = await self._store.cas_summary(
                task_id,
                expected_revision=None if current is None else current.revision,
                data=data,
            )
            if written is not None:
                log.info(
                    "task summary updated",
                    extra={"task_id": task_id, "revision": written.revision, "attempt": attempt},
                )
                if publish:
                    await self.publish(written)
                return written
        raise SummaryConflict("task summary compare-and-set kept losing", task_id=task_id)

    async def publish(self, summary: StatusSummary) -> None:
        """Publish a summary change; a failed publication is logged, never raised."""
        try:
            await self._bus.publish(
                Event(
                    type="task.status_summary.updated",
                    task_id=summary.task_id,
                    session_id=None,
                    payload={
                        "task_id": summary.task_id,
                        "status_summary": summary_wire(summary),
                    },
                )
            )
        except Exception:
            log.exception("task summary publication failed", extra={"task_id": summary.task_id})


def _wire(action: PendingAction | None) -> str | None:
    return None if action is None else str(action)
