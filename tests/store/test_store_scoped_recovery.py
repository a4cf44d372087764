"""Store contract: every startup recovery step, given a scope, acts on the sessions inside it
and leaves every row of the sessions outside it as it was (what a cluster replica adopting a
dead replica's sessions needs: the sessions live replicas run are not its to recover)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select

from clarion.domain import lifecycle
from clarion.domain.lifecycle import DELIVER
from clarion.domain.models import AuthorType, MessageType, Session
from clarion.domain.permissions import PermissionOption, ToolCallInfo, request_metadata
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.domain.turn_outcomes import TurnOutcome
from clarion.ports import NewMessage
from clarion.store import CorruptReservationError
from clarion.store.db.schema import task_session_messages, task_session_turns, task_sessions

from .conftest import World

OPTIONS = (PermissionOption("allow", "Allow", "allow_once"),)


@dataclass(frozen=True)
class Leftovers:
    """One of everything a stopped process leaves for recovery, each in its own session."""

    rolled_back: Session  # a reservation nothing was sent for
    kept: Session  # a reservation the agent may have had: kept, its start event still marked
    intent: Session  # a claim no reservation owns
    orphan: Session  # a live question without its waiter, in an open turn
    permission: Session  # a pending permission request in an open turn
    resend: Session  # a resend in flight
    unread: Session  # an answer confirmed to a live waiter the agent never spoke after

    @property
    def ids(self) -> list[str]:
        return sorted(s.id for s in vars(self).values())


async def _reserved(world: World, tag: str) -> tuple[Session, str]:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, ("a",), pending_id=f"{tag}-reserved-{session.id}")
    claimed = (await world.answer(f"{tag}-reserved-{session.id}", "a")).claimed
    world.clock.advance(1)
    turn = await world.store.reserve_successor(
        session.id,
        source_turn_id=source.id,
        pending_id=f"{tag}-reserved-{session.id}",
        message_ids=[m.id for m in claimed],
    )
    return session, turn.id


async def _leftovers(world: World, tag: str) -> Leftovers:
    rolled_back, _ = await _reserved(world, tag)
    kept, kept_turn = await _reserved(world, tag)
    await world.store.mark_attempted(kept_turn)
    await world.store.reconcile_reservations(scope=SessionScope.only([kept.id]))

    intent = await world.session()
    await world.turn(intent)
    await world.bundle(intent, pending_id=f"{tag}-intent")
    await world.answer(f"{tag}-intent", "db")

    orphan = await world.session()
    await world.turn(orphan)
    await world.bundle(orphan, pending_id=f"{tag}-orphan")

    permission = await world.session()
    await world.turn(permission)
    await world.store.add_permission_request(
        NewMessage(
            session_id=permission.id,
            author_type=AuthorType.AGENT,
            type=MessageType.PERMISSION_REQUEST,
            content="Edit README.md",
            metadata=request_metadata(ToolCallInfo("c1", "Edit README.md", "edit"), OPTIONS),
        )
    )

    resend = await world.session()
    await world.turn(resend)
    await world.bundle(resend, pending_id=f"{tag}-resend")
    [answered] = (await world.answer(f"{tag}-resend", "db")).claimed
    written = await world.store.confirm_delivery(f"{tag}-resend", [answered.id], DELIVER)
    [row] = written.rows if written is not None else pytest.fail("not delivered")
    # An ambiguous answer whose resend a stopped process left in flight.
    await world.raw_message_metadata(
        row.id, {**row.metadata, "delivery": "ambiguous", "resend_pending": True}
    )

    unread = await world.session()
    await world.turn(unread)
    await world.bundle(unread, pending_id=f"{tag}-unread")
    claimed = (await world.answer(f"{tag}-unread", "db")).claimed
    await world.store.confirm_delivery(f"{tag}-unread", [m.id for m in claimed], DELIVER)
    return Leftovers(rolled_back, kept, intent, orphan, permission, resend, unread)


async def _rows(world: World, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
    """Every row of these sessions, as stored."""
    found: list[tuple[Any, ...]] = []
    async with world.store.engine.connect() as conn:
        for table, column in (
            (task_sessions, task_sessions.c.id),
            (task_session_turns, task_session_turns.c.task_session_id),
            (task_session_messages, task_session_messages.c.task_session_id),
        ):
            query = select(table).where(column.in_(session_ids)).order_by(*table.primary_key)
            found.extend(tuple(row) for row in await conn.execute(query))
    return found


async def _recover(world: World, scope: SessionScope) -> dict[str, set[str]]:
    """Every store step of startup recovery, in its order; the sessions each step acted on."""
    store = world.store
    reservations = await store.reconcile_reservations(scope=scope)
    intents = await store.reconcile_intents(scope=scope)
    resends = await store.transition_all_bundles(lifecycle.RELEASE_RESEND, scope=scope)
    marked = await store.list_start_marked_turns(scope=scope)
    await store.clear_start_markers([t.id for t in marked])
    detached = await store.transition_all_bundles(lifecycle.DETACH, scope=scope)
    expired = await store.expire_stale_permissions(reason="server restarted", scope=scope)
    unread = await store.transition_all_bundles(lifecycle.MARK_UNREAD, scope=scope)
    interrupted = await store.complete_open_turns(outcome=TurnOutcome.INTERRUPTED, scope=scope)
    return {
        "reservations": {r.session_id for r in reservations},
        "intents": {i.session_id for i in intents},
        "resends": {b.pending_id.split("-")[0] for b in resends},
        "start markers": {t.session_id for t in marked},
        "detached": {b.session_id for b in detached},
        "expired": {m.session_id for m in expired},
        "unread": {b.pending_id.split("-")[0] for b in unread},
        "interrupted": {t.session_id for t in interrupted},
    }


def _expected(side: Leftovers, tag: str) -> dict[str, set[str]]:
    return {
        "reservations": {side.rolled_back.id},
        "intents": {side.intent.id},
        "resends": {tag},
        "start markers": {side.kept.id},
        # A rolled-back reservation's question, and a restored intent's, are pending again in
        # their open turns, so they are detached too.
        "detached": {side.orphan.id, side.rolled_back.id, side.intent.id},
        "expired": {side.permission.id},
        "unread": {tag},
        "interrupted": set(side.ids),
    }


async def test_a_scoped_recovery_acts_on_its_sessions_and_leaves_every_other_row_alone(
    world: World,
) -> None:
    adopted = await _leftovers(world, "adopted")
    running = await _leftovers(world, "running")
    untouched = await _rows(world, running.ids)

    acted = await _recover(world, SessionScope.only(adopted.ids))

    assert acted == _expected(adopted, "adopted")
    assert await _rows(world, running.ids) == untouched
    # The other sessions' leftovers are all still there for whoever recovers them.
    assert await _recover(world, SessionScope.only(running.ids)) == _expected(running, "running")
    assert await _recover(world, EVERY_SESSION) == {key: set() for key in acted}


async def test_a_malformed_reservation_outside_the_scope_does_not_stop_the_recovery(
    world: World,
) -> None:
    adopted, _ = await _reserved(world, "adopted")
    elsewhere, turn_id = await _reserved(world, "elsewhere")
    await world.raw_turn_metadata(turn_id, {"prompt_dispatch_pending": True})

    [decision] = await world.store.reconcile_reservations(scope=SessionScope.only([adopted.id]))

    assert decision.session_id == adopted.id and not decision.kept
    reservation = await world.store.find_live_reservation(elsewhere.id)
    assert reservation is not None and reservation.id == turn_id
    with pytest.raises(CorruptReservationError):
        await world.store.reconcile_reservations()
