"""Decision links: `/p/<token>` opens a page for one permission request, and `/api/v1/p/<token>`
reads and decides that request with the token as the only credential (the auth gate lets these
paths through, and `PrivateLinkResponses` keeps every response out of caches). The contract
names no paths for them; they mirror the answer link's. The decision goes through the same
service call as `POST /permission/{message_id}/respond`, so it behaves exactly like it: claimed
durably first, one decision wins, the loser gets 409 `not_active` with the winning decision. A
token that is forged, altered, expired, made for a question, or names no permission request is
404 `not_found`, and nothing is written.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from clarion.api.bodies import read_json_object
from clarion.api.openapi import body, errors
from clarion.api.route_targets import acts_on, served_anywhere
from clarion.api.routes_links import PRIVATE
from clarion.api.routes_tasks import services
from clarion.api.schemas import DecidePermission
from clarion.domain.errors import NotFound

log = logging.getLogger(__name__)

router = APIRouter()
# In the OpenAPI document: no bearer token needed.
OPEN_DOC_PATHS = frozenset({"/api/v1/p/{token}", "/api/v1/p/{token}/respond"})
_REFUSED = "decision link not found or expired"


def _message_of(request: Request, token: str) -> str:
    links = services(request).links
    message_id = None if links is None else links.message_of(token)
    if message_id is None:
        log.info("decision link refused", extra={"path_kind": "decision_link", "status": 404})
        raise NotFound(_REFUSED)
    return message_id


async def _linked(request: Request, message_id: str) -> dict[str, Any]:
    """The permission request's read, with its task (the page names it); 404 when the token
    names no permission request."""
    svc = services(request)
    try:
        view = await svc.permissions.view(message_id)
    except NotFound:
        log.info("decision link refused", extra={"path_kind": "decision_link", "status": 404})
        raise NotFound(_REFUSED) from None
    task = await svc.store_task(view["task_id"])
    view["task"] = {"id": task.id, "title": task.title, "description": task.description}
    return view


@router.get(
    "/api/v1/p/{token}",
    summary="The permission request a decision link names (the token is the credential)",
    responses=errors(404, guarded=False),
)
@acts_on("decision_link", "token")
async def linked_permission(token: str, request: Request) -> dict[str, Any]:
    return await _linked(request, _message_of(request, token))


@router.post(
    "/api/v1/p/{token}/respond",
    summary="Allow, reject or cancel the request a decision link names, like "
    "/permission/{id}/respond",
    openapi_extra=body(DecidePermission),
    responses=errors(400, 404, 409, guarded=False),
)
@acts_on("decision_link", "token")
async def decide_by_link(token: str, request: Request) -> dict[str, Any]:
    message_id = _message_of(request, token)
    await _linked(request, message_id)  # a token naming a question's row is refused here
    decision = await read_json_object(request)
    result = await services(request).permissions.respond(message_id, decision)
    log.info("permission decided through a decision link", extra={"message_id": message_id})
    return result


def page_routes(web_dir: Path) -> APIRouter:
    """`GET /p/<token>`: the decision page (its own HTML and script, the answer page's style),
    or a page saying the link is not valid, with 404."""
    pages = APIRouter()

    def invalid() -> Response:
        text = (web_dir / "decision-invalid.html").read_text()
        return HTMLResponse(text, status_code=404, headers=PRIVATE)

    @pages.get("/p/{token}", include_in_schema=False)
    @served_anywhere
    async def decision_page(token: str, request: Request) -> Response:
        links = services(request).links
        message_id = None if links is None else links.message_of(token)
        if message_id is None:
            return invalid()
        try:
            await services(request).permissions.view(message_id)
        except NotFound:
            return invalid()
        return FileResponse(web_dir / "decision.html", headers=PRIVATE)

    @pages.get("/p/{rest:path}", include_in_schema=False)
    async def no_such_page(rest: str) -> Response:
        # `/p/<token>/` and deeper: the invalid-link page, not a redirect to the token.
        return invalid()

    return pages
