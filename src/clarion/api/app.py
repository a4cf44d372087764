"""The ASGI application: HTTP routes, the WebSocket, the MCP endpoint and the web UI.

Until startup recovery has finished every route but /healthz answers 503 `starting`, so no
request can admit work that would supersede an unrecovered claim.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse
from starlette.routing import Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from clarion import __version__
from clarion.api import (
    auth,
    routes_clarifications,
    routes_cluster,
    routes_decision_links,
    routes_inbox,
    routes_links,
    routes_metrics,
    routes_permissions,
    routes_sessions,
    routes_slack,
    routes_tasks,
    routes_workspaces,
    ws,
)
from clarion.api.errors import error_response, install_error_handlers
from clarion.api.openapi import install_openapi
from clarion.api.route_targets import acts_on
from clarion.api.services import ApiServices
from clarion.domain.errors import ServiceStarting
from clarion.mcp.tools import McpEndpoint

WEB_DIR = Path(__file__).resolve().parent.parent / "web"


_ALWAYS_OPEN = frozenset({"/healthz", routes_cluster.CLUSTER_PATH, routes_metrics.METRICS_PATH})


class ReadinessGate:
    """Answers 503 `starting` to everything but /healthz (and the cluster list) until recovery
    is done; a WebSocket is closed with 1013 (try again later)."""

    def __init__(self, app: ASGIApp, services: ApiServices) -> None:
        self._app = app
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] not in ("http", "websocket")
            or self._services.ready.is_set()
            or scope.get("path") in _ALWAYS_OPEN
        ):
            await self._app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1013})
        else:
            await error_response(ServiceStarting("Clarion is starting"))(scope, receive, send)


def create_app(services: ApiServices, mcp: McpEndpoint) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # FastAPI does not run a mounted app's lifespan; the MCP session manager needs it.
        async with mcp.running():
            yield

    app = FastAPI(
        title="Clarion",
        version=__version__,
        lifespan=lifespan,
        description="Durable clarification lifecycle for AI coding agents.",
    )
    app.state.services = services
    install_error_handlers(app)
    install_openapi(
        app,
        bearer_auth=services.access.enabled,
        open_paths=auth.OPEN_PATHS
        | routes_links.OPEN_DOC_PATHS
        | routes_decision_links.OPEN_DOC_PATHS,
        enums={
            ("StartSession", "agent"): [*sorted(services.sessions.agents)],
            # null (the workspace's default) or a configured repository.
            ("CreateTask", "repository"): [*sorted(services.tasks.repositories), None],
        },
    )

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> JSONResponse:
        return routes_cluster.healthz(services)

    app.include_router(auth.router)
    app.include_router(routes_tasks.router)
    app.include_router(routes_workspaces.router)
    app.include_router(routes_sessions.router)
    app.include_router(routes_clarifications.router)
    app.include_router(routes_permissions.router)
    app.include_router(routes_inbox.router)
    app.include_router(routes_cluster.router)
    app.include_router(routes_metrics.router)
    app.include_router(routes_links.router)
    app.include_router(routes_decision_links.router)
    app.include_router(routes_slack.router)
    app.include_router(ws.router)
    # An agent's MCP session lives where its agent runs: cluster mode proxies it there.
    mcp_session = acts_on("session", "session_id")(mcp)
    app.router.routes.append(
        Route("/mcp/sessions/{session_id}", endpoint=mcp_session, methods=["GET", "POST", "DELETE"])
    )

    if WEB_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")

        @app.get("/", include_in_schema=False)
        async def index() -> Any:
            return FileResponse(WEB_DIR / "index.html")

        app.include_router(routes_links.page_routes(WEB_DIR))
        app.include_router(routes_decision_links.page_routes(WEB_DIR))

    # The last added runs first: readiness, then authentication, then the routes.
    app.add_middleware(routes_links.PrivateLinkResponses)
    app.add_middleware(auth.AuthGate, access=services.access)
    app.add_middleware(ReadinessGate, services=services)
    return app
