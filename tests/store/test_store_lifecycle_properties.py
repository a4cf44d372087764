"""The store applies exactly what the transition table (domain/lifecycle.py) allows: bundles
built in every state through the store's own calls, in a live or an ended session, each given
every transition the store applies to one bundle or a session's. A transition changes rows
exactly when the table lets it leave the state the rows record (and their delivery record and
session are what it asks), writes its `change` on them, and leaves the bundle in one of its
`targets`; otherwise nothing changes. Runs on SQLite and PostgreSQL.

The state the rows record is `bundle_state` with the session read as live and the waiter as
the rows record it (`agent_disconnected`): what the derived guards read. CLAIM_BY_POLICY and
DISPATCH_UNKNOWN are left out: the first has CLAIM's guard and needs a deadline row, the second
is applied only by startup's reconciliation (its guard is DELIVER's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clarion.domain import lifecycle
from clarion.domain.bundles import bundle_state
from clarion.domain.flags import flag
from clarion.domain.lifecycle import Transition
from clarion.domain.models import (
    Answer,
    Bundle,
    BundleState,
    ClarificationResponse,
    MetaKey,
    SessionState,
)

from .conftest import World

Setup = Callable[[World, str, str], Awaitable[None]]


async def _live(world: World, session_id: str, pid: str) -> None:
    pass


async def _detached(world: World, session_id: str, pid: str) -> None:
    await world.store.transition_session_bundles(session_id, lifecycle.DETACH, pending_id=pid)


async def _claimed(world: World, session_id: str, pid: str) -> None:
    bundle = await _bundle(world, pid)
    await world.answer(pid, *(str(r.metadata[MetaKey.QUESTION_ID]) for r in bundle.rows))


async def _claimed_detached(world: World, session_id: str, pid: str) -> None:
    await _detached(world, session_id, pid)
    await _claimed(world, session_id, pid)


async def _settled(world: World, pid: str, transition: Transition) -> None:
    ids = [r.id for r in (await _bundle(world, pid)).rows]
    assert await world.store.transition_bundle(pid, transition, message_ids=ids)


async def _delivered(world: World, session_id: str, pid: str) -> None:
    await _claimed(world, session_id, pid)
    await _settled(world, pid, lifecycle.DELIVER)


async def _retired(world: World, session_id: str, pid: str) -> None:
    await _claimed(world, session_id, pid)
    await _settled(world, pid, lifecycle.RETIRE_INTENT)


async def _ambiguous(world: World, session_id: str, pid: str) -> None:
    await _delivered(world, session_id, pid)
    assert await world.store.transition_bundle(pid, lifecycle.MARK_UNREAD)


async def _resending(world: World, session_id: str, pid: str) -> None:
    await _ambiguous(world, session_id, pid)
    assert await world.store.transition_bundle(pid, lifecycle.CLAIM_RESEND)


async def _resent(world: World, session_id: str, pid: str) -> None:
    await _resending(world, session_id, pid)
    values = lifecycle.resent_by("turn-resent")
    assert await world.store.transition_bundle(pid, lifecycle.FINISH_RESEND, values=values)


async def _cancelled(world: World, session_id: str, pid: str) -> None:
    assert await world.store.transition_bundle(pid, lifecycle.CANCEL)


async def _superseded(world: World, session_id: str, pid: str) -> None:
    session = await world.store.get_session(session_id)
    await world.turn(session)  # a newer turn is current


# Every state a bundle's rows may record, reached by the store's own calls.
SETUPS: Mapping[str, Setup] = {
    "live": _live,
    "detached": _detached,
    "claimed": _claimed,
    "claimed after a detach": _claimed_detached,
    "delivered": _delivered,
    "retired": _retired,
    "ambiguous": _ambiguous,
    "resend in flight": _resending,
    "resent": _resent,
    "cancelled": _cancelled,
    "superseded": _superseded,
}
APPLIED = [
    t
    for t in lifecycle.TRANSITIONS
    if t.writes
    and None not in t.sources
    and t not in {lifecycle.CLAIM_BY_POLICY}
    and t is not lifecycle.DISPATCH_UNKNOWN
]


async def _bundle(world: World, pid: str) -> Bundle:
    bundle = await world.store.find_bundle(pid)
    assert bundle is not None
    return bundle


def recorded_state(bundle: Bundle) -> BundleState:
    """The state the rows record: the session read as live, the waiter as the rows say."""
    live = dataclasses.replace(bundle.session, state=SessionState.RUNNING)
    detached = any(flag(r.metadata, MetaKey.AGENT_DISCONNECTED) for r in bundle.rows)
    return bundle_state(dataclasses.replace(bundle, session=live), has_live_waiter=not detached)


def _table_allows(transition: Transition, bundle: Bundle) -> bool:
    return (
        transition.allowed_from(recorded_state(bundle))
        and all(transition.records_allow(r.metadata) for r in bundle.rows)
        and not (transition.live_session and bundle.session.state.is_terminal)
    )


def _values(transition: Transition) -> dict[str, Any] | None:
    return lifecycle.resent_by("turn-next") if transition is lifecycle.FINISH_RESEND else None


def _response(bundle: Bundle) -> ClarificationResponse:
    answers = tuple(Answer(str(r.metadata[MetaKey.QUESTION_ID]), ("opt",), "") for r in bundle.rows)
    return ClarificationResponse(pending_id=bundle.pending_id, answers=answers, rejected=False)


async def _apply(world: World, bundle: Bundle, transition: Transition) -> int:
    """`transition` through the store call that applies it: how many rows it says changed."""
    store, pid, session_id = world.store, bundle.pending_id, bundle.session.id
    world.clock.advance(1.0)  # a stamped change is visible even when it sets what was set
    if transition is lifecycle.CLAIM:
        claim = await store.claim_response(_response(bundle), transition, now=world.clock.now())
        return len(claim.claimed)
    if transition in {lifecycle.DETACH, lifecycle.EXPIRE}:
        one = pid if transition is lifecycle.DETACH else None
        return len(await store.transition_session_bundles(session_id, transition, pending_id=one))
    if transition.sources == {lifecycle.CLAIMED}:
        ids = [r.id for r in bundle.rows]
        return len(await store.transition_bundle(pid, transition, message_ids=ids))
    return len(await store.transition_bundle(pid, transition, values=_values(transition)))


async def _check(
    world: World, setup: str, transition: Transition, ended: bool, questions: int
) -> None:
    """One bundle built by `setup`, its session ended or not, given `transition`."""
    session = await world.session()
    await world.turn(session)
    [first, *_] = await world.bundle(session, [f"q{i}" for i in range(questions)])
    pid = str(first.metadata[MetaKey.PENDING_ID])
    await SETUPS[setup](world, session.id, pid)
    if ended:
        await world.store.transition_session(session.id, SessionState.COMPLETED)
    before = await _bundle(world, pid)
    state = recorded_state(before)
    allowed = _table_allows(transition, before)

    reported = await _apply(world, before, transition)

    after = await _bundle(world, pid)
    case = (setup, str(state), str(transition), "ended" if ended else "live session")
    if not allowed:
        assert (reported, after.rows) == (0, before.rows), case
        return
    assert reported == len(before.rows), case
    for old, new in zip(before.rows, after.rows, strict=True):
        values = (
            lifecycle.claim_values(old, _response(before))
            if transition is lifecycle.CLAIM
            else _values(transition)
        )
        assert new.metadata == transition.change(old.metadata, values), case
    assert recorded_state(after) in transition.targets, case


PAIRS = [(setup, transition) for setup in sorted(SETUPS) for transition in APPLIED]


# Every (state, transition) pair once per example, each drawing whether its session ended and
# how many questions its bundle has: the pairs are few enough to sweep, the rest is drawn.
@settings(
    max_examples=2,
    deadline=None,
    database=None,  # nothing written into the checkout: a failure prints its own example
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_the_store_applies_exactly_what_the_table_allows(
    world: World, data: st.DataObject
) -> None:
    for setup, transition in PAIRS:
        ended = data.draw(st.booleans(), label=f"{setup}/{transition}: session ended")
        questions = data.draw(st.integers(min_value=1, max_value=2), label="questions")
        await _check(world, setup, transition, ended, questions)
