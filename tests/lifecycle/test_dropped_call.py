"""A tool call whose connection is gone detaches its bundle once, like a cancelled call."""

from __future__ import annotations

import asyncio

import pytest

from clarion.domain.errors import QuestionDetached
from tests.lifecycle.harness import ASK_DB, Lifecycle


async def test_a_dropped_connection_detaches_the_bundle_once(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    dropped = asyncio.Event()

    async def progress(_: str) -> None:
        return None

    call = asyncio.create_task(life.app.services.asker.ask(session_id, ASK_DB, progress, dropped))
    added = await life.wait_for_event(
        "session.message.added", lambda e: e.payload.get("type") == "clarification_request"
    )
    pending_id = added.payload["metadata"]["pending_id"]
    assert await life.state(pending_id) == "active_live"

    dropped.set()
    with pytest.raises(QuestionDetached):
        await asyncio.wait_for(call, 10)
    assert await life.state(pending_id) == "active_detached"
    assert not life.app.waiters.for_session(session_id)
    bundle = await life.bundle(pending_id)
    assert all(row.metadata.get("status", "pending") == "pending" for row in bundle.rows)
