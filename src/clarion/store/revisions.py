"""Cluster mode: pending-projection revisions shared by every replica of one PostgreSQL database.

A reservation is one autocommit statement that takes `nextval` of the `clarion_pending_revision`
sequence and reads the projection epoch (the key `next_epoch` increments) from the same
statement's snapshot. Why two reservations that do not overlap in time are ordered, whichever
process made them:

- the sequence is monotonic in real time (one sequence, no per-session cache), so the later
  reservation gets the larger sequence;
- the later statement's snapshot is taken after the earlier one finished, so it sees every
  epoch increment the earlier one saw, and epochs only grow: its epoch is never older.

So a projection read that starts after a write committed carries a larger revision than any read
reserved before it, on whichever replica either ran. Overlapping reservations are not ordered,
and need not be: neither read started after the other.

SQLite has no sequences and no cluster mode: a reservation there raises. Used by the port
implementations beside it (store-internal).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from clarion.store.projection_epoch import EPOCH_KEY, stored_epoch

RESERVE = text(
    "SELECT nextval('clarion_pending_revision') AS sequence, "
    "(SELECT value FROM kandev_meta WHERE key = :key) AS epoch"
)


class SharedRevisionsNeedPostgres(RuntimeError):
    """A shared revision was asked of SQLite: cluster mode (and its revisions) is PostgreSQL
    only."""


def newest_epoch(raw: Any) -> int:
    """The stored projection epoch; an error, never a guess, when it is missing or corrupt."""
    if raw is None:
        raise LookupError(
            f"no {EPOCH_KEY} is stored yet: allocate one (next_epoch) before reserving revisions"
        )
    return stored_epoch(EPOCH_KEY, raw)
