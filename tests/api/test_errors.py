"""The error table and the handlers that put every HTTP failure in the contract's shape."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Query, WebSocket
from pydantic import BaseModel
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect

from clarion.api.errors import install_error_handlers, ws_error_payload
from clarion.domain.error_bodies import INTERNAL_MESSAGE, error_body
from clarion.domain.errors import (
    AcceptedButUnfinalized,
    ClarionError,
    Conflict,
    InjectedFailure,
    InvalidInput,
    NotActive,
    NotFound,
    PendingInput,
    RetryableFailure,
    ServiceStarting,
    SessionBusy,
    Unauthenticated,
)

WINNER = {"pending_id": "p1", "answers": [], "rejected": True, "reject_reason": "no"}

# (error, status, wire body inside "error")
ROWS: list[tuple[BaseException, int, dict[str, Any]]] = [
    (
        NotFound("task t1 not found", task_id="t1"),
        404,
        {"code": "not_found", "message": "task t1 not found", "retryable": False},
    ),
    (
        InvalidInput(
            "answers[1].question_id: unknown",
            field="answers[1].question_id",
            code="invalid_response",
        ),
        400,
        {
            "code": "invalid_response",
            "message": "answers[1].question_id: unknown",
            "retryable": False,
            "field": "answers[1].question_id",
        },
    ),
    (
        InvalidInput("body is not JSON", code="invalid_json"),
        400,
        {"code": "invalid_json", "message": "body is not JSON", "retryable": False},
    ),
    (
        NotActive("bundle is not active", state="superseded_history", pending_id="p1"),
        409,
        {
            "code": "not_active",
            "message": "bundle is not active",
            "retryable": False,
            "state": "superseded_history",
        },
    ),
    (
        NotActive("already answered", state="terminal", response=WINNER),
        409,
        {
            "code": "not_active",
            "message": "already answered",
            "retryable": False,
            "state": "terminal",
            "response": WINNER,
        },
    ),
    (
        PendingInput("a clarification is active", task_id="t1"),
        409,
        {"code": "pending_input", "message": "a clarification is active", "retryable": False},
    ),
    (
        SessionBusy("the session has a turn running", session_id="s1"),
        409,
        {"code": "session_busy", "message": "the session has a turn running", "retryable": False},
    ),
    (
        Conflict("session is terminal"),
        409,
        {"code": "conflict", "message": "session is terminal", "retryable": False},
    ),
    (
        Unauthenticated("missing token"),
        401,
        {"code": "unauthenticated", "message": "missing token", "retryable": False},
    ),
    (
        ServiceStarting("Clarion is starting"),
        503,
        {"code": "starting", "message": "Clarion is starting", "retryable": True},
    ),
    (
        RetryableFailure("agent did not accept", code="resume_not_accepted"),
        500,
        {"code": "resume_not_accepted", "message": "agent did not accept", "retryable": True},
    ),
    (
        RetryableFailure("waiter did not confirm", code="delivery_failed"),
        500,
        {"code": "delivery_failed", "message": "waiter did not confirm", "retryable": True},
    ),
    (
        AcceptedButUnfinalized("publication failed"),
        500,
        {"code": "dispatch_not_finalized", "message": "publication failed", "retryable": False},
    ),
    (
        InjectedFailure("injected failure at summary.cas", failpoint="summary.cas"),
        500,
        {"code": "internal", "message": INTERNAL_MESSAGE, "retryable": False},
    ),
    (
        ClarionError("base error"),
        500,
        {"code": "internal", "message": INTERNAL_MESSAGE, "retryable": False},
    ),
    (
        RuntimeError("secret detail"),
        500,
        {"code": "internal", "message": INTERNAL_MESSAGE, "retryable": False},
    ),
]
ROW_IDS = [f"{type(exc).__name__}-{status}" for exc, status, _ in ROWS]


@pytest.mark.parametrize(("exc", "status", "wire"), ROWS, ids=ROW_IDS)
def test_each_error_maps_to_its_status_and_body(
    exc: BaseException, status: int, wire: dict[str, Any]
) -> None:
    assert error_body(exc) == (status, {"error": wire})
    assert ws_error_payload(exc) == wire


@pytest.mark.parametrize(("exc", "status", "wire"), ROWS, ids=ROW_IDS)
def test_every_4xx_is_not_retryable(exc: BaseException, status: int, wire: dict[str, Any]) -> None:
    if 400 <= status < 500:
        assert error_body(exc)[1]["error"]["retryable"] is False


# --------------------------------------------------------------------------- through an app


class Answer(BaseModel):
    question_id: str
    selected_options: list[str] = []


class Respond(BaseModel):
    answers: list[Answer]
    rejected: bool = False


def make_app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/raise/{index}")
    async def raise_row(index: int) -> None:
        raise ROWS[index][0]

    @app.post("/typed")
    async def typed(body: Respond) -> dict[str, Any]:
        return {"answers": len(body.answers)}

    @app.get("/query")
    async def query(limit: int = Query()) -> dict[str, Any]:
        return {"limit": limit}

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        raise Unauthenticated("missing token")

    @app.websocket("/ws-accepted")
    async def ws_accepted(websocket: WebSocket) -> None:
        await websocket.accept()
        raise NotFound("gone")

    return app


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=make_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


@pytest.mark.parametrize("index", range(len(ROWS)), ids=ROW_IDS)
async def test_a_route_raising_an_error_answers_with_the_table(
    client: httpx.AsyncClient, index: int
) -> None:
    _, status, wire = ROWS[index]
    response = await client.get(f"/raise/{index}")
    assert response.status_code == status
    assert response.json() == {"error": wire}


async def test_unauthenticated_asks_for_a_bearer_token(client: httpx.AsyncClient) -> None:
    index = next(i for i, row in enumerate(ROWS) if isinstance(row[0], Unauthenticated))
    response = await client.get(f"/raise/{index}")
    assert response.headers["www-authenticate"] == "Bearer"


async def test_unexpected_errors_are_logged_but_not_leaked(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    index = next(i for i, row in enumerate(ROWS) if isinstance(row[0], RuntimeError))
    with caplog.at_level(logging.ERROR, logger="clarion.api.errors"):
        response = await client.get(f"/raise/{index}")
    assert "secret detail" not in response.text
    assert any(r.exc_info and "secret detail" in str(r.exc_info[1]) for r in caplog.records)


async def test_a_body_that_is_not_json_is_400_invalid_json(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/typed", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert response.json()["error"]["retryable"] is False


async def test_a_field_of_the_wrong_type_is_400_naming_its_path(client: httpx.AsyncClient) -> None:
    body = {"answers": [{"question_id": "db"}, {"question_id": 5}]}
    response = await client.post("/typed", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["field"] == "answers[1].question_id"
    assert error["retryable"] is False


async def test_a_missing_key_is_400_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.post("/typed", json={"rejected": True})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "answers"


async def test_a_body_that_is_not_an_object_is_400_at_the_root(client: httpx.AsyncClient) -> None:
    response = await client.post("/typed", json=[1, 2])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["field"] == "$"


async def test_a_bad_query_parameter_is_400_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.get("/query", params={"limit": "many"})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "limit"


async def test_an_unknown_route_is_404_in_the_contract_shape(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "not_found", "message": "Not Found", "retryable": False}
    }


async def test_a_wrong_method_is_405_in_the_contract_shape(client: httpx.AsyncClient) -> None:
    response = await client.delete("/typed")
    assert response.status_code == 405
    assert response.json()["error"] == {
        "code": "method_not_allowed",
        "message": "Method Not Allowed",
        "retryable": False,
    }
    assert response.headers["allow"] == "POST"


async def test_no_validation_failure_is_ever_422(client: httpx.AsyncClient) -> None:
    attempts = [
        await client.post("/typed", content=b"", headers={"content-type": "application/json"}),
        await client.post("/typed", json={"answers": "nope"}),
        await client.post("/typed", json={"answers": [{"selected_options": [1]}]}),
        await client.get("/query"),
    ]
    assert [r.status_code for r in attempts] == [400, 400, 400, 400]


def test_a_refused_websocket_handshake_is_an_http_error_response() -> None:
    with TestClient(make_app()) as http, pytest.raises(WebSocketDenialResponse) as denied:
        http.websocket_connect("/ws").__enter__()
    assert denied.value.status_code == 401
    assert denied.value.json()["error"]["code"] == "unauthenticated"


def test_an_error_after_accepting_a_websocket_closes_it_with_a_policy_code() -> None:
    with (
        TestClient(make_app()) as http,
        http.websocket_connect("/ws-accepted") as ws,
        pytest.raises(WebSocketDisconnect) as closed,
    ):
        ws.receive_text()
    assert closed.value.code == 1008
    assert closed.value.reason == "not_found"
