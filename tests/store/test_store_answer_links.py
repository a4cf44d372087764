"""Store contract for answer links, on SQLite and PostgreSQL: the signing key is made once and
kept (a reopened database, and callers racing on a new one, all get the same key), and webhook
deliveries of events whose question is still open carry the bundle's answer link."""

from __future__ import annotations

import asyncio
import json

from clarion.domain import lifecycle
from clarion.domain.notification_events import EVENTS
from clarion.runtime.clock import ManualClock
from clarion.store.outbox import Outbox
from tests.whole_store import WholeStore, open_whole_store

from .conftest import World


async def test_the_answer_link_key_is_made_once_and_survives_a_reopen(
    store_url: str, clock: ManualClock
) -> None:
    async with open_whole_store(store_url, clock) as first:
        key = await first.answer_link_secret()
        assert len(key) >= 32
        assert await first.answer_link_secret() == key
    async with open_whole_store(store_url, clock) as again:
        assert await again.answer_link_secret() == key


async def test_callers_racing_on_a_new_database_all_get_the_same_key(
    store_url: str, clock: ManualClock
) -> None:
    async with open_whole_store(store_url, clock) as one, open_whole_store(store_url, clock) as two:
        keys = await asyncio.gather(
            *(s.answer_link_secret() for s in (one, two, one, two, one, two))
        )
    assert len(set(keys)) == 1


def _listen(store: WholeStore) -> None:
    store.configure_outbox(
        Outbox(
            hooks=(("http://127.0.0.1:9/hook", frozenset(EVENTS)),),
            base_url=lambda: "http://clarion.test",
            answer_url=lambda pending_id: f"http://clarion.test/a/token-of-{pending_id}",
        )
    )


async def test_open_question_events_carry_the_answer_link_and_closed_ones_do_not(
    world: World,
) -> None:
    _listen(world.store)
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session)
    pending_id = str(rows[0].metadata["pending_id"])
    await world.store.transition_session_bundles(session.id, lifecycle.DETACH)
    await world.answer(pending_id, "db")

    bodies = {d.event: json.loads(d.body) for d in await world.store.list_deliveries()}
    link = f"http://clarion.test/a/token-of-{pending_id}"
    for event in ("clarification.requested", "clarification.detached"):
        assert bodies[event]["answer_url"] == link
        assert f"Answer: {link} " in bodies[event]["text"]
        assert bodies[event]["text"].endswith(bodies[event]["link"])
    assert "answer_url" not in bodies["clarification.answered"]
    assert "/a/" not in bodies["clarification.answered"]["text"]
