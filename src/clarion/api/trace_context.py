"""A caller's trace, continued: the HTTP request's W3C `traceparent` (and `tracestate`) header
becomes the current trace context while the request runs, so the spans it makes (`respond`,
`request.carry`, `agent.start` of a new session, an agent's `ask`) join the caller's trace
instead of starting one of their own.

Installed only when tracing is on (`with_trace_context`): without `[telemetry]` the server's
application is returned unchanged, so no request's headers are looked at. A WebSocket is left
alone (its notifications make no spans).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from clarion.ports.tracing import NO_TRACER, Tracer

# Header names as ASGI gives them (lower case, bytes) -> the propagator's names.
_HEADERS = {b"traceparent": "traceparent", b"tracestate": "tracestate"}


def with_trace_context(app: ASGIApp, tracer: Tracer) -> ASGIApp:
    """`app` continuing each request's caller's trace, or `app` itself when nothing traces."""
    return app if tracer is NO_TRACER else TraceContext(app, tracer)


class TraceContext:
    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self._app = app
        self._tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        carrier = {
            _HEADERS[name]: value.decode("latin-1")
            for name, value in scope.get("headers", ())
            if name in _HEADERS
        }
        if "traceparent" not in carrier:
            await self._app(scope, receive, send)
            return
        with self._tracer.continuing(carrier):
            await self._app(scope, receive, send)
