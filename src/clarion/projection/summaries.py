"""Task status summaries: caches of the task-level pending action, kept by compare-and-set.

A summary row may hold keys other code owns (or that no code here knows); every write reloads
the row, changes only `pending_action`, and retries a lost compare-and-set a bounded number of
times. The revision advances only on a semantic change. Imported by the projection package and
the composition root.

Ordering matters for convergence: each attempt reads the stored summary *before* it reads the
repository. A writer whose repository read is stale then either loses its compare-and-set to the
writer that saw the newer state, or wins before it, and that writer's retry lands last. That
argument needs the newer writer to write; when it finds nothing to change it writes nothing, so
refreshes of one task also run one at a time in this process (see `_converge`). Another process
writing the same summary concurrently is not covered by that; read repair on task lists is.

A message event reads its session's projection and the summary's inputs in one snapshot, taken
before the refresh holds the task's turn (`refresh_from`). That read serves the refresh only if
no refresh of the task finished since the read began (the task's generation is unchanged), so it
is as fresh as a read taken inside the turn; otherwise the refresh reads again.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clarion.domain.errors import SummaryConflict
from clarion.domain.models import PendingAction, SessionState, StatusSummary
from clarion.domain.wire import summary_wire
from clarion.ports import Bus, Event, ReadStore, SummaryInputs
from clarion.runtime import failpoints

log = logging.getLogger(__name__)

CAS_ATTEMPTS = 3
# Keys of a summary this service owns; everything else in the row is preserved untouched.
OWNED_KEYS = ("pending_action",)
# Sessions whose pending action the legacy `task_pending_action` field reports.
LEGACY_ACTIVE_STATES = frozenset({SessionState.RUNNING, SessionState.WAITING_FOR_INPUT})


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


def task_pending(inputs: SummaryInputs) -> TaskPending:
    sessions, actions = inputs.sessions, inputs.actions
    primary = next(
        (s for s in sessions if s.is_primary and s.state is SessionState.WAITING_FOR_INPUT),
        None,
    )
    return TaskPending(
        task_action=task_level_action(actions),
        primary_session_action=None if primary is None else actions.get(primary.id),
        legacy_task_action=task_level_action(
            {s.id: actions.get(s.id) for s in sessions if s.state in LEGACY_ACTIVE_STATES}
        ),
    )


class _TaskTurn:
    """The lock that serializes one task's refreshes, and how many refreshes finished."""

    __slots__ = ("__weakref__", "finished", "lock")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.finished = 0


@dataclass(frozen=True, slots=True)
class Ticket:
    """Taken before a read whose inputs a refresh may reuse: which turn, and its generation.
    Holding it keeps the turn (and so its count) alive."""

    turn: _TaskTurn
    generation: int


@dataclass(frozen=True, slots=True)
class Repair:
    """The outcome of a read repair, for one task of a task list.

    `pending` is None when the repository read failed (the stored summary is then returned
    as the last known value). `failed` is True when the repository was read but the summary
    could not be brought in line: the caller must mark the summary invalidated.
    """

    summary: StatusSummary | None
    pending: TaskPending | None
    failed: bool


class SummaryService:
    def __init__(self, store: ReadStore, bus: Bus) -> None:
        self._store = store
        self._bus = bus
        # One refresh per task at a time (see _converge); a turn lives while anyone holds it.
        self._turns: weakref.WeakValueDictionary[str, _TaskTurn] = weakref.WeakValueDictionary()

    def _turn(self, task_id: str) -> _TaskTurn:
        turn = self._turns.get(task_id)
        if turn is None:
            turn = self._turns[task_id] = _TaskTurn()
        return turn

    def ticket(self, task_id: str) -> Ticket:
        """Take before reading inputs to pass to `refresh_from`."""
        turn = self._turn(task_id)
        return Ticket(turn, turn.finished)

    async def refresh(self, task_id: str, *, publish: bool = True) -> StatusSummary | None:
        """Bring the summary in line with the repository. Returns the summary as stored
        (None when the task has no summary and nothing is pending).

        Raises SummaryConflict when the write failed or the bounded retry is exhausted; a
        failing repository read propagates as it is.
        """
        summary, _ = await self._converge(task_id, publish=publish)
        return summary

    async def refresh_from(
        self, task_id: str, ticket: Ticket, inputs: SummaryInputs
    ) -> StatusSummary | None:
        """`refresh`, reusing `inputs` (read after `ticket` was taken) for the first attempt
        when no refresh of the task finished in between; otherwise reading afresh."""
        summary, _ = await self._converge(task_id, publish=True, reuse=(ticket, inputs))
        return summary

    async def repair(self, task_id: str) -> Repair:
        """Read repair for a task list: never raises for a store or compare-and-set failure."""
        try:
            summary, pending = await self._converge(task_id, publish=True)
        except _Unconfirmed as exc:
            log.warning(
                "task summary repair failed; summary invalidated",
                exc_info=exc.__cause__,
                extra={"task_id": task_id},
            )
            return Repair(summary=None, pending=exc.pending, failed=True)
        except Exception:
            log.exception(
                "pending state unreadable; returning the stored summary unrepaired",
                extra={"task_id": task_id},
            )
            try:
                stored = await self._store.find_summary(task_id)
            except Exception:
                log.exception("stored task summary unreadable", extra={"task_id": task_id})
                stored = None
            return Repair(summary=stored, pending=None, failed=False)
        return Repair(summary=summary, pending=pending, failed=False)

    async def _converge(
        self,
        task_id: str,
        *,
        publish: bool,
        reuse: tuple[Ticket, SummaryInputs] | None = None,
    ) -> tuple[StatusSummary | None, TaskPending]:
        """The compare-and-set loop, one at a time per task. Raises _Unconfirmed (a
        SummaryConflict) once the repository was read but the write failed or kept losing.

        Why one at a time: a refresh that finds nothing to change writes nothing, so it leaves
        no revision for an older refresh's compare-and-set to lose against. Interleaved, an
        older refresh that read "pending" could write after a newer one read "clean" and
        stopped, and the stale value would stay. Serialized, each read comes after the
        previous refresh's write, and the refresh of the newest change runs last."""
        turn = self._turn(task_id)
        async with turn.lock:
            first = None
            if reuse is not None:
                ticket, inputs = reuse
                # A refresh that finished after the read began may have written after it: the
                # read could then be older than that refresh's, so it is not reused.
                if ticket.turn is turn and ticket.generation == turn.finished:
                    first = inputs
            try:
                return await self._converge_locked(task_id, publish=publish, first=first)
            finally:
                turn.finished += 1

    async def _converge_locked(
        self, task_id: str, *, publish: bool, first: SummaryInputs | None
    ) -> tuple[StatusSummary | None, TaskPending]:
        pending: TaskPending | None = None
        for attempt in range(CAS_ATTEMPTS):
            # One snapshot, the stored summary read before the repository rows.
            if attempt == 0 and first is not None:
                inputs = first
            else:
                inputs = await self._store.summary_inputs(task_id)
            current, pending = inputs.summary, task_pending(inputs)
            desired = _wire(pending.task_action)
            stored = None if current is None else current.data.get("pending_action")
            if stored == desired:
                # Nothing semantic to change (a missing summary of a clean task stays missing).
                return current, pending
            data: dict[str, Any] = dict(current.data) if current is not None else {}
            if desired is None:
                data.pop("pending_action", None)
            else:
                data["pending_action"] = desired
            try:
                await failpoints.hit("summary.cas")
                written = await self._store.cas_summary(
                    task_id,
                    expected_revision=None if current is None else current.revision,
                    data=data,
                )
            except Exception as exc:
                raise _Unconfirmed(pending, task_id) from exc
            if written is not None:
                log.info(
                    "task summary updated",
                    extra={
                        "task_id": task_id,
                        "revision": written.revision,
                        "pending_action": desired,
                        "attempt": attempt,
                    },
                )
                if publish:
                    await self.publish(written)
                return written, pending
            log.info(
                "task summary compare-and-set lost; reloading",
                extra={"task_id": task_id, "attempt": attempt},
            )
        assert pending is not None  # CAS_ATTEMPTS >= 1
        raise _Unconfirmed(pending, task_id)

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


class _Unconfirmed(SummaryConflict):
    """The repository was read but the summary write failed or kept losing."""

    def __init__(self, pending: TaskPending, task_id: str) -> None:
        super().__init__("task summary compare-and-set could not be confirmed", task_id=task_id)
        self.pending = pending


def _wire(action: PendingAction | None) -> str | None:
    return None if action is None else str(action)
