"""A request another replica carries here is answered by the HTTP edge itself
(`ClusterRouting.listen`): it registers its own replay with the bus once, and each carried
request runs through this replica's routing, which serves a carried request here."""

from __future__ import annotations

import json
from typing import cast

from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send
from tests.app_routes import app_routes

from clarion.api.carrying import CARRIED_BY, RequestCarrier, carried_by, read_body
from clarion.api.mcp_proxy import McpToOwner
from clarion.api.route_targets import RouteTable
from clarion.api.routing import ClusterRouting
from clarion.api.session_gate import SessionGate
from clarion.ports.cluster import (
    CarriedHandler,
    CarriedReply,
    CarriedRequest,
    CarryTransport,
    Directory,
    SessionRoute,
)


class Bus:
    """Stands in for the bus's serving side: keeps the handler each replica registers."""

    def __init__(self) -> None:
        self.handlers: dict[str, CarriedHandler] = {}

    async def serve(self, replica_id: str, handler: CarriedHandler) -> None:
        self.handlers[replica_id] = handler


class Owners:
    """Every session belongs to replica `other`: a request that arrives uncarried would go
    there, so only the carried mark can make this replica serve it."""

    async def route_of_session(self, session_id: str) -> SessionRoute | None:
        return SessionRoute(session_id, "other")

    async def route_of_bundle(self, pending_id: str) -> SessionRoute | None:
        return SessionRoute("s1", "other")

    async def route_of_message(self, message_id: str) -> SessionRoute | None:
        return SessionRoute("s1", "other")

    async def route_of_task(self, task_id: str) -> SessionRoute | None:
        return SessionRoute("s1", "other")


class NoCarrying:
    async def carry(
        self, replica_id: str, request: CarriedRequest, timeout_s: float
    ) -> CarriedReply:
        raise AssertionError(f"a carried request was carried again, to {replica_id}")


async def test_a_carried_request_is_replayed_by_the_routing_that_listens_and_served_here() -> None:
    served: list[tuple[str, bytes, str | None]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        served.append((scope["path"], body, carried_by(scope)))
        await JSONResponse({"served_by": "me"}, status_code=201)(scope, receive, send)

    routing = ClusterRouting(
        app,
        routes=RouteTable.of(app_routes()),
        replica_id="me",
        directory=cast(Directory, Owners()),
        carrier=RequestCarrier(cast(CarryTransport, NoCarrying()), cast(Directory, Owners()), 5.0),
        mcp=cast(McpToOwner, None),
        gate=SessionGate(),
        adoption_wait_s=1.0,
    )
    bus = Bus()
    await routing.listen(bus)
    assert list(bus.handlers) == ["me"]

    request = CarriedRequest(
        method="POST",
        path="/api/v1/clarification/p1/respond",
        raw_path="/api/v1/clarification/p1/respond",
        query="",
        headers=(("content-type", "application/json"), (CARRIED_BY, "other")),
        body=b'{"answers": []}',
    )
    reply = await bus.handlers["me"](request)

    assert reply.status == 201
    assert json.loads(reply.body) == {"served_by": "me"}
    assert served == [("/api/v1/clarification/p1/respond", b'{"answers": []}', "other")]
