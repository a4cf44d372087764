"""Cluster membership on PostgreSQL: one connection per replica, held for the replica's life.

Liveness is the database's own: the replica's locks are session-level advisory locks on that
connection, so a replica that dies (or whose connection the database drops) loses them at
once, with no row left behind that would need expiring.

- Every replica holds the single-server key (see guard.py) *shared*: a single-mode server,
  which takes it exclusively, refuses while any replica lives, and a replica refuses while a
  single-mode server lives.
- Every replica holds its own liveness key (see liveness.py): the sessions of an owner that
  no longer holds it are adopted by a survivor (ownership.py).
- The row in `clarion_replicas` is what the others see (`GET /api/v1/cluster`); its
  `last_seen_at` is written with the database's clock on every heartbeat, on the same
  connection, so a heartbeat that succeeds proves the locks are still held. The row stays
  when the replica stops or dies: the survivor that adopts its sessions deletes it, and a
  replica whose row is gone has been taken for gone (its next heartbeat stops it).

Imported by the composition side (`clarion.server.replica`) only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

from clarion.ports.cluster import ReplicaInfo
from clarion.store.db.engine import async_url
from clarion.store.db.liveness import LIVENESS_NAMESPACE, liveness_key
from clarion.store.db.own_loop import OwnLoop
from clarion.store.db.single_server import APPLICATION_PREFIX, PG_LOCK_KEY, AnotherServer, pg_holder

log = logging.getLogger(__name__)

_COLUMNS = "id, advertise_url, role, started_at, last_seen_at, sessions"
_LIVE = text(
    f"SELECT {_COLUMNS} FROM clarion_replicas "
    "WHERE last_seen_at > now() - make_interval(secs => :timeout) ORDER BY started_at, id"
)


class Membership:
    """This replica's connection, locks and row. Every statement runs on the one connection,
    one at a time (asyncpg connections are not concurrent), on the membership's own thread and
    event loop (own_loop.py): a heartbeat never waits behind the server's other work."""

    def __init__(
        self, own: OwnLoop, conn: AsyncConnection, replica_id: str, timeout_s: float
    ) -> None:
        self._own = own
        self._conn = conn
        self._lock = asyncio.Lock()
        self.replica_id = replica_id
        self.timeout_s = timeout_s

    async def _run(self, statement: Any, params: dict[str, Any] | None = None) -> Any:
        async def run() -> Any:
            async with self._lock:
                return await self._conn.execute(statement, params or {})

        return await self._own.run(run())

    async def register(self, advertise_url: str) -> None:
        await self._run(
            text(
                "INSERT INTO clarion_replicas (id, advertise_url, host, pid, role, sessions, "
                "heartbeats, started_at, last_seen_at) "
                "VALUES (:id, :url, :host, :pid, 'starting', 0, 0, now(), now())"
            ),
            {
                "id": self.replica_id,
                "url": advertise_url,
                "host": socket.gethostname(),
                "pid": os.getpid(),
            },
        )
        log.info("replica registered", extra={"replica": self.replica_id, "url": advertise_url})

    async def heartbeat(self, status: Callable[[], tuple[str, int]]) -> None:
        """Write `status()` (role, sessions), read under the connection's lock so that a
        heartbeat queued behind a role change never writes the old role after the new one.
        Raises LookupError if the row is gone (another replica took this one for dead)."""
        await self._own.run(self._heartbeat(status))

    async def heartbeats(
        self,
        status: Callable[[], tuple[str, int]],
        *,
        every_s: float,
        within_s: float,
        succeeded: Callable[[], None],
        failed: Callable[[Exception], None],
    ) -> None:
        """Until cancelled, a heartbeat every `every_s`, each given `within_s`. `succeeded()`
        after each; `failed(exc)` for the first that fails or takes longer, which ends them.
        Both are called on the membership's thread, and `status` is read there."""

        async def beating() -> None:
            while True:
                try:
                    await asyncio.wait_for(self._heartbeat(status), within_s)
                except Exception as exc:
                    failed(exc)
                    return
                succeeded()
                await asyncio.sleep(every_s)

        await self._own.run(beating())

    async def _heartbeat(self, status: Callable[[], tuple[str, int]]) -> None:
        async with self._lock:
            role, sessions = status()
            result = await self._conn.execute(
                text(
                    "UPDATE clarion_replicas SET last_seen_at = now(), "
                    "heartbeats = heartbeats + 1, role = :role, sessions = :sessions "
                    "WHERE id = :id"
                ),
                {"id": self.replica_id, "role": role, "sessions": sessions},
            )
        if result.rowcount != 1:
            raise LookupError(f"replica {self.replica_id} is no longer registered")

    async def replicas(self) -> list[ReplicaInfo]:
        rows = await self._run(_LIVE, {"timeout": self.timeout_s})
        return [
            ReplicaInfo(
                id=r.id,
                advertise_url=r.advertise_url,
                role=r.role,
                started_at=r.started_at,
                last_seen_at=r.last_seen_at,
                sessions=r.sessions,
            )
            for r in rows
        ]

    async def leave(self) -> None:
        """A graceful stop: the row stays for the survivor that adopts this replica's
        sessions, marked so that it need not wait out a fencing window (this replica's agents
        have stopped, and its locks go with the connection right after)."""
        await self._run(
            text(
                "UPDATE clarion_replicas SET role = 'stopped', "
                "last_seen_at = now() - interval '1 day' WHERE id = :id"
            ),
            {"id": self.replica_id},
        )

    async def part(self) -> None:
        """Close the connection, which releases every lock."""

        async def close() -> None:
            engine = self._conn.engine
            try:
                await self._conn.close()
            finally:
                await engine.dispose()

        await self._own.run(close())


def _unused_id() -> str:
    return str(uuid.uuid4())


def _name(replica_id: str) -> str:
    # The pid first: application_name keeps 63 bytes, and a long host name is cut, not the pid.
    identity = f"cluster replica {replica_id[:8]} pid {os.getpid()}, host {socket.gethostname()}"
    return f"{APPLICATION_PREFIX} {identity}"[:63]


@contextlib.asynccontextmanager
async def membership(url: str, timeout_s: float) -> AsyncIterator[Membership]:
    """Join as a replica: take the single-server key shared (AnotherServer if a single-mode
    server holds it) and keep the connection until exit, which releases every lock. The
    connection lives on a thread and event loop of its own (own_loop.py)."""
    if make_url(url).get_backend_name() not in ("postgresql", "postgres"):
        raise ValueError("cluster mode needs PostgreSQL")
    own = OwnLoop("replica-membership")
    try:
        member = await own.run(_join(own, url, timeout_s))
        try:
            yield member
        finally:
            with contextlib.suppress(Exception):
                await member.leave()
            await member.part()
    finally:
        await own.close()


async def _join(own: OwnLoop, url: str, timeout_s: float) -> Membership:
    """On the membership's loop: connect, take the locks; the connection stays open."""
    replica_id = _unused_id()
    engine = create_async_engine(
        async_url(url),
        poolclass=NullPool,
        isolation_level="AUTOCOMMIT",  # each statement its own transaction; locks are the session's
        connect_args={"server_settings": {"application_name": _name(replica_id)}},
    )
    try:
        conn = await engine.connect()
        try:
            taken = await conn.scalar(
                text("SELECT pg_try_advisory_lock_shared(:key)"), {"key": PG_LOCK_KEY}
            )
            if not taken:
                raise AnotherServer(await pg_holder(conn))
            while not await conn.scalar(
                text("SELECT pg_try_advisory_lock(:ns, :key)"),
                {"ns": LIVENESS_NAMESPACE, "key": liveness_key(replica_id)},
            ):
                # Another running replica's id has the same key: a replica without its own
                # lock would look stopped while it runs, so take another id.
                replica_id = _unused_id()
                await conn.execute(
                    text("SELECT set_config('application_name', :name, false)"),
                    {"name": _name(replica_id)},
                )
        except BaseException:
            await conn.close()
            raise
    except BaseException:
        await engine.dispose()
        raise
    log.info("replica joined the cluster", extra={"replica": replica_id})
    return Membership(own, conn, replica_id, timeout_s)
