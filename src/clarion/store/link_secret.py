"""The answer links' signing key: generated once per database and kept in `kandev_meta`, so
it survives restarts and every cluster replica on the database signs and checks with the same
key. Used by the port implementations beside it (store-internal)."""

from __future__ import annotations

import logging
import secrets

from sqlalchemy import insert, select

from clarion.store.db.engine import Db
from clarion.store.db.schema import kandev_meta

log = logging.getLogger(__name__)
SECRET_KEY = "answer_link_secret"


class AnswerLinkSecret:
    """The answer links' signing secret, made once per database."""

    def __init__(self, db: Db) -> None:
        self._db = db

    async def answer_link_secret(self) -> str:
        """The database's answer-link key, creating it on first use. Callers racing on a new
        database (replicas starting together) all get the one that was committed first."""
        query = select(kandev_meta.c.value).where(kandev_meta.c.key == SECRET_KEY)
        async with self._db.read() as conn:
            found = (await conn.execute(query)).scalar()
        if found:
            return str(found)
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "kandev-meta:" + SECRET_KEY)
            found = (await conn.execute(query)).scalar()
            if found:
                return str(found)
            created = secrets.token_urlsafe(32)
            await conn.execute(insert(kandev_meta).values(key=SECRET_KEY, value=created))
        log.info("answer link key created")
        return created
