"""The WebSocket at /api/v1/ws: notifications from the bus, plus a few request actions.

Envelope: {"id"?, "type": request|response|notification|error, "action", "payload",
"timestamp"}. A client receives every notification it may see; `subscribe` narrows that to
tasks and sessions (kandev's `task.subscribe` / `session.subscribe` are aliases) and
`unsubscribe` widens it again. `session.list` returns a task's sessions with their pending
projections, failing (an error envelope) when the projection cannot be computed, exactly like
the HTTP list. With access control on, a client sees only notifications of tasks in its
workspaces, plus those of the questions a waiting policy escalated to it (api/ws_escalation.py),
and subscribing to (or listing) anything else is an error envelope `not_found`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from clarion.api.auth import caller_of
from clarion.api.bodies import loads
from clarion.api.errors import ws_error_payload
from clarion.api.services import ApiServices
from clarion.api.ws_escalation import escalated_view
from clarion.domain.errors import InvalidInput
from clarion.orchestrator.access import Caller
from clarion.ports import Event

log = logging.getLogger(__name__)
router = APIRouter()

NOTIFICATIONS = frozenset(
    {
        "session.message.added",
        "session.message.updated",
        "session.message.deleted",
        "session.turn.started",
        "session.turn.completed",
        "session.state_changed",
        "task.status_summary.updated",
        "task.created",
        # A question's waiting policy: its deadlines, an escalation, an expiry's answer.
        "clarification.waiting.updated",
    }
)
SUBSCRIBE = {"subscribe", "task.subscribe", "session.subscribe"}
UNSUBSCRIBE = {"unsubscribe", "task.unsubscribe", "session.unsubscribe"}


@dataclass
class Filters:
    task_ids: set[str] = field(default_factory=set)
    session_ids: set[str] = field(default_factory=set)

    def admits(self, event: Event) -> bool:
        if not self.task_ids and not self.session_ids:
            return True
        return event.task_id in self.task_ids or (
            event.session_id is not None and event.session_id in self.session_ids
        )

    def change(self, payload: dict[str, Any], *, add: bool) -> None:
        task_id, session_id = payload.get("task_id"), payload.get("session_id")
        for value, target in ((task_id, self.task_ids), (session_id, self.session_ids)):
            if value is None:
                continue
            if not isinstance(value, str):
                raise InvalidInput("ids must be strings", field="payload")
            (target.add if add else target.discard)(value)


def envelope(type_: str, action: str, payload: Any, id_: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": type_,
        "action": action,
        "payload": payload,
        "timestamp": datetime.now(UTC).isoformat(),
    }
    if id_ is not None:
        body["id"] = id_
    return body


@router.websocket("/api/v1/ws")
async def websocket_endpoint(websocket: WebSocket) -> None:
    svc: ApiServices = websocket.app.state.services
    caller = caller_of(websocket)
    filters = Filters()
    events = svc.bus.subscribe()
    # Accepted only once other replicas' events reach it, so a client that has connected
    # misses nothing published after.
    await events.listening()
    await websocket.accept()
    send_lock = asyncio.Lock()

    async def send(body: dict[str, Any]) -> None:
        async with send_lock:
            await websocket.send_text(json.dumps(body))

    async def pump() -> None:
        async for event in events:
            if event.type not in NOTIFICATIONS or not filters.admits(event):
                continue
            if await svc.access.sees_task(caller, event.task_id):
                payload: dict[str, Any] | None = dict(event.payload)
            else:
                payload = await escalated_view(svc.access, caller, event)
            if payload is not None:
                await send(envelope("notification", event.type, payload))

    pump_task = asyncio.create_task(pump(), name="ws-pump")
    try:
        while True:
            frame = await websocket.receive()
            if frame["type"] == "websocket.disconnect":
                break
            text = frame.get("text")
            if text is None:
                # Envelopes are JSON text; a binary frame is answered, not fatal.
                await send(
                    _error("invalid_frame", "binary frames are not supported; send JSON text")
                )
                continue
            await send(await _handle(svc, caller, filters, text))
    except WebSocketDisconnect:
        pass
    finally:
        pump_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump_task
        with contextlib.suppress(Exception):
            await events.aclose()


async def _require_visible(svc: ApiServices, caller: Caller, payload: dict[str, Any]) -> None:
    task_id, session_id = payload.get("task_id"), payload.get("session_id")
    if isinstance(task_id, str):
        await svc.access.require_task(caller, task_id)
    if isinstance(session_id, str):
        await svc.access.require_session(caller, session_id)


def _error(code: str, message: str) -> dict[str, Any]:
    return envelope("error", "error", ws_error_payload(InvalidInput(message, code=code)))


async def _handle(svc: ApiServices, caller: Caller, filters: Filters, raw: str) -> dict[str, Any]:
    try:
        message = loads(raw, what="message")
    except InvalidInput as exc:
        return envelope("error", "error", ws_error_payload(exc))
    if not isinstance(message, dict):
        return _error("invalid_request", "message must be an object")
    id_ = message.get("id")
    action = message.get("action")
    payload = message.get("payload") or {}
    try:
        if not isinstance(action, str):
            raise InvalidInput("action is required", field="action")
        if not isinstance(payload, dict):
            raise InvalidInput("payload must be an object", field="payload")
        if action in SUBSCRIBE:
            if action == "task.subscribe" and "task_id" not in payload:
                raise InvalidInput("task_id is required", field="payload.task_id")
            await _require_visible(svc, caller, payload)
            filters.change(payload, add=True)
            result: dict[str, Any] = {
                "success": True,
                "task_ids": sorted(filters.task_ids),
                "session_ids": sorted(filters.session_ids),
            }
        elif action in UNSUBSCRIBE:
            if payload:
                filters.change(payload, add=False)
            else:
                filters.task_ids.clear()
                filters.session_ids.clear()
            result = {
                "success": True,
                "task_ids": sorted(filters.task_ids),
                "session_ids": sorted(filters.session_ids),
            }
        elif action == "session.list":
            task_id = payload.get("task_id")
            if not isinstance(task_id, str):
                raise InvalidInput("task_id is required", field="payload.task_id")
            await svc.access.require_task(caller, task_id)
            sessions = await svc.reads.sessions(task_id)
            result = {"sessions": sessions, "total": len(sessions)}
        elif action == "ping":
            result = {"pong": True}
        else:
            raise InvalidInput(f"unknown action {action!r}", field="action")
    except Exception as exc:
        return envelope(
            "error", action if isinstance(action, str) else "error", ws_error_payload(exc), id_
        )
    return envelope("response", action, result, id_)
