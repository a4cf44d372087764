"""HTTP routes for task sessions: start, prompt, cancel, finish, turns and transcript."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse

from clarion.api.auth import caller_of
from clarion.api.bodies import parse_body, read_json_object
from clarion.api.openapi import body, errors
from clarion.api.route_targets import acts_on, served_anywhere
from clarion.api.routes_tasks import services
from clarion.api.schemas import Finish, Prompt, StartSession
from clarion.domain.errors import ClarificationActive, NotFound

router = APIRouter(prefix="/api/v1")


@router.post(
    "/tasks/{task_id}/task-sessions",
    status_code=201,
    summary="Start a session",
    openapi_extra=body(StartSession),
    responses=errors(400, 404),
)
@acts_on("placement", "task_id")
async def start_session(task_id: str, request: Request) -> JSONResponse:
    svc = services(request)
    await svc.access.require_task(caller_of(request), task_id)
    await svc.reads.ensure_task(task_id)
    body = parse_body(StartSession, await read_json_object(request))
    session = await svc.sessions.start(
        task_id, agent=body.agent, prompt=body.prompt, is_primary=body.is_primary
    )
    return JSONResponse(
        {"session": await svc.reads.session_after_write(session.id)}, status_code=201
    )


@router.get(
    "/tasks/{task_id}/task-sessions",
    summary="Sessions with pending projections",
    responses=errors(404),
)
@router.get("/tasks/{task_id}/sessions", include_in_schema=False)
@served_anywhere
async def list_sessions(task_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_task(caller_of(request), task_id)
    sessions = await svc.reads.sessions(task_id)
    return {"sessions": sessions, "total": len(sessions)}


@router.get(
    "/agents", summary="The agent profiles a session can be started with", responses=errors()
)
async def agent_profiles(request: Request) -> dict[str, Any]:
    """Names only: a profile's command and environment stay on the server."""
    return {"agents": [{"name": name} for name in sorted(services(request).sessions.agents)]}


@router.get(
    "/task-sessions/{session_id}",
    summary="One session",
    description=(
        '`{"session": {id, task_id, agent, agent_process, agent_process_note, sandbox, state, '
        "is_primary, pending_action, error, created_at, updated_at, replica_id?, "
        "replica_url?}}`; in cluster mode `replica_id` names the replica that runs the session "
        "and `replica_url` its advertise URL (null when not live); `sandbox` is what the "
        "profile's agents run under (or would): `bwrap` or `none` (docs/security.md)."
    ),
    responses=errors(404),
)
@served_anywhere
async def get_session(session_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_session(caller_of(request), session_id)
    return {"session": await svc.reads.session(session_id)}


@router.post(
    "/task-sessions/{session_id}/prompt",
    status_code=202,
    summary="Send a prompt",
    openapi_extra=body(Prompt),
    responses=errors(400, 404, 409),
)
@acts_on("session", "session_id")
async def prompt(session_id: str, request: Request) -> JSONResponse:
    svc = services(request)
    await svc.access.require_session(caller_of(request), session_id)
    await svc.reads.ensure_session(session_id)
    body = parse_body(Prompt, await read_json_object(request))
    turn_id, queued = await svc.admission.submit(session_id, body.text)
    payload: dict[str, Any] = {"queued": queued}
    if turn_id is not None:
        payload["turn_id"] = turn_id
    return JSONResponse(payload, status_code=202)


@router.post(
    "/task-sessions/{session_id}/cancel",
    summary="Cancel the running turn",
    responses=errors(404, 409),
)
@acts_on("session", "session_id")
async def cancel(session_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_session(caller_of(request), session_id)
    dropped = await svc.sessions.cancel(session_id)
    return {"success": True, "dropped_prompts": dropped}


@router.post(
    "/task-sessions/{session_id}/finish",
    summary="End the session",
    openapi_extra=body(Finish),
    responses=errors(400, 404, 409),
)
@acts_on("session", "session_id")
async def finish(session_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_session(caller_of(request), session_id)
    await svc.reads.ensure_session(session_id)
    body = parse_body(Finish, await read_json_object(request))
    session = await svc.sessions.finish(session_id, body.state)
    return {"session": await svc.reads.session_after_write(session.id)}


@router.get(
    "/task-sessions/{session_id}/turns", summary="Durable turn history", responses=errors(404)
)
@served_anywhere
async def turns(session_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_session(caller_of(request), session_id)
    items = await svc.reads.turns(session_id)
    return {"turns": items, "total": len(items)}


@router.get(
    "/task-sessions/{session_id}/messages",
    summary="Transcript, oldest first",
    responses=errors(400, 404),
)
@served_anywhere
async def messages(
    session_id: str,
    request: Request,
    after: str | None = Query(default=None, description="a message id; the page starts after it"),
    limit: int = Query(default=100, ge=1, le=1000, description="page size"),
) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_session(caller_of(request), session_id)
    return await svc.reads.messages(session_id, after=after or None, limit=limit)


@router.delete(
    "/task-sessions/{session_id}/messages/{message_id}",
    status_code=204,
    summary="Delete one message",
    responses=errors(404, 409),
)
@acts_on("session", "session_id")
async def delete_message(session_id: str, message_id: str, request: Request) -> Response:
    svc = services(request)
    await svc.access.require_session(caller_of(request), session_id)
    await svc.reads.ensure_session(session_id)
    try:
        deleted = await svc.sessions.delete_message(session_id, message_id)
    except ClarificationActive as exc:
        # The store sees no waiters; the read model knows whether the agent waits live.
        current = (await svc.reads.bundle(exc.pending_id))["state"]
        if current in ("active_live", "active_detached", "delivery_claimed"):
            exc.state = current
        raise
    if deleted is None:
        raise NotFound("message not found", session_id=session_id, message_id=message_id)
    return Response(status_code=204)
