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

SQLite has no cluster mode and no fence. Imported by the rest of `clarion.store`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

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
        reason = (
            f"leadership epoch is {stored} in the database, this replica holds {self.epoch}: "
            "another replica has taken over"
        )
        log.critical("write refused by the leadership fence", extra={"reason": reason})
        self.on_lost(reason)
        raise FencedOut(reason)
