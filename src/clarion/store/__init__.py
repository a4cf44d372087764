"""Durable storage: the Store port on SQLAlchemy Core (SQLite and PostgreSQL).

Only `clarion.server.wiring`, the CLI and tests import this package; services use `clarion.ports`.
"""

from clarion.store.engine import open_engine
from clarion.store.facade import SqlStore, open_store
from clarion.store.meta import CorruptEpochError
from clarion.store.migrations import migrate
from clarion.store.startup.reservations import CorruptReservationError

__all__ = [
    "CorruptEpochError",
    "CorruptReservationError",
    "SqlStore",
    "migrate",
    "open_engine",
    "open_store",
]
