"""`session.message.*` events carry the authoritative projection; clients that keep the larger
revision converge on repository state however events and list reads interleave."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from clarion.bus.fanout import Subscription
from clarion.domain import lifecycle
from clarion.domain.models import SessionState
from clarion.runtime import failpoints
from tests.lifecycle.harness import running_lifecycle
from tests.projection.builders import ClientModel, GatedStore, World, projections
from tests.whole_store import WholeStore

CEILING_S = 60.0  # a ceiling for waits, never a delay


def _key(wire: dict[str, Any]) -> tuple[int, int]:
    return int(wire["epoch"]), int(wire["sequence"])


async def test_an_event_of_a_clean_session_carries_explicit_null(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await p.publisher.message("added", await world.say(session.id))
    (event,) = p.bus.messages_of(session.id)
    assert event.type == "session.message.added"
    assert "pending_action" in event.payload and event.payload["pending_action"] is None
    assert event.payload["pending_action_revision"]["epoch"] == str(p.projector.epoch)


async def test_an_event_carries_no_pending_action_when_the_projection_fails(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    rows = await world.ask(session.id)
    failpoints.configure("projection.read=error")
    await p.publisher.messages("added", rows)
    events = p.bus.messages_of(session.id)
    assert len(events) == len(rows)
    for event in events:
        assert "pending_action" not in event.payload
        assert "pending_action_revision" not in event.payload
    # The fact is still published, and the client keeps its last known value.
    client = ClientModel(pending={session.id: None})
    assert not client.apply(session.id, events[0].payload)
    assert client.pending[session.id] is None


async def test_a_content_only_update_carries_no_pending_action(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await world.ask(session.id)
    await p.publisher.message("updated", await world.say(session.id), content_only=True)
    (event,) = p.bus.messages_of(session.id)
    assert "pending_action" not in event.payload
    assert "pending_action_revision" not in event.payload
    assert not p.bus.of("task.status_summary.updated"), "content-only updates touch no summary"


async def test_a_deleted_question_event_carries_the_projection_after_deletion(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    (row,) = await world.ask(session.id)
    deleted = await store.delete_message(session.id, row.id)
    assert deleted is not None
    await p.publisher.message("deleted", deleted)
    (event,) = p.bus.messages_of(session.id)
    assert event.type == "session.message.deleted"
    assert event.payload["pending_action"] is None


async def test_a_message_event_refreshes_the_task_summary(store: WholeStore, world: World) -> None:
    p = await projections(store)
    session = await world.session()
    rows = await world.ask(session.id)
    await p.publisher.messages("added", rows)
    summary = await store.find_summary(session.task_id)
    assert summary is not None and summary.data["pending_action"] == "clarification"
    (published,) = p.bus.of("task.status_summary.updated")
    assert published.payload["status_summary"]["pending_action"] == "clarification"


async def test_a_cached_clean_projection_is_advanced_by_the_new_questions_own_event(
    tmp_path: Any,
) -> None:
    async with running_lifecycle(f"sqlite:///{tmp_path / 'advance.db'}") as life:
        task_id, session_id = await life.start_session()
        (snapshot,) = await life.app.services.reads.sessions(task_id)
        assert snapshot["pending_action"] is None
        client = ClientModel()
        client.apply_list([snapshot])

        subscription = life.app.bus.subscribe()
        assert isinstance(subscription, Subscription)  # the port types it as an iterator only
        call, pending_id = await life.ask(session_id)
        try:
            async with asyncio.timeout(CEILING_S):
                async for published in subscription:
                    payload = published.payload
                    if (
                        published.type == "session.message.added"
                        and payload["type"] == "clarification_request"
                        and payload["metadata"]["pending_id"] == pending_id
                    ):
                        break
        finally:
            subscription.close()
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
        event = dict(payload)
        assert event["pending_action"] == "clarification"
        assert _key(event["pending_action_revision"]) > _key(snapshot["pending_action_revision"])
        assert client.apply(session_id, event)
        assert client.pending[session_id] == "clarification"


async def test_a_list_in_flight_older_than_a_question_event_never_wins(
    store: WholeStore, world: World
) -> None:
    """The list read the clean state and is still in flight when the question's event (newer)
    is delivered. In both delivery orders the client ends on `clarification`."""
    gated = GatedStore(store)
    p = await projections(gated)
    session = await world.session()
    gated.hold_after()
    listing = asyncio.create_task(p.reads.sessions(session.task_id))
    await asyncio.wait_for(gated.holding.wait(), 5)
    await p.publisher.messages("added", await world.ask(session.id))
    event = p.bus.messages_of(session.id)[-1].payload
    gated.release()
    (row,) = await listing
    assert row["pending_action"] is None and event["pending_action"] == "clarification"

    for deliveries in ([event], [row]), ([row], [event]):
        client = ClientModel()
        for batch in deliveries:
            client.apply_list([{**r, "id": session.id} for r in batch])
        assert client.pending[session.id] == "clarification"


async def test_a_question_event_in_flight_older_than_a_list_never_wins(
    store: WholeStore, world: World
) -> None:
    """The question's event read `clarification` and is still in flight when the question is
    answered and a list read (newer) returns clean. In both orders the client ends clean."""
    gated = GatedStore(store)
    p = await projections(gated)
    session = await world.session()
    rows = await world.ask(session.id)
    gated.hold_after()
    publishing = asyncio.create_task(p.publisher.message("added", rows[-1]))
    await asyncio.wait_for(gated.holding.wait(), 5)
    await world.answer(rows)
    (row,) = await p.reads.sessions(session.task_id)
    gated.release()
    await publishing
    event = p.bus.messages_of(session.id)[-1].payload
    assert event["pending_action"] == "clarification" and row["pending_action"] is None

    for first, second in ((event, row), (row, event)):
        client = ClientModel()
        client.apply(session.id, first)
        client.apply(session.id, second)
        assert client.pending[session.id] is None


async def _race(
    store: WholeStore,
    held: Any,
    other: Any,
) -> tuple[ClientModel, ClientModel, Any]:
    """Runs `held` (its projection read held after reading) and then `other` to completion,
    then lets `held` finish. Returns clients fed in publication order and in the reverse."""
    gated = GatedStore(store)
    p = await projections(gated)
    gated.hold_after()
    first = asyncio.create_task(held(p))
    await asyncio.wait_for(gated.holding.wait(), 5)
    await other(p)
    gated.release()
    await first
    events = [e for e in p.bus.published if e.type.startswith("session.message.")]
    forward, backward = ClientModel(), ClientModel()
    for event in events:
        forward.apply(str(event.session_id), event.payload)
    for event in reversed(events):
        backward.apply(str(event.session_id), event.payload)
    return forward, backward, p


async def test_a_terminal_event_and_a_new_question_close_together_converge_on_pending(
    store: WholeStore, world: World
) -> None:
    """Request one answers bundle A (its event read clean, then stalls); request two asks bundle
    B and publishes at once. The stale clean event arrives last and is rejected."""
    session = await world.session()
    first = await world.ask(session.id)
    answered = await world.answer(first)

    async def terminal(p: Any) -> None:
        await p.publisher.messages("updated", answered)

    async def question(p: Any) -> None:
        await p.publisher.messages("added", await world.ask(session.id))

    forward, backward, p = await _race(store, terminal, question)
    truth = (await p.projector.project_one(session.id)).pending_action
    assert str(truth) == "clarification"
    assert forward.pending[session.id] == backward.pending[session.id] == "clarification"
    summary = await store.find_summary(session.task_id)
    assert summary is not None and summary.data.get("pending_action") == "clarification"


async def test_a_new_question_and_a_terminal_session_close_together_converge_on_clean(
    store: WholeStore, world: World
) -> None:
    """Request one asks (its event read `clarification`, then stalls); request two ends the
    session, expiring the bundle, and publishes at once. The stale pending event is rejected."""
    session = await world.session()
    rows = await world.ask(session.id)

    async def question(p: Any) -> None:
        await p.publisher.messages("added", rows)

    async def terminal(p: Any) -> None:
        assert await store.transition_session(session.id, SessionState.COMPLETED)
        await p.publisher.messages(
            "updated", await store.transition_session_bundles(session.id, lifecycle.EXPIRE)
        )

    forward, backward, p = await _race(store, question, terminal)
    assert (await p.projector.project_one(session.id)).pending_action is None
    assert forward.pending[session.id] is None
    assert backward.pending[session.id] is None
    summary = await store.find_summary(session.task_id)
    assert summary is None or "pending_action" not in summary.data


class _CountingStore:
    """Wraps a Store and counts its projection and summary reads."""

    def __init__(self, inner: WholeStore) -> None:
        self._inner = inner
        self.reads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name in ("pending_actions", "summary_inputs"):
            self.reads.append(name)
        return getattr(self._inner, name)


async def test_a_message_event_projects_and_refreshes_the_summary_from_one_read(
    store: WholeStore, world: World
) -> None:
    counting = _CountingStore(store)
    p = await projections(counting)
    session = await world.session()
    rows = await world.ask(session.id)
    await p.publisher.messages("added", rows)
    assert counting.reads == ["summary_inputs"]
    (event, *_) = p.bus.messages_of(session.id)
    assert event.payload["pending_action"] == "clarification"
    summary = await store.find_summary(session.task_id)
    assert summary is not None and summary.data["pending_action"] == "clarification"


async def test_an_events_read_is_not_reused_once_another_refresh_finished_after_it(
    store: WholeStore, world: World
) -> None:
    """The event read `clarification` and stalls; the question is answered and a refresh of
    the task (which finds the summary already clean: nothing to write) finishes meanwhile. The
    stalled event's refresh must read again, not write its older `clarification`."""
    gated = GatedStore(store)
    p = await projections(gated)
    session = await world.session()
    rows = await world.ask(session.id)
    gated.hold_after()
    publishing = asyncio.create_task(p.publisher.messages("added", rows))
    await asyncio.wait_for(gated.holding.wait(), 5)
    await world.answer(rows)
    await p.summaries.refresh(session.task_id)
    gated.release()
    await publishing
    summary = await store.find_summary(session.task_id)
    assert summary is None or "pending_action" not in summary.data
