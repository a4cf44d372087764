"""Startup reconciliation: ordered, fail-closed, and harmless to run twice."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from sqlalchemy import update

from clarion.domain.models import AuthorType, MessageType, MetaKey, Question, SessionState
from clarion.domain.questions import bundle_row_metadata, parse_ask
from clarion.domain.scope import SessionScope
from clarion.ports import NewMessage
from clarion.store.db.schema import task_session_turns
from tests.lifecycle.harness import ASK_DB, answer_db, detached_question, running_lifecycle


def _bundle_parts(pending_id: str) -> tuple[tuple[Question, ...], list[dict[str, object]]]:
    questions, context = parse_ask(ASK_DB)
    return questions, bundle_row_metadata(pending_id, questions, context)


def _rows_left_by_a_crash(session_id: str, pending_id: str) -> list[NewMessage]:
    """A question's rows as a crash leaves them: written in the open turn, with no waiter."""
    return [
        NewMessage(
            session_id=session_id,
            author_type=AuthorType.AGENT,
            type=MessageType.CLARIFICATION_REQUEST,
            content=q.prompt,
            metadata=m,
        )
        for q, m in zip(*_bundle_parts(pending_id), strict=True)
    ]


async def test_recovery_is_harmless_to_run_twice(store_url: str) -> None:
    async with running_lifecycle(store_url) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call

    async with running_lifecycle(store_url) as life:
        second = await life.app.recovery.run()
        assert second.reservations_kept == second.reservations_rolled_back == 0
        assert second.intents_restored == second.intents_retired == 0
        assert second.bundles_detached == second.turns_interrupted == 0
        assert await life.state(pending_id) == "active_detached"


async def test_restart_detaches_bundles_and_interrupts_open_turns(store_url: str) -> None:
    async with running_lifecycle(store_url) as life:
        _, session_id = await life.start_session()
        # What a crash leaves: a question's rows in the running, open turn, and no waiter.
        written = await life.store.create_bundle(
            session_id, _rows_left_by_a_crash(session_id, "p-crash")
        )
        rows = written.rows
        pending_id = rows[0].metadata["pending_id"]
        assert MetaKey.AGENT_DISCONNECTED not in rows[0].metadata

    async with running_lifecycle(store_url) as life:
        assert await life.state(pending_id) == "active_detached"
        turn = await life.store.find_current_turn(session_id)
        assert turn is not None and turn.completed_at is not None
        assert turn.metadata.get(MetaKey.INTERRUPTED) is True
        result = await life.app.services.resolver.respond(pending_id, answer_db())
        assert result.resumed, "a question from before the restart is still answerable"


async def test_a_scoped_recovery_detaches_and_settles_only_the_sessions_in_scope(
    store_url: str,
) -> None:
    async with running_lifecycle(store_url) as life:
        pending: dict[str, str] = {}
        for _ in range(2):
            _, session_id = await life.start_session()
            # What a dead replica leaves: a question in the open turn, and no waiter.
            rows = _rows_left_by_a_crash(session_id, f"p-{len(pending)}")
            # The second stays running: a full recovery would move it to waiting_for_input.
            state = SessionState.RUNNING if pending else SessionState.WAITING_FOR_INPUT
            await life.store.create_bundle(session_id, rows, session_state=state)
            pending[session_id] = f"p-{len(pending)}"
        adopted, running = pending
        turn_before = await life.store.find_current_turn(running)

        report = await life.app.recovery.run(SessionScope.only([adopted]))

        assert (report.bundles_detached, report.turns_interrupted) == (1, 1)
        assert await life.state(pending[adopted]) == "active_detached"
        turn = await life.store.find_current_turn(adopted)
        assert turn is not None and turn.metadata.get(MetaKey.INTERRUPTED) is True
        bundle = await life.bundle(pending[running])
        assert MetaKey.AGENT_DISCONNECTED not in bundle.rows[0].metadata
        assert await life.store.find_current_turn(running) == turn_before
        assert (await life.store.get_session(running)).state is SessionState.RUNNING


async def test_a_recovery_of_no_session_takes_a_new_epoch_and_touches_nothing(
    store_url: str,
) -> None:
    """A cluster replica that adopted nothing at its start: nothing to reconcile, and none of
    the recovery's fault points reached (its own start is not a takeover)."""
    async with running_lifecycle(store_url) as life:
        _, session_id = await life.start_session()
        await life.store.create_bundle(
            session_id,
            _rows_left_by_a_crash(session_id, "p-left"),
            session_state=SessionState.WAITING_FOR_INPUT,
        )
        epoch = life.app.services.projector.epoch

        report = await life.app.recovery.run(SessionScope.only([]))

        assert report.epoch == epoch + 1
        assert (report.bundles_detached, report.turns_interrupted) == (0, 0)
        bundle = await life.bundle("p-left")
        assert MetaKey.AGENT_DISCONNECTED not in bundle.rows[0].metadata


async def test_malformed_reservation_fails_startup_and_changes_nothing(store_url: str) -> None:
    async with running_lifecycle(store_url) as life:
        _, session_id = await life.start_session()
        pending_id = await detached_question(life, session_id)
        bundle = await life.bundle(pending_id)
        life.runtime.refuse_prompts = True
        reservation = await life.store.reserve_successor(
            session_id,
            source_turn_id=bundle.current_turn_id or "",
            pending_id=pending_id,
            message_ids=[bundle.rows[0].id],
        )
        corrupt = {**reservation.metadata, MetaKey.PROMPT_DISPATCH_MESSAGE_IDS: ["", 7]}
        async with life.app.stores.probes.engine.begin() as conn:
            await conn.execute(
                update(task_session_turns)
                .where(task_session_turns.c.id == reservation.id)
                .values(metadata=corrupt)
            )

    with pytest.raises(RuntimeError, match=reservation.id):
        async with running_lifecycle(store_url):
            pass

    async with _raw_store(store_url) as store:
        kept = await store.get_turn(reservation.id)
        assert kept.metadata[MetaKey.PROMPT_DISPATCH_MESSAGE_IDS] == ["", 7]


def _raw_store(url: str):  # type: ignore[no-untyped-def]
    from clarion.runtime.clock import SystemClock
    from tests.whole_store import open_whole_store

    return open_whole_store(url, SystemClock())
