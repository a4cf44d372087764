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
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.api.bodies import read_json_object
from clarion.api.errors import error_response
from clarion.api.openapi import body, errors
from clarion.api.route_targets import acts_on, served_anywhere
from clarion.api.routes_tasks import services
from clarion.api.schemas import Respond
from clarion.domain.errors import NotFound

log = logging.getLogger(__name__)

router = APIRouter()
# In the OpenAPI document: no bearer token needed.
OPEN_DOC_PATHS = frozenset({"/api/v1/a/{token}", "/api/v1/a/{token}/respond"})

# The token is a credential in the URL: keep it out of Referer headers, caches and indexes.
PRIVATE = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex",
}
# Answer links, and decision links for permission requests (api/routes_decision_links.py).
_API_LINK_PATHS = ("/api/v1/a/", "/api/v1/p/")
_LINK_PATHS = (*_API_LINK_PATHS, "/a/", "/p/")


class PrivateLinkResponses:
    """Every response under an answer or decision link's paths (the page, the JSON read, an
    answer, an error) carries the private headers: the JSON read is the bundle's questions and
    answer, or the request's command and decision, which no shared cache may keep. A link's
    API path with a trailing slash is 404: the
    router would otherwise redirect it to the path without, repeating the token in a
    Location header."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.startswith(_LINK_PATHS):
            await self._app(scope, receive, send)
            return
        if path.startswith(_API_LINK_PATHS) and path.endswith("/"):
            kind = "answer" if path.startswith(_API_LINK_PATHS[0]) else "decision"
            log.info(f"{kind} link refused", extra={"path_kind": f"{kind}_link", "status": 404})
            refusal = error_response(NotFound(f"{kind} link not found or expired"), PRIVATE)
            await refusal(scope, receive, send)
            return

        async def private(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in PRIVATE.items():
                    headers[name] = value
            await send(message)

        await self._app(scope, receive, private)


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
@acts_on("link", "token")
async def linked_bundle(token: str, request: Request) -> dict[str, Any]:
    pending_id = _pending_of(request, token)
    return await services(request).reads.linked_bundle(pending_id)


@router.post(
    "/api/v1/a/{token}/respond",
    summary="Answer or Skip the bundle an answer link names, like /clarification/{id}/respond",
    openapi_extra=body(Respond),
    responses=errors(400, 404, 409, guarded=False),
)
@acts_on("link", "token")
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
    @served_anywhere
    async def answer_page(token: str, request: Request) -> Response:
        links = services(request).links
        pending_id = None if links is None else links.pending_of(token)
        if pending_id is None or not await services(request).reads.has_bundle(pending_id):
            return HTMLResponse(
                (web_dir / "answer-invalid.html").read_text(), status_code=404, headers=PRIVATE
            )
        return FileResponse(web_dir / "answer.html", headers=PRIVATE)

    @pages.get("/a/{rest:path}", include_in_schema=False)
    async def no_such_page(rest: str) -> Response:
        # `/a/<token>/` and deeper: the invalid-link page, not a redirect to the token.
        return HTMLResponse((web_dir / "answer-invalid.html").read_text(), status_code=404)

    return pages
