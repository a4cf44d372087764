"""`POST /api/v1/slack/interactions`: where Slack sends clicks and modal submissions (form
encoded, `payload=<JSON>`). Its credential is Slack's request signature, checked by the Slack
inbox (clarion/slack/inbox.py), so the auth gate lets the path through. A bad or missing
signature is 401 and writes nothing; everything verified gets its 200 at once, and what
follows (answering, opening the modal, an ephemeral message) runs after the response is sent.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.background import BackgroundTask

from clarion.api.errors import error_response
from clarion.api.routes_tasks import services
from clarion.domain.errors import NotFound, Unauthenticated

log = logging.getLogger(__name__)

PATH = "/api/v1/slack/interactions"
router = APIRouter()


@router.post(PATH, include_in_schema=False)
async def slack_interactions(request: Request) -> Response:
    inbox = services(request).slack
    if inbox is None:
        return error_response(NotFound("Slack is not configured"))
    raw = await request.body()
    ack = await inbox.receive_http(raw, request.headers)
    if ack.status == 401:
        return error_response(Unauthenticated("bad or missing Slack signature"))
    background = None
    if ack.after is not None:
        follow_up = ack.after

        async def after_response() -> None:
            await follow_up()

        background = BackgroundTask(after_response)
    if ack.body is not None:
        return JSONResponse(ack.body, status_code=ack.status, background=background)
    return Response(status_code=ack.status, background=background)
