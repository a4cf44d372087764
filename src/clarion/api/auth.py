"""Authentication at the HTTP and WebSocket edge: the gate, the caller, login and logout.

Imported by the app factory (AuthGate, router) and by the routes and the WebSocket
(`caller_of`). Every request under /api/v1 except login, logout and answer and decision links
(whose signed token is their credential) passes the gate, which turns the presented token into
a `Caller` and stores it in the request scope. Tokens are read from, in order:
`Authorization: Bearer`, `?token=` (WebSocket only: browsers cannot set headers on a
WebSocket), the `clarion_token` cookie that login sets. A token is never logged.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from clarion.api.bodies import parse_body, read_json_object
from clarion.api.errors import error_response
from clarion.api.openapi import body, errors
from clarion.domain.errors import Unauthenticated
from clarion.orchestrator.access import EVERYONE, AccessControl, Caller

log = logging.getLogger(__name__)

COOKIE = "clarion_token"
API_PREFIX = "/api/v1"
# Slack's interactions carry Slack's request signature instead (api/routes_slack.py).
OPEN_PATHS = frozenset(
    {f"{API_PREFIX}/login", f"{API_PREFIX}/logout", f"{API_PREFIX}/slack/interactions"}
)
# Answer and decision links carry their own credential, the signed token in the path
# (api/routes_links.py, api/routes_decision_links.py).
LINK_PREFIXES = (f"{API_PREFIX}/a/", f"{API_PREFIX}/p/")
_SCOPE_KEY = "clarion.caller"

router = APIRouter(prefix=API_PREFIX)


def presented_token(conn: HTTPConnection, *, websocket: bool) -> str | None:
    header = conn.headers.get("authorization")
    if header is not None:
        scheme, _, value = header.strip().partition(" ")
        # A malformed Authorization header is a wrong credential, not a missing one:
        # never fall back to the cookie behind an explicit header.
        return (value.strip() or None) if scheme.lower() == "bearer" else None
    if websocket and conn.query_params.get("token"):
        return conn.query_params["token"]
    return conn.cookies.get(COOKIE) or None


def caller_of(conn: HTTPConnection) -> Caller:
    """The caller the gate authenticated; fails closed if the gate did not run."""
    caller = conn.scope.get(_SCOPE_KEY)
    if isinstance(caller, Caller):
        return caller
    access: AccessControl = conn.app.state.services.access
    if access.enabled:
        raise Unauthenticated("missing API token")
    return EVERYONE


def _guarded(path: str) -> bool:
    return (
        (path == API_PREFIX or path.startswith(API_PREFIX + "/"))
        and path not in OPEN_PATHS
        and not path.startswith(LINK_PREFIXES)
    )


class AuthGate:
    """ASGI middleware: 401 `unauthenticated` before any route runs; nothing is written.

    A refused WebSocket handshake is an HTTP 401 response, not a close (which a client would
    see as 403)."""

    def __init__(self, app: ASGIApp, access: AccessControl) -> None:
        self._app = app
        self._access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or not _guarded(scope.get("path", "")):
            await self._app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        try:
            caller = await self._access.authenticate(
                presented_token(conn, websocket=kind == "websocket")
            )
        except Unauthenticated as exc:
            log.info(
                "request refused: %s",
                exc.message,
                extra={"path": conn.url.path, "status": 401, "error_code": exc.code},
            )
            await _refuse(scope, receive, send, exc)
            return
        scope[_SCOPE_KEY] = caller
        await self._app(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send, exc: Unauthenticated) -> None:
    response = error_response(exc, headers={"WWW-Authenticate": "Bearer"})
    if scope["type"] == "http":
        await response(scope, receive, send)
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        await WebSocket(scope, receive, send).send_denial_response(response)
        return
    # A server without the denial-response extension: the best left is a policy close.
    await send({"type": "websocket.close", "code": 1008, "reason": "unauthenticated"})


class Login(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    token: str = Field(min_length=1, max_length=512)


@router.post(
    "/login",
    summary="Exchange an API token for the web UI's session cookie",
    openapi_extra=body(Login),
    responses=errors(400, 401, guarded=False),
)
async def login(request: Request) -> JSONResponse:
    access: AccessControl = request.app.state.services.access
    body = parse_body(Login, await read_json_object(request))
    caller = await access.authenticate(body.token)
    response = JSONResponse(
        {
            "success": True,
            "auth": access.enabled,
            "user": caller.user,
            "workspaces": None
            if caller.workspaces is None
            else [w.name for w in caller.workspaces],
        }
    )
    if access.enabled:
        response.set_cookie(
            COOKIE,
            body.token,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
    return response


@router.post("/logout", summary="Drop the web UI's session cookie", responses=errors(guarded=False))
async def logout() -> JSONResponse:
    response = JSONResponse({"success": True})
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response
