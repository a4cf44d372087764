"""The detached respond path: one successor turn, dispatched at most once, success only after
the agent accepted it and the successor was published; rollback before that."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from clarion.domain.errors import AcceptedButUnfinalized, Conflict, NotActive, RetryableFailure
from clarion.domain.models import DISPATCH_KEYS, MetaKey
from clarion.ports import PromptFinished
from clarion.runtime import failpoints
from tests.lifecycle.harness import (
    SKIP,
    Lifecycle,
    answer_db,
    detached_question,
    lifecycle_with_failing_store,
    running_lifecycle,
)

RESUME = "You previously asked the user:"


def resume_prompts(life: Lifecycle) -> list[str]:
    return [text for _, text, _ in life.runtime.prompts if text.startswith(RESUME)]


async def test_detached_answer_resumes_once_after_acceptance_and_publication(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)

    result = await life.app.services.resolver.respond(pending_id, answer_db("mongodb"))

    assert result.resumed is True
    prompts = resume_prompts(life)
    assert len(prompts) == 1 and "MongoDB" in prompts[0]
    successor = await life.store.get_turn(result.successor_turn_id or "")
    assert not set(DISPATCH_KEYS) & set(successor.metadata), "recovery keys cleared"
    assert (await life.store.find_current_turn(session_id)).id == successor.id  # type: ignore[union-attr]
    await life.settle()
    started = [e for e in life.events_of("session.turn.started") if e.payload["id"] == successor.id]
    assert len(started) == 1
    assert not set(DISPATCH_KEYS) & set(started[0].payload["metadata"])
    rows = (await life.bundle(pending_id)).rows
    assert all(MetaKey.RESPONSE_DELIVERY_PENDING not in r.metadata for r in rows)
    assert await life.state(pending_id) == "terminal"


async def test_detached_rejection_is_persisted_without_resume(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)
    prompts_before = len(life.runtime.prompts)

    result = await life.app.services.resolver.respond(pending_id, SKIP)

    assert result.resumed is False and result.successor_turn_id is None
    assert len(life.runtime.prompts) == prompts_before
    assert [r.metadata["status"] for r in (await life.bundle(pending_id)).rows] == ["rejected"]
    assert await life.state(pending_id) == "terminal"


async def test_refused_dispatch_rolls_back_and_is_retryable(life: Lifecycle) -> None:
    task_id, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)
    turns_before = await life.store.list_visible_turns(session_id)
    life.runtime.refuse_prompts = True

    with pytest.raises(RetryableFailure) as raised:
        await life.app.services.resolver.respond(pending_id, answer_db())

    assert raised.value.code == "resume_not_accepted"
    assert await life.state(pending_id) == "active_detached"
    assert await life.store.list_visible_turns(session_id) == turns_before
    assert await life.live_reservation(session_id) is None
    summary = await life.store.find_summary(task_id)
    assert summary is not None and summary.data.get("pending_action") == "clarification"
    life.runtime.refuse_prompts = False
    assert (await life.app.services.resolver.respond(pending_id, answer_db())).resumed


@pytest.mark.parametrize("method", ["reserve_successor", "mark_attempted"])
async def test_persistence_failure_before_dispatch_rolls_back(store_url: str, method: str) -> None:
    async with lifecycle_with_failing_store(store_url) as (life, failing):
        _, session_id = await life.start_session()
        pending_id = await detached_question(life, session_id)
        prompts_before = len(life.runtime.prompts)
        failing.fail[method] = RuntimeError("disk on fire")

        with pytest.raises(RetryableFailure):
            await life.app.services.resolver.respond(pending_id, answer_db())

        failing.fail.clear()
        assert len(life.runtime.prompts) == prompts_before, "no external call was made"
        assert await life.state(pending_id) == "active_detached"
        assert await life.live_reservation(session_id) is None


class _OnLog(logging.Handler):
    """Runs `then` when a record with `message` is logged."""

    def __init__(self, message: str, then: Callable[[], None]) -> None:
        super().__init__()
        self._message, self._then = message, then

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == self._message:
            self._then()


async def test_a_reservation_that_commits_after_its_deadline_is_withdrawn(store_url: str) -> None:
    # Store transactions finish despite a caller that gave up; a reservation that commits after
    # its deadline must not stay live, or every later resume of the session is refused.
    async with lifecycle_with_failing_store(store_url, persist=5.0) as (life, failing):
        _, session_id = await life.start_session()
        pending_id = await detached_question(life, session_id)
        gave_up = asyncio.Event()
        handler = _OnLog("successor reservation failed", gave_up.set)
        logger = logging.getLogger("clarion.orchestrator.resume")
        logger.addHandler(handler)
        failing.before["reserve_successor"] = gave_up.wait  # commits only once refused
        try:
            with pytest.raises(RetryableFailure):
                await life.app.services.resolver.respond(pending_id, answer_db())
        finally:
            logger.removeHandler(handler)
            failing.before.clear()

        assert await life.live_reservation(session_id) is None
        assert await life.state(pending_id) == "active_detached"
        assert resume_prompts(life) == []
        assert (await life.app.services.resolver.respond(pending_id, answer_db())).resumed
        assert len(resume_prompts(life)) == 1


async def test_failed_rollback_blocks_admission_until_restart(store_url: str) -> None:
    async with lifecycle_with_failing_store(store_url) as (life, failing):
        _, session_id = await life.start_session()
        pending_id = await detached_question(life, session_id)
        life.runtime.refuse_prompts = True
        failing.fail["rollback_successor"] = RuntimeError("lock timeout")

        with pytest.raises(AcceptedButUnfinalized):
            await life.app.services.resolver.respond(pending_id, answer_db())

        failing.fail.clear()
        life.runtime.refuse_prompts = False
        assert await life.live_reservation(session_id) is not None
        with pytest.raises(Conflict):
            await life.app.services.admission.submit(session_id, "newer work")

    async with running_lifecycle(store_url) as restarted:
        # Startup recovery reconciles the attempted reservation: kept, the answer terminal.
        assert await restarted.live_reservation(session_id) is None
        assert await restarted.state(pending_id) == "terminal"


async def test_publication_failure_after_acceptance_stays_terminal(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)
    failpoints.configure("resume.publish=error")

    with pytest.raises(AcceptedButUnfinalized):
        await life.app.services.resolver.respond(pending_id, answer_db())

    failpoints.configure("")
    with pytest.raises(NotActive):
        await life.app.services.resolver.respond(pending_id, answer_db())
    assert len(resume_prompts(life)) == 1, "the accepted answer is never dispatched again"
    assert all(r.metadata["status"] == "answered" for r in (await life.bundle(pending_id)).rows)


async def test_cancelled_request_does_not_interrupt_the_resume_sequence(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)
    life.runtime.accept_delay = 0.3
    request = asyncio.create_task(life.app.services.resolver.respond(pending_id, answer_db()))
    await asyncio.sleep(0.1)

    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request

    await life.runtime.wait_for_prompts(2)
    for _ in range(100):
        if await life.live_reservation(session_id) is None:
            break
        await asyncio.sleep(0.02)
    assert await life.live_reservation(session_id) is None
    assert len(resume_prompts(life)) == 1
    assert await life.state(pending_id) == "terminal"


async def test_late_ready_event_waits_for_the_reservation_and_never_completes_the_successor(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    first_generation = life.runtime.active[session_id]
    pending_id = await detached_question(life, session_id)
    life.runtime.accept_delay = 0.6  # inside the 1 s acceptance window
    respond = asyncio.create_task(life.app.services.resolver.respond(pending_id, answer_db()))
    while await life.live_reservation(session_id) is None:
        assert not respond.done(), "the reservation never became live"
        await asyncio.sleep(0.005)

    # A duplicate, delayed completion of the predecessor's prompt arrives mid-reservation.
    late = asyncio.create_task(
        life.runtime.sink.on_prompt_finished(
            PromptFinished(session_id, first_generation, "end_turn")
        )
    )
    await asyncio.sleep(0.05)
    assert not late.done(), "the ready event waits for the reservation's outcome"

    result = await respond
    await late
    successor = await life.store.get_turn(result.successor_turn_id or "")
    assert successor.completed_at is None, "the successor is not completed by a stale event"
    session = await life.store.get_session(session_id)
    assert str(session.state) == "RUNNING"


async def test_agent_started_by_the_resume_is_ready_before_the_attempt_marker(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)
    await life.runtime.stop(session_id)  # as after a restart: the answer must start the agent
    markers_at_start: list[object] = []

    async def record(launch: object) -> None:
        reservation = await life.live_reservation(session_id)
        assert reservation is not None, "the successor is reserved before the agent starts"
        markers_at_start.append(reservation.metadata.get(MetaKey.PROMPT_DISPATCH_ATTEMPTED))

    life.runtime.on_start = record

    result = await life.app.services.resolver.respond(pending_id, answer_db())

    assert result.resumed
    assert markers_at_start == [None], "no attempt marker while the agent was starting"
    assert len(resume_prompts(life)) == 1


async def test_agent_that_cannot_start_rolls_the_resume_back_and_is_retryable(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)
    turns_before = await life.store.list_visible_turns(session_id)
    await life.runtime.stop(session_id)
    life.runtime.fail_starts = True

    with pytest.raises(RetryableFailure) as raised:
        await life.app.services.resolver.respond(pending_id, answer_db())

    assert raised.value.code == "resume_not_accepted"
    assert await life.state(pending_id) == "active_detached"
    assert await life.live_reservation(session_id) is None
    assert [t.id for t in await life.store.list_visible_turns(session_id)] == [
        t.id for t in turns_before
    ]
    assert resume_prompts(life) == []
    life.runtime.fail_starts = False
    assert (await life.app.services.resolver.respond(pending_id, answer_db())).resumed
    assert len(resume_prompts(life)) == 1


async def test_restarted_agent_that_cannot_load_its_session_gets_a_recap_first(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session(prompt="Build the payments service")
    await life.runtime.end_turn(session_id)
    await life.runtime.stop(session_id)
    life.runtime.loads_sessions = False

    await life.app.services.admission.submit(session_id, "Continue")

    _, text, _ = life.runtime.prompts[-1]
    assert text.startswith("[Clarion] Your process was restarted")
    assert "User: Build the payments service" in text
    assert text.endswith("\n\nContinue")
    launch = life.runtime.launches[-1]
    assert launch.acp_session_id == f"acp-{session_id}", "the next start asks to load it"
