"""The HTTP edge's errors on the wire, each body from the one table (domain/error_bodies.py).

The app's handlers (install_error_handlers), the readiness gate's 503 (error_response) and the
WebSocket's `error` envelopes (ws_error_payload); FastAPI's validation errors and Starlette's own
HTTP errors in the same shape. Unexpected exceptions become 500 `internal` with a generic
message; the details go to the log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match
from starlette.websockets import WebSocket, WebSocketState

from clarion.api.bodies import first_error
from clarion.domain.error_bodies import error_body, wire_error
from clarion.domain.errors import ClarionError

log = logging.getLogger(__name__)

# Starlette's own HTTP errors (unknown route, wrong method, ...) in the same shape.
_HTTP_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    503: "starting",
}

_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_LOCATIONS = frozenset({"body", "query", "path", "header", "cookie"})
_RESERVED_LOG_KEYS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


def error_response(exc: BaseException, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """`exc` as a JSON response, with `error_body`'s status and body."""
    status, body = error_body(exc)
    return JSONResponse(body, status_code=status, headers=headers)


def ws_error_payload(exc: BaseException) -> dict[str, Any]:
    """The payload of a WebSocket `error` envelope: `{code, message, retryable, ...extras}`."""
    payload: dict[str, Any] = error_body(exc)[1]["error"]
    return payload


def install_error_handlers(app: FastAPI) -> None:
    """Route every error an HTTP request can raise through the table, in the contract's shape."""
    app.add_exception_handler(ClarionError, _on_clarion_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _on_validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _on_unexpected)


async def _on_clarion_error(conn: HTTPConnection, exc: ClarionError) -> Response | None:
    status, body = error_body(exc)
    extra = _log_extra(conn, exc.ids, status, body)
    if status == 500 and body["error"]["code"] == "internal":
        log.error("unmapped error", exc_info=exc, extra=extra)
    elif status >= 500:
        log.error("request failed: %s", exc.message, extra=extra)
    else:
        log.info("request refused: %s", exc.message, extra=extra)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return await _reply(conn, status, body, headers)


async def _on_validation_error(
    conn: HTTPConnection, exc: RequestValidationError
) -> Response | None:
    errors = list(exc.errors())
    if any(isinstance(e, dict) and e.get("type") == "json_invalid" for e in errors):
        body = wire_error("invalid_json", "request body is not valid JSON", False)
    else:
        located = [{**e, "loc": _strip_location(e.get("loc", ()))} for e in errors]
        field, message = first_error(located)
        body = wire_error("invalid_request", f"{field}: {message}", False, field=field)
    log.info("request refused: invalid input", extra=_log_extra(conn, {}, 400, body))
    return await _reply(conn, 400, body)


async def _on_http_exception(conn: HTTPConnection, exc: StarletteHTTPException) -> Response | None:
    status = exc.status_code
    if status < 200 or status in (204, 304):
        return Response(status_code=status, headers=exc.headers)
    code = _HTTP_CODES.get(status, f"http_{status}")
    body = wire_error(code, str(exc.detail), status == 503)
    headers = exc.headers
    if status == 405:
        headers = {**(headers or {}), "Allow": _allowed_methods(conn)}
    return await _reply(conn, status, body, headers)


def _allowed_methods(conn: HTTPConnection) -> str:
    """Every method some route serves at this path. Starlette's own 405 names only the first
    route whose path matched, so `/tasks` (GET and POST, two routes) would claim POST only."""
    routes = conn.app.router.routes
    allowed = [
        method
        for method in _METHODS
        if any(route.matches({**conn.scope, "method": method})[0] == Match.FULL for route in routes)
    ]
    return ", ".join(allowed)


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    status, body = error_body(exc)
    log.error("unexpected error", exc_info=exc, extra=_log_extra(request, {}, status, body))
    return JSONResponse(body, status_code=status)


async def _reply(
    conn: HTTPConnection,
    status: int,
    body: dict[str, Any],
    headers: Mapping[str, str] | None = None,
) -> Response | None:
    if not isinstance(conn, WebSocket):
        return JSONResponse(body, status_code=status, headers=headers)
    # A refused handshake is an HTTP response where the server supports it (the contract's
    # 401); otherwise, and once accepted, the socket closes with a policy or server code.
    if (
        conn.client_state == WebSocketState.CONNECTING
        and "websocket.http.response" in conn.scope.get("extensions", {})
    ):
        return JSONResponse(body, status_code=status, headers=headers)
    if conn.application_state != WebSocketState.DISCONNECTED:
        await conn.close(code=1008 if status < 500 else 1011, reason=body["error"]["code"])
    return None


def _strip_location(loc: Any) -> tuple[Any, ...]:
    """FastAPI prefixes each error path with where it was (`body`, `query`, ...); drop that."""
    parts = tuple(loc)
    return parts[1:] if parts and parts[0] in _LOCATIONS else parts


def _log_extra(
    conn: HTTPConnection, ids: dict[str, Any], status: int, body: dict[str, Any]
) -> dict[str, Any]:
    extra = {k: v for k, v in ids.items() if k not in _RESERVED_LOG_KEYS}
    extra.update(status=status, error_code=body["error"]["code"], path=conn.url.path)
    return extra
