"""Durable storage: the Store port on SQLAlchemy Core (SQLite and PostgreSQL).

Only `clarion.server.wiring`, the CLI and tests import this package; services use `clarion.ports`.
"""

from clarion.store.db.engine import open_engine
from clarion.store.db.migrations import migrate
from clarion.store.projection_epoch import CorruptEpochError
from clarion.store.sql_store import SqlStore, open_store
from clarion.store.startup.reservation_recovery import CorruptReservationError

__all__ = [
    "CorruptEpochError",
    "CorruptReservationError",
    "SqlStore",
    "migrate",
    "open_engine",
    "open_store",
]
