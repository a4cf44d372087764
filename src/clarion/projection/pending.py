"""The per-session `pending_action` projection and its revision.

A projection is always a fresh read of the repository rule, never derived from event payloads.
Each read reserves its revision *before* it reads the pending rows, so a read that started later
always carries a larger revision than one that started earlier: a client that keeps the larger
revision can never let an older read overwrite a newer one.

Where the revision comes from: one process alone allocates an epoch from the database at start
and counts sequences in memory. Several processes on one database (cluster mode, `shared=True`)
cannot order in-memory counters against each other, so each reservation asks the database for
the newest epoch and the next value of one shared sequence (`ReadStore.reserve_revision`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from clarion.domain.models import PendingAction, Revision
from clarion.ports import ReadStore, SummaryInputs
from clarion.runtime import failpoints

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Projection:
    pending_action: PendingAction | None
    revision: Revision


class PendingProjector:
    def __init__(self, store: ReadStore, *, shared: bool = False) -> None:
        """`shared`: revisions come from the database, ordered across every process on it
        (cluster mode, PostgreSQL only); otherwise from this process's epoch and counter."""
        self._store = store
        self._shared = shared
        self._epoch = 0
        self._sequence = itertools.count(1)

    @property
    def epoch(self) -> int:
        """The epoch this process allocated at start. Shared mode publishes under the newest
        epoch of the database instead (another replica may have started since): ask
        `current_epoch()`."""
        return self._epoch

    async def current_epoch(self) -> int:
        """The epoch revisions are issued under now, for a client that starts from it."""
        if self._shared:
            return (await self._store.reserve_revision()).epoch
        return self._epoch

    async def allocate_epoch(self) -> int:
        """Take a new epoch from the database (at every start) and restart the sequence."""
        self._epoch = await self._store.next_epoch()
        self._sequence = itertools.count(1)
        log.info("pending projection epoch allocated", extra={"epoch": self._epoch})
        return self._epoch

    async def reserve(self) -> Revision:
        """The revision of a read about to start: larger than every reservation that finished
        before this one started (in shared mode, whichever process made it)."""
        if self._shared:
            return await self._store.reserve_revision()
        return Revision(epoch=self._epoch, sequence=next(self._sequence))

    async def project(self, session_ids: Sequence[str]) -> dict[str, Projection]:
        """Project every session in one read. Raises if the read fails."""
        revision = await self.reserve()
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
        revision = await self.reserve()
        await failpoints.hit("projection.read")
        inputs = await self._store.summary_inputs(task_id)
        return Projection(inputs.actions.get(session_id), revision), inputs
