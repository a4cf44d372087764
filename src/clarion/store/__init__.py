"""Durable storage: the store's ports on SQLAlchemy Core (SQLite and PostgreSQL), one object
per port (`Stores`).

Only `clarion.server.wiring`, the CLI and tests import this package; services use `clarion.ports`.
"""

from clarion.store.db.engine import open_engine
from clarion.store.db.membership import Membership, membership
from clarion.store.db.migrations import migrate
from clarion.store.projection_epoch import CorruptEpochError
from clarion.store.sql_store import SqlStore, open_store
from clarion.store.startup.reservation_recovery import CorruptReservationError
from clarion.store.stores import Stores

__all__ = [
    "CorruptEpochError",
    "CorruptReservationError",
    "Membership",
    "SqlStore",
    "Stores",
    "membership",
    "migrate",
    "open_engine",
    "open_store",
]
