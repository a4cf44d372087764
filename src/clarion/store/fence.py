"""Cluster mode: the leadership epoch, which keeps a replica that lost leadership from writing.

A replica that takes over claims leadership by incrementing `cluster_leader_epoch` in
kandev_meta and fences its store with the value it got. From then on, every write that
touches a session's turns, messages or clarification rows (everything that goes through
`Db.lock_session`) reads the stored epoch under FOR SHARE and stops unless it is still the
fenced one. Two properties follow from PostgreSQL's row locks:

- a takeover's increment waits for the old active replica's writes in flight (they hold the
  row FOR SHARE), so none of them can commit after it;
- every write the old replica starts after the increment committed sees the new epoch, and
  is refused before it writes anything.

So a replica that comes back late (frozen past the fencing window, then resumed) cannot act
on the sessions it lost, even before its heartbeat watchdog stops it. The refusal calls the
fence's `on_lost` first (the replica stops itself at once) and then raises FencedOut.

The same statement reads each locked session's owner (store/ownership.py): once the replica
owns sessions, a write to a session another replica adopted is refused the same way. With one
active replica the epoch already covers it; with sessions on several replicas (not built) the
owner check is the one that fences a single session.

SQLite has no cluster mode and no fence. Imported by the rest of `clarion.store`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from sqlalchemy import select

from clarion.store.schema import kandev_meta

log = logging.getLogger(__name__)

LEADER_EPOCH_KEY = "cluster_leader_epoch"

READ_EPOCH_SHARED = (
    select(kandev_meta.c.value)
    .where(kandev_meta.c.key == LEADER_EPOCH_KEY)
    .with_for_update(read=True)
)


class FencedOut(RuntimeError):
    """Another replica claimed leadership after this one: nothing more may be written."""


@dataclass(frozen=True, slots=True)
class LeaderFence:
    epoch: int
    on_lost: Callable[[str], None]

    def check(self, stored: object) -> None:
        if stored is not None and str(stored).strip() == str(self.epoch):
            return
        self._refuse(
            f"leadership epoch is {stored} in the database, this replica holds {self.epoch}: "
            "another replica has taken over"
        )

    def check_owner(self, session_id: str, owner: object, replica_id: str) -> None:
        """A session changes owner only when another replica adopted it, which it does only
        once this replica was taken for gone: so this replica must stop, as for the epoch."""
        if owner == replica_id:
            return
        self._refuse(
            f"session {session_id} belongs to replica {owner}, not to this replica "
            f"({replica_id}): another replica has adopted it"
        )

    def _refuse(self, reason: str) -> NoReturn:
        log.critical("write refused by the leadership fence", extra={"reason": reason})
        self.on_lost(reason)
        raise FencedOut(reason)
