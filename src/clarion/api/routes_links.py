"""Answer links: `/a/<token>` opens a page for one question bundle, and `/api/v1/a/<token>`
reads and answers that bundle with the token as the only credential (the auth gate lets these
paths through). The answer goes through the same resolver call as
`POST /clarification/{pending_id}/respond`, so it behaves exactly like it. A token that is
forged, altered, expired or names no bundle is 404 `not_found`, and nothing is written.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from clarion.api.bodies import read_json_object
from clarion.api.openapi import body, errors
from clarion.api.routes_tasks import services
from clarion.api.schemas import Respond
from clarion.domain.errors import NotFound

log = logging.getLogger(__name__)

router = APIRouter()
# In the OpenAPI document: no bearer token needed.
OPEN_DOC_PATHS = frozenset({"/api/v1/a/{token}", "/api/v1/a/{token}/respond"})

# The token is a credential in the URL: keep it out of Referer headers, caches and indexes.
_PRIVATE = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex",
}


def _pending_of(request: Request, token: str) -> str:
    links = services(request).links
    pending_id = None if links is None else links.pending_of(token)
    if pending_id is None:
        log.info("answer link refused", extra={"path_kind": "answer_link", "status": 404})
        raise NotFound("answer link not found or expired")
    return pending_id


@router.get(
    "/api/v1/a/{token}",
    summary="The bundle an answer link names (the token is the credential)",
    responses=errors(404, guarded=False),
)
async def linked_bundle(token: str, request: Request) -> dict[str, Any]:
    pending_id = _pending_of(request, token)
    return await services(request).reads.linked_bundle(pending_id)


@router.post(
    "/api/v1/a/{token}/respond",
    summary="Answer or Skip the bundle an answer link names, like /clarification/{id}/respond",
    openapi_extra=body(Respond),
    responses=errors(400, 404, 409, guarded=False),
)
async def respond_by_link(token: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    pending_id = _pending_of(request, token)
    body = await read_json_object(request)
    result = await svc.resolver.respond(pending_id, body)
    log.info("answered through an answer link", extra={"pending_id": pending_id})
    return result.wire()


def page_routes(web_dir: Path) -> APIRouter:
    """`GET /a/<token>`: the answer page (its own HTML, script and style), or a page saying
    the link is not valid, with 404."""
    pages = APIRouter()

    @pages.get("/a/{token}", include_in_schema=False)
    async def answer_page(token: str, request: Request) -> Response:
        links = services(request).links
        pending_id = None if links is None else links.pending_of(token)
        if pending_id is None or not await services(request).reads.has_bundle(pending_id):
            return HTMLResponse(
                (web_dir / "answer-invalid.html").read_text(), status_code=404, headers=_PRIVATE
            )
        return FileResponse(web_dir / "answer.html", headers=_PRIVATE)

    return pages
