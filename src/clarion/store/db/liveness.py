"""A cluster replica's liveness as PostgreSQL sees it: an advisory lock that the replica holds
on its membership connection for its whole life, and that PostgreSQL releases the moment that
connection ends (a crash, SIGKILL, a host gone, the replica fencing itself).

The lock's key is derived from the replica's id, so any replica can tell whether the owner of
a session is running from nothing but the owner's id, even once that owner's row in
`clarion_replicas` is gone or stale (a row stays fresh for up to a timeout after its replica
died). The same derivation is written twice, in Python to take the lock and in SQL to test it
inside the statement that adopts sessions; a store test checks that they agree.

The keys use PostgreSQL's two-integer advisory lock space (a namespace and a 31-bit key), apart
from the single-integer key of the single-server guard. No replica starts with a
key a running one holds (membership takes another id); a dead replica whose key a later one
happens to hold looks alive while that one runs: its sessions wait for adoption, and are never
adopted twice.

Imported by the store's cluster membership and ownership queries only.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import TextClause, text

# "CLRP": the namespace of the replicas' liveness keys.
LIVENESS_NAMESPACE = 0x434C_5250
_KEY_MASK = 0x7FFF_FFFF


def liveness_key(replica_id: str) -> int:
    """The key of `replica_id`'s liveness lock: the first 31 bits of the id's MD5."""
    return int(hashlib.md5(replica_id.encode()).hexdigest()[:8], 16) & _KEY_MASK


def owner_not_running(owner_column: str) -> TextClause:
    """True where the replica named in `owner_column` (not null) does not hold its liveness
    lock right now, in this database. `pg_locks` is read as the statement runs, not from its
    snapshot, and an owner takes its lock before it creates a session, so the owner of any
    row the statement sees is seen as running for as long as it is."""
    return text(
        f"(CAST(CAST(CAST('x' || substr(md5({owner_column}), 1, 8) AS bit(32)) AS integer) "
        f"& {_KEY_MASK} AS oid) NOT IN (SELECT objid FROM pg_locks WHERE locktype = 'advisory' "
        f"AND granted AND objsubid = 2 AND classid = {LIVENESS_NAMESPACE} "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())))"
    )
