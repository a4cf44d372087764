"""Cluster mode: the ownership fence, which keeps a replica from writing to sessions it lost.

A session belongs to one replica (`task_sessions.owner_replica_id`) and changes owner only
when a survivor adopts it, which it does only once the owner's liveness lock is gone and its
fencing window has passed (store/ownership.py). Every write that touches a session's turns,
messages or clarification rows takes the session's row lock in one statement
(`Db.lock_session`), and that statement reads the owner too: a session that is not this
replica's is refused before anything is written. Two properties follow from the row lock:

- an adoption waits for the owner's write in flight (it holds the row), so none of them
  commits after the adoption;
- every write the old owner starts after the adoption committed sees the new owner, and is
  refused.

Creating a session has no session to lock, so it reads this replica's own row in
`clarion_replicas` under FOR KEY SHARE instead: an adopter deletes that row in the adopting
transaction, so a creation either commits before the adoption (which then adopts the new
session with the rest) or finds the row gone and is refused.

So a replica that comes back late (frozen past its fencing window, then resumed) cannot act on
the sessions it lost, even before its heartbeat watchdog stops it. A refusal calls the fence's
`on_lost` first (the replica stops itself at once) and then raises FencedOut.

The fence itself (`OwnerFence`: the replica's id and what stops it) is the ports' data; the
checks are here. SQLite has no cluster mode and no fence. Imported by the rest of
`clarion.store`.
"""

from __future__ import annotations

import logging
from typing import NoReturn

from sqlalchemy import text

from clarion.ports.ownership import OwnerFence

__all__ = ["READ_OWN_ROW", "FencedOut", "OwnerFence", "check_owner", "check_registered"]

log = logging.getLogger(__name__)

# This replica's own row, held FOR KEY SHARE while a session it creates commits.
READ_OWN_ROW = text("SELECT id FROM clarion_replicas WHERE id = :replica_id FOR KEY SHARE")


class FencedOut(RuntimeError):
    """Another replica adopted this replica's sessions: nothing more may be written."""


def check_owner(fence: OwnerFence, session_id: str, owner: object) -> None:
    """A session changes owner only when another replica adopted it, which it does only once
    this replica was taken for gone: so this replica must stop."""
    if owner == fence.replica_id:
        return
    _refuse(
        fence,
        f"session {session_id} belongs to replica {owner}, not to this replica "
        f"({fence.replica_id}): another replica has adopted it",
    )


def check_registered(fence: OwnerFence, row: object) -> None:
    if row is not None:
        return
    _refuse(
        fence,
        f"replica {fence.replica_id} is no longer registered: another replica has taken it "
        "for gone and adopted its sessions",
    )


def _refuse(fence: OwnerFence, reason: str) -> NoReturn:
    log.critical(
        "write refused by the ownership fence",
        extra={"replica": fence.replica_id, "reason": reason},
    )
    fence.on_lost(reason)
    raise FencedOut(reason)
