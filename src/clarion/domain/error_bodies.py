"""The one table from domain errors to the wire: HTTP status, whether a retry may help, and
the `{"error": {...}}` body every edge sends (the HTTP routes, the readiness gate, the MCP
endpoint's 401, the WebSocket's `error` envelopes).

Every error body is `{"error": {"code", "message", "retryable", ...extras}}` with extras
`field` (InvalidInput), `state` and `response` (NotActive). Every 4xx is not retryable. Anything
that is not a ClarionError is 500 `internal` with a generic message (its details go to the log,
which is the edge's to write). Pure: the edges wrap the body in their own response types.
"""

from __future__ import annotations

from typing import Any

from clarion.domain.errors import (
    AcceptedButUnfinalized,
    ClarificationActive,
    ClarionError,
    Conflict,
    DecisionNotActive,
    InvalidInput,
    NotActive,
    NotFound,
    PendingInput,
    ReplicaUnavailable,
    RetryableFailure,
    ServiceStarting,
    SessionBusy,
    Unauthenticated,
    Unavailable,
)

# error class -> (HTTP status, retryable). The most specific class in an error's MRO wins.
STATUS: dict[type[ClarionError], tuple[int, bool]] = {
    Unavailable: (500, True),
    NotFound: (404, False),
    InvalidInput: (400, False),
    NotActive: (409, False),
    PendingInput: (409, False),
    SessionBusy: (409, False),  # a review of a session with a turn running or anything waiting
    Conflict: (409, False),
    Unauthenticated: (401, False),
    ServiceStarting: (503, True),  # recovery is running: the same request will work shortly
    RetryableFailure: (500, True),
    AcceptedButUnfinalized: (500, False),
}

INTERNAL_MESSAGE = "internal error; see the server log"


def wire_error(code: str, message: str, retryable: bool, **extras: Any) -> dict[str, Any]:
    """An error body in the contract's shape."""
    return {"error": {"code": code, "message": message, "retryable": retryable, **extras}}


def error_body(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The HTTP status and wire body for `exc`; anything unmapped is 500 `internal`."""
    if isinstance(exc, ClarionError):
        for cls in type(exc).__mro__:
            if cls in STATUS:
                status, retryable = STATUS[cls]
                return status, wire_error(exc.code, exc.message, retryable, **_extras(exc))
    return 500, wire_error("internal", INTERNAL_MESSAGE, False)


def _extras(exc: ClarionError) -> dict[str, Any]:
    if isinstance(exc, ReplicaUnavailable):
        return {"replica": {"id": exc.replica_id, "advertise_url": exc.replica_url}}
    if isinstance(exc, InvalidInput) and exc.field is not None:
        return {"field": exc.field}
    if isinstance(exc, ClarificationActive):
        return {"state": exc.state, "pending_id": exc.pending_id}
    if isinstance(exc, DecisionNotActive):
        return {"state": exc.state, "decision": exc.decision}
    if isinstance(exc, NotActive):
        extras: dict[str, Any] = {"state": exc.state}
        if exc.response is not None:
            extras["response"] = exc.response
        if exc.delivery is not None:
            extras["delivery"] = exc.delivery
        return extras
    if exc.code == "agent_unavailable" and "session_id" in exc.ids:
        # The session the failed start left behind (FAILED, with the reason in its transcript).
        return {"session_id": exc.ids["session_id"]}
    return {}
