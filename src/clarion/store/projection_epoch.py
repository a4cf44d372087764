"""kandev_meta: the pending-action projection's monotonically allocated epoch.

Imported only by the SqlStore facade.
"""

from __future__ import annotations

import logging

from sqlalchemy import insert, select, update

from clarion.store.db.row_conversion import StoreBase
from clarion.store.db.schema import kandev_meta

log = logging.getLogger(__name__)
EPOCH_KEY = "pending_action_projection_epoch"


class CorruptEpochError(RuntimeError):
    """A stored epoch is not a positive integer; refusing to guess one."""


def stored_epoch(key: str, raw: object) -> int:
    """A stored epoch's value; CorruptEpochError, never a guess, when it is not a positive
    integer."""
    try:
        epoch = int(str(raw).strip())
    except ValueError:
        epoch = 0
    if epoch < 1:
        raise CorruptEpochError(f"stored {key} is not a positive integer: {raw!r}")
    return epoch


class MetaQueries(StoreBase):
    async def next_epoch(self) -> int:
        epoch = await self._increment(EPOCH_KEY)
        log.info("projection epoch allocated", extra={"epoch": epoch})
        return epoch

    async def _increment(self, key: str) -> int:
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "kandev-meta:" + key)
            query = select(kandev_meta.c.value).where(kandev_meta.c.key == key)
            raw = (await conn.execute(query)).scalar()
            if raw is None:
                epoch = 1
                await conn.execute(insert(kandev_meta).values(key=key, value=str(epoch)))
            else:
                epoch = stored_epoch(key, raw) + 1
                await conn.execute(
                    update(kandev_meta).where(kandev_meta.c.key == key).values(value=str(epoch))
                )
        return epoch
