"""Agent permission requests: decided by the profile's policy, or asked of the person.

A request the person must decide is written (pending, in the running turn) and the session
moved to WAITING_FOR_INPUT before anything is shown; the agent's request then waits here. A
decision is claimed durably first (a guarded update that only one decider can win) and only
then handed to the waiting request. A request never outlives the agent call that made it:
turn end, cancel, finish and process exit settle it as `cancelled`, startup as `expired`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from clarion.domain.errors import DecisionNotActive, InvalidInput, NotFound
from clarion.domain.models import AuthorType, Message, MessageType, SessionState
from clarion.domain.permissions import (
    PermissionKey,
    PermissionOption,
    PermissionRules,
    PermissionStatus,
    ToolCallInfo,
    decision_of,
    options_of,
    permission_view,
    pick_option,
    policy_verdict,
    request_metadata,
    status_of,
    status_of_option,
)
from clarion.orchestrator.lanes import Lanes
from clarion.ports import NewMessage, PermissionAsk, PermissionStore
from clarion.projection.events import EventPublisher

log = logging.getLogger(__name__)

# Why a request ended without a person's decision (`metadata.reason`).
TURN_ENDED = "turn_ended"
CANCELLED = "cancelled"
SESSION_FINISHED = "session_finished"
AGENT_EXITED = "agent_exited"
SERVER_RESTARTED = "server_restarted"


class PermissionService:
    def __init__(
        self,
        *,
        store: PermissionStore,
        publisher: EventPublisher,
        lanes: Lanes,
        rules: Mapping[str, PermissionRules],
    ) -> None:
        self._store = store
        self._publisher = publisher
        self._lanes = lanes
        self._rules = dict(rules)
        # (session_id, tool_call_id) -> the agent's waiting request. Keyed by what the agent
        # sent, so it exists before the row does and no decision can find the row without it.
        self._waiting: dict[tuple[str, str], asyncio.Future[str | None]] = {}
        # Sessions this process wrote a pending request for since their last settlement. Only
        # this process writes pending rows (startup expired every older one), so a session
        # not in here has none, and its turn end costs no write.
        self._unsettled: set[str] = set()

    def has_pending(self, session_id: str) -> bool:
        """Whether this process wrote a request for the session that is not settled yet."""
        return session_id in self._unsettled

    # ------------------------------------------------------------------ the agent asks

    async def on_permission(self, ask: PermissionAsk) -> str | None:
        """The option the agent gets, or None (cancelled)."""
        session = await self._store.get_session(ask.session_id)
        lane = self._lanes.find(ask.session_id)
        turn_id = None if lane is None else lane.running_turn_id
        extra = {"session_id": ask.session_id, "tool_call_id": ask.tool_call_id}
        if turn_id is None or session.state.is_terminal:
            log.warning("permission request outside a running turn; cancelled", extra=extra)
            return None
        tool = ToolCallInfo(ask.tool_call_id, ask.title, ask.kind, ask.raw_input)
        options = tuple(PermissionOption(*o) for o in ask.options)
        verdict = policy_verdict(self._rules.get(session.agent, PermissionRules()), tool)
        chosen = None if verdict is None else pick_option(options, verdict)
        if chosen is not None:
            meta = request_metadata(
                tool,
                options,
                status=status_of_option(chosen),
                decision=decision_of(chosen, "policy"),
            )
            message = await self._store.add_message(self._row(ask, turn_id, meta))
            log.info(
                "permission decided by policy",
                extra={**extra, "message_id": message.id, "option_id": chosen.option_id},
            )
            await self._publisher.message("added", message)
            return chosen.option_id
        return await self._ask_person(ask, turn_id, tool, options)

    async def _ask_person(
        self,
        ask: PermissionAsk,
        turn_id: str,
        tool: ToolCallInfo,
        options: tuple[PermissionOption, ...],
    ) -> str | None:
        key = (ask.session_id, ask.tool_call_id)
        waiter: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._waiting[key] = waiter
        self._unsettled.add(ask.session_id)
        try:
            written = await self._store.add_permission_request(
                self._row(ask, turn_id, request_metadata(tool, options)),
                session_state=SessionState.WAITING_FOR_INPUT,
            )
            message = written.rows[0]
            log.info(
                "permission asked",
                extra={
                    "session_id": ask.session_id,
                    "turn_id": turn_id,
                    "message_id": message.id,
                    "kind": tool.kind,
                },
            )
            await self._publisher.message("added", message)
            if written.session is not None:
                await self._publisher.session_state(written.session)
            return await waiter
        finally:
            if self._waiting.get(key) is waiter:
                del self._waiting[key]

    def _row(self, ask: PermissionAsk, turn_id: str, meta: dict[str, Any]) -> NewMessage:
        return NewMessage(
            session_id=ask.session_id,
            author_type=AuthorType.AGENT,
            type=MessageType.PERMISSION_REQUEST,
            content=ask.title,
            metadata=meta,
            turn_id=turn_id,
            requests_input=meta[PermissionKey.STATUS] == PermissionStatus.PENDING.value,
        )

    # ------------------------------------------------------------------ the person decides

    async def view(self, message_id: str) -> dict[str, Any]:
        return permission_view(await self._request(message_id))

    async def _request(self, message_id: str) -> Message:
        message = await self._store.get_message(message_id)
        if message.type is not MessageType.PERMISSION_REQUEST:
            raise NotFound("permission request not found", message_id=message_id)
        return message

    async def respond(self, message_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        message = await self._request(message_id)
        option = _chosen_option(message, body)
        status = PermissionStatus.CANCELLED if option is None else status_of_option(option)
        decision = decision_of(option, "user")
        tool_call_id = str(
            (message.metadata.get(PermissionKey.TOOL_CALL) or {}).get("tool_call_id")
        )
        waiter = self._waiting.get((message.session_id, tool_call_id))
        if waiter is None or waiter.done():
            # No agent call is waiting for it any more: nothing may be written. Read again: a
            # decision or settlement that ended the wait committed before it did.
            raise _not_active(
                await self._request(message_id), "no agent is waiting for this permission request"
            )
        applied, row, written = await self._store.decide_permission(
            message_id,
            status=status,
            decision=decision,
            session_state=SessionState.RUNNING,
        )
        if not applied:
            raise _not_active(row, "permission request is no longer pending")
        delivered = not waiter.done()
        if delivered:
            waiter.set_result(None if option is None else option.option_id)
        log.info(
            "permission decided by the user",
            extra={
                "message_id": message_id,
                "session_id": row.session_id,
                "status": str(status),
                "delivered": delivered,
            },
        )
        await self._publisher.message("updated", row)
        if written is not None and written.session is not None:
            await self._publisher.session_state(written.session)
        return {"success": True, "state": str(status), "decision": decision, "delivered": delivered}

    # ------------------------------------------------------------------ end of the call

    async def settle(self, session_id: str, reason: str) -> tuple[Message, ...]:
        """The agent call that made the session's pending requests is over: they become
        `cancelled` (durably first), and any request still waiting gets cancelled."""
        if session_id not in self._unsettled:
            return ()
        # Cleared first: a request asked while this runs marks the session again.
        self._unsettled.discard(session_id)
        try:
            changed = await self._store.settle_permissions(
                session_id, status=PermissionStatus.CANCELLED, reason=reason
            )
        except BaseException:
            self._unsettled.add(session_id)
            raise
        # Only the calls whose rows this settled: one asked meanwhile keeps waiting.
        for row in changed:
            call = row.metadata.get(PermissionKey.TOOL_CALL) or {}
            waiter = self._waiting.get((session_id, str(call.get("tool_call_id"))))
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        if changed:
            log.info(
                "permission requests cancelled",
                extra={"session_id": session_id, "reason": reason, "rows": len(changed)},
            )
            await self._publisher.messages("updated", changed)
        return changed


def _chosen_option(message: Message, body: Mapping[str, Any]) -> PermissionOption | None:
    """The option the body names, None for `{"cancelled": true}`; InvalidInput otherwise."""
    cancelled = body.get("cancelled", False)
    option_id = body.get("option_id")
    if not isinstance(cancelled, bool):
        raise InvalidInput("cancelled must be a boolean", field="cancelled")
    if cancelled:
        if option_id is not None:
            raise InvalidInput(
                "give either option_id or cancelled, not both",
                field="option_id",
                code="invalid_response",
            )
        return None
    if not isinstance(option_id, str) or not option_id:
        raise InvalidInput("option_id must be a non-empty string", field="option_id")
    for option in options_of(message):
        if option.option_id == option_id:
            return option
    raise InvalidInput(f"unknown option {option_id!r}", field="option_id", code="invalid_response")


def _not_active(message: Message, text: str) -> DecisionNotActive:
    decision = message.metadata.get(PermissionKey.DECISION)
    return DecisionNotActive(
        text,
        state=str(status_of(message)),
        decision=dict(decision) if isinstance(decision, Mapping) else None,
        message_id=message.id,
        session_id=message.session_id,
    )
