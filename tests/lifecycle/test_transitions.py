"""Cancel, detach, expiry, supersession and partial terminalization of bundles."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from clarion.domain.errors import NotActive, NotFound
from clarion.domain.models import AuthorType, MessageType, MetaKey
from clarion.ports import NewMessage
from clarion.runtime import failpoints
from tests.lifecycle.harness import ASK_DB, Lifecycle, answer_db, detached_question

THREE = {
    "questions": [
        {
            "id": qid,
            "prompt": f"{qid}?",
            "options": [{"label": "A", "option_id": "a"}, {"label": "B", "option_id": "b"}],
        }
        for qid in ("q1", "q2", "q3")
    ]
}


async def test_cancel_of_a_live_bundle_reaches_the_waiter(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)

    await life.app.services.canceller.cancel(pending_id)

    assert json.loads(await asyncio.wait_for(call, 5))["reject_reason"] == "cancelled"
    assert [r.metadata["status"] for r in (await life.bundle(pending_id)).rows] == ["cancelled"]
    with pytest.raises(NotActive) as raised:
        await life.app.services.resolver.respond(pending_id, answer_db())
    assert raised.value.state == "terminal"


async def test_cancellation_that_wins_after_the_responder_loaded_returns_not_found(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    # The responder has loaded and validated; its claim is about to run.
    failpoints.configure("respond.after_claim=delay_ms:1")
    original = life.store.claim_response

    async def cancel_first(*args: object, **kwargs: object) -> object:
        await life.app.services.canceller.cancel(pending_id)
        return await original(*args, **kwargs)  # type: ignore[arg-type]

    life.app.services.resolver._store = type(
        "S",
        (),
        {
            "__getattr__": lambda _, n: getattr(life.store, n),
            "claim_response": staticmethod(cancel_first),
        },
    )()

    with pytest.raises(NotFound):
        await life.app.services.resolver.respond(pending_id, answer_db())
    await asyncio.wait_for(call, 5)


async def test_delivery_that_won_first_cannot_be_cancelled(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    await life.app.services.resolver.respond(pending_id, answer_db())
    await asyncio.wait_for(call, 5)

    with pytest.raises(NotFound):
        await life.app.services.canceller.cancel(pending_id)
    assert [r.metadata["status"] for r in (await life.bundle(pending_id)).rows] == ["answered"]


async def test_detach_happens_once_and_a_repeat_writes_and_publishes_nothing(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    await detached_question(life, session_id)
    await life.settle()
    events_before = len(life.events_of("session.message.updated"))

    again = await life.app.services.canceller.detach(session_id)

    await life.settle()
    assert again == ()
    assert len(life.events_of("session.message.updated")) == events_before


async def test_agent_dropping_the_call_detaches_the_bundle(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)

    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call

    rows = (await life.bundle(pending_id)).rows
    assert all(r.metadata.get(MetaKey.AGENT_DISCONNECTED) is True for r in rows)
    assert await life.state(pending_id) == "active_detached"


async def test_finishing_the_session_expires_its_bundles(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)

    await life.app.services.sessions.finish(session_id, "completed")

    assert [r.metadata["status"] for r in (await life.bundle(pending_id)).rows] == ["expired"]
    with pytest.raises(NotActive) as raised:
        await life.app.services.resolver.respond(pending_id, answer_db())
    assert raised.value.state == "terminal"
    assert len(life.runtime.prompts) == 1
    call.cancel()


async def test_newer_turn_supersedes_an_older_question_without_rewriting_it(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)

    await life.app.services.admission.submit(session_id, "newer work")

    assert await life.state(pending_id) == "superseded_history"
    rows = (await life.bundle(pending_id)).rows
    assert [r.metadata["status"] for r in rows] == ["pending"], "history is not rewritten"
    with pytest.raises(NotActive) as raised:
        await life.app.services.resolver.respond(pending_id, answer_db())
    assert raised.value.state == "superseded_history"
    assert len(life.runtime.prompts) == 2, "no resume for a stale answer"


async def test_partial_terminalization_claims_pending_siblings_only(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id, THREE)
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    await life.runtime.end_turn(session_id)
    rows = (await life.bundle(pending_id)).rows
    # Historical data: one sibling already terminal while the others stayed pending.
    first = rows[0]
    await life.store.delete_message(session_id, first.id)
    answered = await life.store.add_message(
        NewMessage(
            session_id=session_id,
            author_type=AuthorType.AGENT,
            type=MessageType.CLARIFICATION_REQUEST,
            content=first.content,
            turn_id=first.turn_id,
            metadata={
                **first.metadata,
                "status": "answered",
                "response": {"question_id": "q1", "selected_options": ["a"], "custom_text": ""},
            },
        )
    )

    result = await life.app.services.resolver.respond(
        pending_id,
        {
            "answers": [
                {"question_id": q, "selected_options": ["b"], "custom_text": ""}
                for q in ("q1", "q2", "q3")
            ],
            "rejected": False,
            "reject_reason": "",
        },
    )

    assert result.resumed is True
    after = {r.id: r for r in (await life.bundle(pending_id)).rows}
    assert after[answered.id].metadata["response"]["selected_options"] == ["a"], "untouched"
    assert [after[r.id].metadata["status"] for r in rows[1:]] == ["answered", "answered"]


async def test_row_without_a_durable_turn_stays_inert_and_drains_its_waiter(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id, ASK_DB)
    row = (await life.bundle(pending_id)).rows[0]
    # Malformed pre-turn history: the row has no durable turn at all.
    from sqlalchemy import update

    from clarion.store.db.schema import task_session_messages

    async with life.app.stores.probes.engine.begin() as conn:
        await conn.execute(
            update(task_session_messages)
            .where(task_session_messages.c.id == row.id)
            .values(turn_id=None)
        )

    with pytest.raises(NotActive):
        await life.app.services.resolver.respond(pending_id, answer_db())

    assert (await life.app.services.reads.bundle(pending_id))["state"] != "active_live"
    assert json.loads(await asyncio.wait_for(call, 5))["rejected"] is True
