"""The real application's routes, for tests that read the route table: `create_app` on
stand-in services, which its routes read only when a request comes."""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace
from typing import cast

from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from clarion.api.app import create_app
from clarion.api.services import ApiServices
from clarion.mcp.tools import McpEndpoint


class _NoMcp:
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("no request reaches this application")


@cache
def app_routes() -> tuple[BaseRoute, ...]:
    services = SimpleNamespace(
        access=SimpleNamespace(enabled=False),
        sessions=SimpleNamespace(agents={}),
        tasks=SimpleNamespace(repositories={}),
    )
    app = create_app(cast(ApiServices, services), cast(McpEndpoint, _NoMcp()))
    return tuple(app.routes)
