"""HTTP routes for agent permission requests: view one, decide it (at most one decision wins)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from clarion.api.auth import caller_of
from clarion.api.bodies import read_json_object
from clarion.api.openapi import body, errors
from clarion.api.route_targets import acts_on
from clarion.api.routes_tasks import services
from clarion.api.schemas import DecidePermission
from clarion.domain.errors import NotFound

router = APIRouter(prefix="/api/v1")


async def _visible(request: Request, message_id: str) -> dict[str, Any]:
    svc = services(request)
    view = await svc.permissions.view(message_id)
    try:
        await svc.access.require_task(caller_of(request), view["task_id"])
    except NotFound:
        raise NotFound("permission request not found", message_id=message_id) from None
    return view


@router.get(
    "/permission/{message_id}",
    summary="A permission request and its state",
    responses=errors(404),
)
@acts_on("message", "message_id")
async def get_permission(message_id: str, request: Request) -> dict[str, Any]:
    view = await _visible(request, message_id)
    reads = services(request).reads
    return reads.with_decision_url(await reads.with_owner(view), message_id)


@router.post(
    "/permission/{message_id}/respond",
    summary="Allow, reject or cancel a request",
    responses=errors(400, 404, 409),
    openapi_extra=body(DecidePermission),
)
@acts_on("message", "message_id")
async def respond(message_id: str, request: Request) -> dict[str, Any]:
    # Before anything else: a wrong caller must not decide anything.
    await _visible(request, message_id)
    body = await read_json_object(request)
    return await services(request).permissions.respond(message_id, body)
