"""Every route that names a session, a bundle, a permission request's message, a task or an
answer link in its path declares how cluster mode routes it (api/route_targets.py), where the
route is declared; the routing's table is read from those declarations."""

from __future__ import annotations

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import iter_route_contexts
from tests.app_routes import app_routes

from clarion.api import routes_sessions
from clarion.api.route_targets import (
    NAMING_PARAMS,
    RouteTable,
    Target,
    acts_on,
    declared,
    served_anywhere,
    undeclared,
)


def test_every_route_that_names_a_session_or_what_it_owns_declares_its_routing() -> None:
    assert undeclared(app_routes()) == []


def test_a_route_left_without_its_declaration_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(routes_sessions.prompt, "__cluster_routing__")
    assert undeclared(app_routes()) == ["POST /api/v1/task-sessions/{session_id}/prompt"]


@pytest.mark.parametrize("param", sorted(NAMING_PARAMS))
def test_a_new_route_taking_a_naming_parameter_must_declare(param: str) -> None:
    router = APIRouter(prefix="/api/v1")

    @router.post(f"/things/{{{param}}}/poke")
    async def poke() -> None: ...

    @router.get("/things/{thing_id}")
    async def thing() -> None: ...

    app = FastAPI()
    app.include_router(router)
    assert undeclared(app.routes) == [f"POST /api/v1/things/{{{param}}}/poke"]
    acts_on("session", param)(poke)
    assert undeclared(app.routes) == []
    assert RouteTable.of(app.routes).target_of("POST", "/api/v1/things/x1/poke") == Target(
        "session", "x1"
    )


def test_a_route_served_anywhere_is_declared_and_left_out_of_the_table() -> None:
    router = APIRouter()

    @router.get("/sessions/{session_id}")
    @served_anywhere
    async def read() -> None: ...

    app = FastAPI()
    app.include_router(router)
    assert undeclared(app.routes) == []
    assert RouteTable.of(app.routes).target_of("GET", "/sessions/s1") is None


def test_a_declaration_naming_a_parameter_the_path_lacks_is_refused() -> None:
    router = APIRouter()

    @router.post("/sessions/{session_id}/poke")
    @acts_on("session", "sesion_id")
    async def poke() -> None: ...

    app = FastAPI()
    app.include_router(router)
    with pytest.raises(ValueError, match="sesion_id"):
        RouteTable.of(app.routes)


def test_the_mcp_endpoint_is_declared_on_its_route_too() -> None:
    (mcp,) = [
        r for r in iter_route_contexts(app_routes()) if r.path == "/mcp/sessions/{session_id}"
    ]
    routing = declared(mcp.endpoint)
    assert routing is not None and (routing.kind, routing.param) == ("session", "session_id")
