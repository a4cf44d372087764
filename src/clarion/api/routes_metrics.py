"""`GET /metrics` (Prometheus text format), and the answer figures recorded at the HTTP edge.

Open without access control. With it, the scraper presents a normal API token or the config's
`metrics_token`, which opens this route only.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable

from fastapi import APIRouter, Request, Response

from clarion.api.auth import presented_token
from clarion.api.services import ApiServices
from clarion.clarification.respond_result import RespondResult
from clarion.domain.error_bodies import error_body
from clarion.domain.errors import NotFound
from clarion.ports.metrics import AnswerOutcome, Metrics

METRICS_PATH = "/metrics"
router = APIRouter()


@router.get(METRICS_PATH, include_in_schema=False)
async def metrics(request: Request) -> Response:
    svc: ApiServices = request.app.state.services
    if svc.exposition is None:
        raise NotFound("metrics are not served by this server")
    if svc.access.enabled:
        token = presented_token(request, websocket=False)
        expected = svc.metrics_token
        if not (token and expected and hmac.compare_digest(token.encode(), expected.encode())):
            await svc.access.authenticate(token)
    body, content_type = await svc.exposition.render()
    return Response(body, media_type=content_type)


def outcome_of(exc: BaseException) -> AnswerOutcome:
    status, body = error_body(exc)
    if status == 409:
        return "conflict"
    if status < 500:
        return "invalid"
    return "retryable_error" if body["error"]["retryable"] else "error"


async def recorded_answer(metrics: Metrics, answering: Awaitable[RespondResult]) -> RespondResult:
    """Await an answer and record its outcome and, when accepted, its latency by path."""
    started = time.perf_counter()
    try:
        result = await answering
    except Exception as exc:
        metrics.answer(outcome_of(exc))
        raise
    metrics.answer("accepted")
    metrics.respond_seconds("live" if result.live else "detached", time.perf_counter() - started)
    return result
