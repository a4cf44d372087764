"""The per-session `pending_action` projection and its revision.

A projection is always a fresh read of the repository rule, never derived from event payloads.
Each read reserves its revision *before* it touches the database, so a read that started later
always carries a larger revision than one that started earlier: a client that keeps the larger
revision can never let an older read overwrite a newer one.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from clarion import failpoints
from clarion.domain.models import PendingAction, Revision
from clarion.ports import ReadStore, SummaryInputs

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Projection:
    pending_action: PendingAction | None
    revision: Revision


class PendingProjector:
    def __init__(self, store: ReadStore) -> None:
        self._store = store
        self._epoch = 0
        self._sequence = itertools.count(1)

    @property
    def epoch(self) -> int:
        return self._epoch

    async def allocate_epoch(self) -> int:
        """Take a new epoch from the database (at every start) and restart the sequence."""
        self._epoch = await self._store.next_epoch()
        self._sequence = itertools.count(1)
        log.info("pending projection epoch allocated", extra={"epoch": self._epoch})
        return self._epoch

    def reserve(self) -> Revision:
        return Revision(epoch=self._epoch, sequence=next(self._sequence))

    async def project(self, session_ids: Sequence[str]) -> dict[str, Projection]:
        """Project every session in one read. Raises if the read fails."""
        revision = self.reserve()
        await failpoints.hit("projection.read")
        actions = await self._store.pending_actions(session_ids)
        return {sid: Projection(actions.get(sid), revision) for sid in session_ids}

    async def project_one(self, session_id: str) -> Projection:
        return (await self.project([session_id]))[session_id]

    async def project_with_task(
        self, session_id: str, task_id: str
    ) -> tuple[Projection, SummaryInputs]:
        """One session's projection together with its task summary's inputs, from one read:
        the task's read covers every session of the task, so a message event that projects
        its session and then refreshes the task summary needs one read, not two. Raises if
        the read fails."""
        revision = self.reserve()
        await failpoints.hit("projection.read")
        inputs = await self._store.summary_inputs(task_id)
        return Projection(inputs.actions.get(session_id), revision), inputs
