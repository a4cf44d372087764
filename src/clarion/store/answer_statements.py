"""The answer path's statements and helpers: where `SqlAnswers` (answers.py) places a new
bundle, the claim itself (its rows chosen by the claim's derived guard, claim_reads.py), the
session's active bundle ids and the events' facts.

Every write runs in one write transaction holding the session lock, so "pending in the current turn
of a non-terminal session" is checked and acted on atomically and two concurrent claims cannot both
apply."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import bindparam, exists, select
from sqlalchemy.sql.elements import BindParameter

from clarion.domain.answers import response_wire
from clarion.domain.errors import Conflict, InvalidInput, NotFound
from clarion.domain.lifecycle import Transition, claim_values
from clarion.domain.models import (
    Bundle,
    ClarificationResponse,
    Message,
    MessageType,
    MetaKey,
)
from clarion.domain.notification_events import (
    CLARIFICATION_ANSWERED,
    CLARIFICATION_DETACHED,
    CLARIFICATION_EXPIRED,
    NotificationFact,
    questions_of_rows,
)
from clarion.domain.waiting import ANSWERED_BY_POLICY
from clarion.ports import ClaimResult, NewMessage
from clarion.store.bundle_rows import (
    bundle_order,
    is_well_formed,
    lock_bundle_session,
    rewrite,
)
from clarion.store.claim_reads import CLAIMS, read_claim
from clarion.store.db.engine import Db
from clarion.store.db.fastpath import hot
from clarion.store.db.predicates import (
    current_turn_id,
    pending_in_current_turn,
)
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx
from clarion.store.deadline_rows import claim_expiry
from clarion.store.outbox import OutboxWriter

log = logging.getLogger(__name__)

# Built once with bind parameters; see bundles.py for why.
_SESSION: BindParameter[str] = bindparam("session_id")
_PENDING_ID: BindParameter[str] = bindparam("pending_id")
ACTIVE_IDS = (
    select(messages.c.pending_id)
    .distinct()
    .where(pending_in_current_turn(session_id=_SESSION))
    .order_by(messages.c.pending_id)
)


def detached_fact(pending_id: str, rows: Sequence[Message], title: str) -> NotificationFact:
    first = rows[0]
    return NotificationFact(
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


def pending_id_of(message: Message) -> str:
    return str(message.metadata.get(MetaKey.PENDING_ID, ""))


def bundle_identity(session_id: str, rows: Sequence[NewMessage]) -> str:
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


_BUNDLE_EXISTS = exists().where(messages.c.pending_id == _PENDING_ID)
# Where a new bundle goes, with the checks before it, in one statement: the session's task, the
# turn (the given one's session, or the current turn), and whether the pending id is taken.
_PLACE_IN_TURN = hot(
    select(
        task_sessions.c.task_id,
        select(turns.c.task_session_id)
        .where(turns.c.id == bindparam("turn_id"))
        .scalar_subquery()
        .label("turn_session_id"),
        _BUNDLE_EXISTS.label("taken"),
    ).where(task_sessions.c.id == _SESSION)
)
_PLACE_IN_CURRENT_TURN = hot(
    select(
        task_sessions.c.task_id,
        current_turn_id(_SESSION).label("current_turn_id"),
        _BUNDLE_EXISTS.label("taken"),
    ).where(task_sessions.c.id == _SESSION)
)


async def place_bundle(
    conn: Tx, session_id: str, pending_id: str, turn_id: str | None
) -> tuple[str, str]:
    """(task id, turn id) for a new bundle's rows: the given turn, which must be the
    session's, or the current turn. Conflict when the pending id is already a bundle."""
    params = {"session_id": session_id, "pending_id": pending_id}
    if turn_id is None:
        row = (await conn.execute(_PLACE_IN_CURRENT_TURN, params)).first()
    else:
        row = (await conn.execute(_PLACE_IN_TURN, {**params, "turn_id": turn_id})).first()
    if row is not None and row.taken:
        raise Conflict("bundle already exists", pending_id=pending_id)
    if row is None:
        raise NotFound("session not found", session_id=session_id)
    if turn_id is None:
        if row.current_turn_id is None:
            raise Conflict("session has no current turn", session_id=session_id)
        return str(row.task_id), str(row.current_turn_id)
    if row.turn_session_id != session_id:
        raise NotFound("turn not found", session_id=session_id, turn_id=turn_id)
    return str(row.task_id), turn_id


async def claim_response(
    db: Db,
    outbox: OutboxWriter,
    response: ClarificationResponse,
    claim: Transition,
    *,
    now: datetime,
) -> ClaimResult:
    """Claim the bundle's pending rows for `response` by `claim` (CLAIM, or CLAIM_BY_POLICY
    with the expiry): `SqlAnswers.claim_response`."""
    if claim not in CLAIMS:
        raise ValueError(f"{claim} is not a claim")
    # The table says who answers: a claim that records the policy as the answerer.
    by_policy = claim.sets.get(MetaKey.ANSWERED_BY) == ANSWERED_BY_POLICY
    if by_policy != response.by_policy:
        # The transition decides what is written; a response saying otherwise is a caller's slip.
        raise ValueError(f"{claim} does not claim a response with by_policy={response.by_policy}")
    pending_id = response.pending_id
    async with db.write() as conn:
        session_id = await lock_bundle_session(db, conn, pending_id)
        if session_id is None:
            raise NotFound("clarification not found", pending_id=pending_id)
        claimed: tuple[Message, ...] = ()
        read = await read_claim(conn, pending_id, session_id, claim)
        if read is None:  # pragma: no cover - the lock above found the session
            raise NotFound("clarification not found", pending_id=pending_id)
        rows, pending = read.rows, read.claimable
        # A bundle spanning sessions, turns or types has no single owner: claim nothing.
        # A policy's response also needs its expiry still unfired, claimed with it.
        if is_well_formed(rows):
            if pending and by_policy and not await claim_expiry(conn, pending_id, now):
                pending = []
            taken: list[Message] = []
            for row in pending:
                values = claim_values(row, response)
                taken.extend(await rewrite(conn, [row], claim, now=now, values=values))
            claimed = tuple(taken)
        # The bundle as it now stands: the rows and the session read above with the claimed
        # rows replaced (nothing else can change under the session lock), so no second read.
        updated = {row.id: row for row in claimed}
        session = read.session
        bundle = Bundle(
            pending_id=pending_id,
            session=session,
            rows=tuple(sorted((updated.get(r.id, r) for r in rows), key=bundle_order)),
            current_turn_id=read.current_turn_id,
        )
        if claimed:
            event = CLARIFICATION_EXPIRED if by_policy else CLARIFICATION_ANSWERED
            await outbox.enqueue(
                conn,
                event,
                session.task_id,
                lambda title: NotificationFact(
                    event,
                    session.task_id,
                    title,
                    session_id,
                    pending_id=pending_id,
                    questions=questions_of_rows(bundle.rows),
                    detail=_answered_detail(response),
                    response=response_wire(response),
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
