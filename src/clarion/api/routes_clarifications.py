"""HTTP routes for clarification bundles: view, respond (answer or Skip), resend, cancel."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from clarion.api.auth import caller_of
from clarion.api.bodies import read_json_object
from clarion.api.openapi import body, errors
from clarion.api.route_targets import acts_on
from clarion.api.routes_metrics import recorded_answer
from clarion.api.routes_tasks import services
from clarion.api.schemas import Respond
from clarion.api.services import ApiServices
from clarion.api.waiting_schema import BundleRead, documented
from clarion.clarification.respond_result import RespondResult

router = APIRouter(prefix="/api/v1")


@router.get(
    "/clarification/{pending_id}",
    summary="A clarification bundle and its state",
    responses={**errors(404), **documented(BundleRead, "The bundle")},
)
@acts_on("bundle", "pending_id")
async def get_bundle(pending_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_bundle(caller_of(request), pending_id, escalated=True)
    return await svc.reads.bundle(pending_id)


@router.post(
    "/clarification/{pending_id}/respond",
    summary="Answer or Skip a bundle",
    openapi_extra=body(Respond),
    responses=errors(400, 404, 409),
)
@acts_on("bundle", "pending_id")
async def respond(pending_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    result = await recorded_answer(svc.metrics, _respond(svc, pending_id, request))
    return result.wire()


async def _respond(svc: ApiServices, pending_id: str, request: Request) -> RespondResult:
    # Before anything else: a wrong caller must neither claim nor resume anything.
    await svc.access.require_bundle(caller_of(request), pending_id, escalated=True)
    body = await read_json_object(request)
    return await svc.resolver.respond(pending_id, body)


@router.post(
    "/clarification/{pending_id}/resend",
    summary="Send an answer whose delivery is ambiguous again, as a new turn",
    responses=errors(404, 409, 500),
)
@acts_on("bundle", "pending_id")
async def resend(pending_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_bundle(caller_of(request), pending_id)
    turn_id = await svc.resender.resend(pending_id)
    return {"turn_id": turn_id}


@router.post(
    "/clarification/{pending_id}/cancel",
    summary="Cancel a bundle still owned by a live waiter",
    responses=errors(404, 409),
)
@acts_on("bundle", "pending_id")
async def cancel(pending_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_bundle(caller_of(request), pending_id)
    await svc.canceller.cancel(pending_id)
    return {"success": True}
