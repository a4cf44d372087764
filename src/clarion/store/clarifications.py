"""Clarification bundles: create, read, claim, confirm, restore, detach, expire, cancel.

Imported only by the SqlStore facade. Every write runs in one write transaction holding the
session lock, so "pending in the current turn of a non-terminal session" is checked and acted
on atomically and two concurrent claims cannot both apply.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, not_, select
from sqlalchemy.sql.elements import BindParameter

from clarion.domain.bundles import claim_values
from clarion.domain.errors import Conflict, InvalidInput, NotFound
from clarion.domain.lifecycle import (
    CANCEL,
    CLAIM,
    CLAIM_BY_POLICY,
    DELIVER,
    DETACH,
    EXPIRE,
    RESTORE_CLAIM,
    RETIRE_INTENT,
    Transition,
)
from clarion.domain.models import (
    Bundle,
    ClarificationResponse,
    Message,
    MessageType,
    MetaKey,
    SessionState,
)
from clarion.domain.waiting import Deadlines
from clarion.domain.webhooks import (
    CLARIFICATION_ANSWERED,
    CLARIFICATION_DETACHED,
    CLARIFICATION_EXPIRED,
    CLARIFICATION_REQUESTED,
    WebhookFact,
    questions_of_rows,
)
from clarion.ports import ClaimResult, NewMessage, Written
from clarion.store.bundle_rows import (
    bundle_order,
    bundle_rows,
    bundle_session_id,
    is_well_formed,
    lock_bundle_session,
    read_bundle,
    rewrite,
    run_rows,
)
from clarion.store.db.fastpath import hot
from clarion.store.db.portable_sql import flag
from clarion.store.db.predicates import (
    clarification_rows,
    in_current_turn,
    pending_in_current_turn,
    session_not_terminal,
)
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.deadlines import claim_expiry, insert_deadlines, reopen_restored_expiry
from clarion.store.messages import insert_message, resolve_turn
from clarion.store.outbox import OutboxQueries
from clarion.store.tasks import move_with
from clarion.store.turns import read_session_and_current_turn

log = logging.getLogger(__name__)
INTENT = MetaKey.RESPONSE_DELIVERY_PENDING

# Built once with bind parameters; see bundles.py for why.
_SESSION: BindParameter[str] = bindparam("session_id")
_PENDING_ID: BindParameter[str] = bindparam("pending_id")
_IDS: BindParameter[list[str]] = bindparam("message_ids", expanding=True)
_ACTIVE_IDS = (
    select(messages.c.pending_id)
    .distinct()
    .where(pending_in_current_turn(session_id=_SESSION))
    .order_by(messages.c.pending_id)
)
_CLAIMABLE = hot(
    select(messages).where(
        messages.c.pending_id == _PENDING_ID,
        pending_in_current_turn(session_id=_SESSION),
        session_not_terminal(messages.c.task_session_id),
    )
)
_WITH_INTENT = hot(
    select(messages).where(
        messages.c.id.in_(_IDS),
        messages.c.pending_id == _PENDING_ID,
        flag(messages.c.metadata, INTENT),
    )
)
_RESTORABLE = select(messages).where(
    messages.c.id.in_(_IDS),
    messages.c.pending_id == _PENDING_ID,
    clarification_rows(),
    flag(messages.c.metadata, INTENT),
    in_current_turn(session_id=_SESSION),
    session_not_terminal(messages.c.task_session_id),
)
_NOT_DETACHED = not_(flag(messages.c.metadata, MetaKey.AGENT_DISCONNECTED))
_DETACHABLE = select(messages).where(pending_in_current_turn(session_id=_SESSION), _NOT_DETACHED)
_DETACHABLE_BUNDLE = _DETACHABLE.where(messages.c.pending_id == _PENDING_ID)
_PENDING_OF_SESSION = select(messages).where(pending_in_current_turn(session_id=_SESSION))
_PENDING_OF_BUNDLE = _PENDING_OF_SESSION.where(messages.c.pending_id == _PENDING_ID)
# What `confirm_delivery` may apply: its guard (every row still carries the intent) is exactly
# the claimed state these transitions leave.
_SETTLES_A_CLAIM = frozenset({DELIVER, RETIRE_INTENT})


class ClarificationQueries(OutboxQueries):
    async def create_bundle(
        self,
        session_id: str,
        rows: Sequence[NewMessage],
        *,
        turn_id: str | None = None,
        session_state: SessionState | None = None,
        deadlines: Deadlines | None = None,
    ) -> Written:
        pending_id = _bundle_identity(session_id, rows)
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            if await bundle_session_id(conn, pending_id) is not None:
                raise Conflict("bundle already exists", pending_id=pending_id)
            task_id, target = await resolve_turn(conn, session_id, turn_id)
            created = [
                await insert_message(conn, row, task_id=task_id, turn_id=target, now=now)
                for row in rows
            ]
            session = await move_with(conn, session_id, session_state, self._clock.now())
            if deadlines is not None:
                await insert_deadlines(conn, pending_id, session_id, task_id, deadlines)
            await self._enqueue(
                conn,
                CLARIFICATION_REQUESTED,
                task_id,
                lambda title: WebhookFact(
                    CLARIFICATION_REQUESTED,
                    task_id,
                    title,
                    session_id,
                    pending_id=pending_id,
                    questions=questions_of_rows(created),
                ),
                now,
            )
        log.info(
            "clarification bundle created",
            extra={"session_id": session_id, "turn_id": target, "pending_id": pending_id},
        )
        return Written(tuple(created), session)

    async def find_bundle(self, pending_id: str) -> Bundle | None:
        async with self._db.read() as conn:
            return await read_bundle(conn, pending_id)

    async def list_active_bundle_ids(self, session_id: str) -> list[str]:
        async with self._db.read_one() as conn:
            result = await conn.execute(_ACTIVE_IDS, {"session_id": session_id})
            return [str(value) for value in result.scalars()]

    async def claim_response(
        self, response: ClarificationResponse, *, now: datetime
    ) -> ClaimResult:
        pending_id = response.pending_id
        async with self._db.write() as conn:
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                raise NotFound("clarification not found", pending_id=pending_id)
            claimed: tuple[Message, ...] = ()
            rows = await bundle_rows(conn, pending_id)
            # A bundle spanning sessions, turns or types has no single owner: claim nothing.
            # A policy's response also needs its expiry still unfired, claimed with it.
            if is_well_formed(rows):
                pending = await run_rows(
                    conn, _CLAIMABLE, {"pending_id": pending_id, "session_id": session_id}
                )
                if pending and response.by_policy and not await claim_expiry(conn, pending_id, now):
                    pending = []
                taken: list[Message] = []
                for row in pending:
                    values = claim_values(row, response)
                    claim = CLAIM_BY_POLICY if response.by_policy else CLAIM
                    taken.extend(await rewrite(conn, [row], claim, now=now, values=values))
                claimed = tuple(taken)
            # The bundle as it now stands: the rows read above with the claimed ones replaced
            # (nothing else in it can change under the session lock), so no second read.
            updated = {row.id: row for row in claimed}
            session, current = await read_session_and_current_turn(conn, session_id)
            bundle = Bundle(
                pending_id=pending_id,
                session=session,
                rows=tuple(sorted((updated.get(r.id, r) for r in rows), key=bundle_order)),
                current_turn_id=current,
            )
            if claimed:
                event = CLARIFICATION_EXPIRED if response.by_policy else CLARIFICATION_ANSWERED
                await self._enqueue(
                    conn,
                    event,
                    session.task_id,
                    lambda title: WebhookFact(
                        event,
                        session.task_id,
                        title,
                        session_id,
                        pending_id=pending_id,
                        questions=questions_of_rows(bundle.rows),
                        detail=_answered_detail(response),
                    ),
                    now,
                )
        log.info(
            "clarification response claimed" if claimed else "clarification claim did not apply",
            extra={
                "session_id": session_id,
                "pending_id": pending_id,
                "turn_id": bundle.rows[0].turn_id,
                "claimed": len(claimed),
                "rejected": response.rejected,
            },
        )
        return ClaimResult(claimed=claimed, bundle=bundle)

    async def confirm_delivery(
        self,
        pending_id: str,
        message_ids: Sequence[str],
        transition: Transition = RETIRE_INTENT,
        *,
        session_state: SessionState | None = None,
        delivered: bool = False,
    ) -> Written | None:
        settle = DELIVER if delivered else transition
        if settle not in _SETTLES_A_CLAIM:
            raise ValueError(f"{settle} does not settle a claim")
        wanted = set(message_ids)
        async with self._db.write() as conn:
            if not wanted:
                return None
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                return None
            rows = await run_rows(
                conn, _WITH_INTENT, {"message_ids": sorted(wanted), "pending_id": pending_id}
            )
            if len(rows) != len(wanted):
                return None
            confirmed = await rewrite(conn, rows, settle)
            session = await move_with(conn, session_id, session_state, self._clock.now())
        log.info("clarification delivery confirmed", extra={"pending_id": pending_id})
        return Written(confirmed, session)

    async def restore_claim(self, pending_id: str, message_ids: Sequence[str]) -> bool:
        wanted = set(message_ids)
        async with self._db.write() as conn:
            if not wanted:
                return False
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                return False
            rows = await run_rows(
                conn,
                _RESTORABLE,
                {"message_ids": sorted(wanted), "pending_id": pending_id, "session_id": session_id},
            )
            if len(rows) != len(wanted):
                return False
            await rewrite(conn, rows, RESTORE_CLAIM, now=self._clock.now())
            await reopen_restored_expiry(conn, rows, self._clock.now())
        log.info("clarification claim restored", extra={"pending_id": pending_id})
        return True

    async def detach_bundles(
        self, session_id: str, *, pending_id: str | None = None
    ) -> tuple[Message, ...]:
        query, params = _DETACHABLE, {"session_id": session_id}
        if pending_id is not None:
            query, params = _DETACHABLE_BUNDLE, {**params, "pending_id": pending_id}
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            rows = await run_rows(conn, query, params)
            now = self._clock.now()
            changed = await rewrite(conn, rows, DETACH, now=now)
            await self._detached(conn, changed, now)
        if changed:
            log.info(
                "clarification bundles detached",
                extra={"session_id": session_id, "pending_ids": sorted({_pid(m) for m in changed})},
            )
        return changed

    async def _detached(self, conn: Any, changed: Sequence[Message], now: datetime) -> None:
        """One `clarification.detached` per bundle that changed, with all its pending rows."""
        by_bundle: dict[str, list[Message]] = {}
        for row in changed:
            by_bundle.setdefault(_pid(row), []).append(row)
        for pending_id, rows in sorted(by_bundle.items()):
            first = rows[0]
            await self._enqueue(
                conn,
                CLARIFICATION_DETACHED,
                first.task_id,
                functools.partial(_detached_fact, pending_id, rows),
                now,
            )

    async def expire_bundles(self, session_id: str) -> tuple[Message, ...]:
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            rows = await run_rows(conn, _PENDING_OF_SESSION, {"session_id": session_id})
            changed = await rewrite(conn, rows, EXPIRE, now=self._clock.now())
        if changed:
            log.info("clarification bundles expired", extra={"session_id": session_id})
        return changed

    async def cancel_bundle(self, pending_id: str) -> tuple[Message, ...]:
        # Only operationally pending rows: superseded history is never rewritten.
        async with self._db.write() as conn:
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                return ()
            rows = await run_rows(
                conn, _PENDING_OF_BUNDLE, {"pending_id": pending_id, "session_id": session_id}
            )
            changed = await rewrite(conn, rows, CANCEL, now=self._clock.now())
        if changed:
            log.info("clarification bundle cancelled", extra={"pending_id": pending_id})
        return changed


def _detached_fact(pending_id: str, rows: Sequence[Message], title: str) -> WebhookFact:
    first = rows[0]
    return WebhookFact(
        CLARIFICATION_DETACHED,
        first.task_id,
        title,
        first.session_id,
        pending_id=pending_id,
        questions=questions_of_rows(rows),
    )


def _answered_detail(response: ClarificationResponse) -> str:
    if response.by_policy:
        return response.reject_reason if response.rejected else "the default answer was chosen"
    return "skipped" if response.rejected else "answered"


def _pid(message: Message) -> str:
    return str(message.metadata.get(MetaKey.PENDING_ID, ""))


def _bundle_identity(session_id: str, rows: Sequence[NewMessage]) -> str:
    if not rows:
        raise InvalidInput("a bundle needs at least one row", field="questions")
    ids = {row.metadata.get(MetaKey.PENDING_ID) for row in rows}
    pending_id = ids.pop() if len(ids) == 1 else None
    if not isinstance(pending_id, str) or not pending_id:
        raise InvalidInput("bundle rows must share one non-empty pending_id", field="pending_id")
    for row in rows:
        if row.session_id != session_id or row.type != MessageType.CLARIFICATION_REQUEST:
            raise InvalidInput(
                "bundle rows must be clarification requests of the session", field="rows"
            )
    return pending_id
