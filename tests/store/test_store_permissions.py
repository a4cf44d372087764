"""Store contract for permission requests and agent failures, on SQLite and PostgreSQL: the
pending write moves the session, exactly one decision applies (raced on two connections), the
end-of-call and startup settlements, and the failure row with Session.error in one commit."""

from __future__ import annotations

import asyncio

from clarion.domain.models import AuthorType, MessageType, Session, SessionState
from clarion.domain.permissions import (
    PermissionOption,
    PermissionStatus,
    ToolCallInfo,
    request_metadata,
)
from clarion.ports import NewMessage
from clarion.runtime.clock import ManualClock
from tests.whole_store import open_whole_store

from .conftest import World

OPTIONS = (
    PermissionOption("allow", "Allow", "allow_once"),
    PermissionOption("reject", "Reject", "reject_once"),
)
ROUNDS = 6


def _request(session: Session, turn_id: str | None = None, call: str = "c1") -> NewMessage:
    return NewMessage(
        session_id=session.id,
        author_type=AuthorType.AGENT,
        type=MessageType.PERMISSION_REQUEST,
        content="Edit README.md",
        metadata=request_metadata(ToolCallInfo(call, "Edit README.md", "edit"), OPTIONS),
        turn_id=turn_id,
    )


async def test_a_pending_request_moves_the_session_in_the_same_write(world: World) -> None:
    session = await world.session()
    turn = await world.turn(session)

    written = await world.store.add_permission_request(
        _request(session), session_state=SessionState.WAITING_FOR_INPUT
    )

    [row] = written.rows
    assert row.turn_id == turn.id and row.metadata["status"] == "pending"
    assert written.session is not None and written.session.state is SessionState.WAITING_FOR_INPUT
    actions = await world.store.pending_actions([session.id])
    assert actions[session.id] == "permission"


async def test_exactly_one_of_two_concurrent_decisions_applies(
    world: World, store_url: str, clock: ManualClock
) -> None:
    session = await world.session()
    await world.turn(session)
    async with open_whole_store(store_url, clock) as a, open_whole_store(store_url, clock) as b:
        for round_no in range(ROUNDS):
            written = await world.store.add_permission_request(
                _request(session, call=f"c{round_no}"),
                session_state=SessionState.WAITING_FOR_INPUT,
            )
            message_id = written.rows[0].id
            first, second = await asyncio.gather(
                a.decide_permission(
                    message_id,
                    status=PermissionStatus.APPROVED,
                    decision={"option_id": "allow", "decided_by": "user"},
                    session_state=SessionState.RUNNING,
                ),
                b.decide_permission(
                    message_id,
                    status=PermissionStatus.REJECTED,
                    decision={"option_id": "reject", "decided_by": "user"},
                    session_state=SessionState.RUNNING,
                ),
            )
            applied = [r for r in (first, second) if r[0]]
            assert len(applied) == 1, round_no
            winner = applied[0][1].metadata["decision"]["option_id"]
            loser = first if applied[0] is second else second
            assert loser[1].metadata["decision"]["option_id"] == winner  # it reads the winner
            stored = await world.store.get_message(message_id)
            assert stored.metadata["decision"]["option_id"] == winner
            assert (await world.store.get_session(session.id)).state is SessionState.RUNNING


async def test_a_decision_on_a_request_whose_turn_is_no_longer_current_does_not_apply(
    world: World,
) -> None:
    session = await world.session()
    old = await world.turn(session)
    written = await world.store.add_permission_request(_request(session, old.id))
    await world.turn(session)

    applied, row, _ = await world.store.decide_permission(
        written.rows[0].id,
        status=PermissionStatus.APPROVED,
        decision={"option_id": "allow", "decided_by": "user"},
    )

    assert not applied and row.metadata["status"] == "pending"


async def test_a_decision_on_an_ended_session_does_not_apply(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    written = await world.store.add_permission_request(_request(session))
    await world.store.transition_session(session.id, SessionState.COMPLETED)

    applied, _, _ = await world.store.decide_permission(
        written.rows[0].id,
        status=PermissionStatus.APPROVED,
        decision={"option_id": "allow", "decided_by": "user"},
    )

    assert not applied


async def test_settling_cancels_only_pending_requests_once(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    pending = (await world.store.add_permission_request(_request(session, call="a"))).rows[0]
    decided = (await world.store.add_permission_request(_request(session, call="b"))).rows[0]
    await world.store.decide_permission(
        decided.id,
        status=PermissionStatus.REJECTED,
        decision={"option_id": "reject", "decided_by": "user"},
    )

    changed = await world.store.settle_permissions(
        session.id, status=PermissionStatus.CANCELLED, reason="turn_ended"
    )

    assert [m.id for m in changed] == [pending.id]
    assert changed[0].metadata["status"] == "cancelled"
    assert changed[0].metadata["reason"] == "turn_ended"
    assert (await world.store.get_message(decided.id)).metadata["status"] == "rejected"
    again = await world.store.settle_permissions(
        session.id, status=PermissionStatus.CANCELLED, reason="turn_ended"
    )
    assert again == ()


async def test_startup_expires_requests_left_pending_in_open_turns(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    left = (await world.store.add_permission_request(_request(session))).rows[0]

    expired = await world.store.expire_stale_permissions(reason="server_restarted")

    assert [m.id for m in expired] == [left.id]
    stored = await world.store.get_message(left.id)
    assert stored.metadata["status"] == "expired"
    assert stored.metadata["reason"] == "server_restarted"
    assert await world.store.expire_stale_permissions(reason="server_restarted") == ()
    assert (await world.store.pending_actions([session.id]))[session.id] is None


async def test_a_failure_row_and_the_session_error_are_one_commit(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    turns_before = len(await world.store.list_visible_turns(session.id))

    row, failed, turn = await world.store.record_agent_failure(
        NewMessage(
            session_id=session.id,
            author_type=AuthorType.SYSTEM,
            type=MessageType.ERROR,
            content="Agent 'x' exited unexpectedly with code 7.\n\nAgent stderr:\noom",
            metadata={"phase": "process", "exit_code": 7},
        ),
        error="Agent 'x' exited unexpectedly with code 7.",
        session_state=SessionState.FAILED,
        turn_metadata={"phase": "process"},
    )

    assert failed.state is SessionState.FAILED
    assert failed.metadata["error"] == "Agent 'x' exited unexpectedly with code 7."
    assert turn is not None and turn.metadata["lifecycle_only"] is True
    assert turn.completed_at is not None and row.turn_id == turn.id
    assert row.type is MessageType.ERROR and row.author_type is AuthorType.SYSTEM
    assert len(await world.store.list_visible_turns(session.id)) == turns_before + 1
    # A lifecycle turn never becomes the current turn.
    current = await world.store.find_current_turn(session.id)
    assert current is not None and current.id != turn.id


async def test_a_prompt_failure_keeps_the_session_state_and_uses_the_prompts_turn(
    world: World,
) -> None:
    session = await world.session()
    prompt = await world.turn(session)
    await world.store.transition_session(session.id, SessionState.IDLE)

    row, after, turn = await world.store.record_agent_failure(
        NewMessage(
            session_id=session.id,
            author_type=AuthorType.SYSTEM,
            type=MessageType.ERROR,
            content="The agent's prompt failed.",
            metadata={"phase": "prompt", "stop_reason": "error"},
            turn_id=prompt.id,
        ),
        error="The agent's prompt failed.",
    )

    assert turn is None and row.turn_id == prompt.id
    assert after.state is SessionState.IDLE and after.metadata["error"]
