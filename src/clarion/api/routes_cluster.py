"""`GET /api/v1/cluster`: the live replicas, and `/healthz`'s cluster-mode body.

In single mode there is no cluster: the list is empty. Both answer on a starting replica too
(the readiness gate lets them through).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from clarion.api.openapi import errors
from clarion.api.routes_tasks import services
from clarion.api.services import ApiServices
from clarion.ports import ReplicaInfo

router = APIRouter(prefix="/api/v1")

CLUSTER_PATH = "/api/v1/cluster"


class Replica(BaseModel):
    id: str
    advertise_url: str
    started_at: str
    last_seen_at: str
    sessions: int = Field(description="sessions whose agent process runs on this replica")
    role: str = Field(description="`active` (serves) or `starting` (adopting and recovering)")


class Cluster(BaseModel):
    replicas: list[Replica]


def _wire(replica: ReplicaInfo) -> dict[str, Any]:
    return {
        "id": replica.id,
        "advertise_url": replica.advertise_url,
        "started_at": replica.started_at.isoformat(),
        "last_seen_at": replica.last_seen_at.isoformat(),
        "sessions": replica.sessions,
        "role": replica.role,
    }


@router.get(
    "/cluster",
    summary="The live replicas of this cluster (empty in single mode)",
    responses={200: {"model": Cluster, "description": "The replicas"}, **errors()},
)
async def cluster(request: Request) -> dict[str, Any]:
    view = services(request).cluster
    return {"replicas": [] if view is None else [_wire(r) for r in await view.replicas()]}


def healthz(services: ApiServices) -> JSONResponse:
    """`ok` once this server can take requests (after recovery), `starting` before. Cluster
    mode adds the replica's id and role, so a load balancer may send to every replica that
    answers 200."""
    view = services.cluster
    if services.ready.is_set():
        body: dict[str, Any] = {"status": "ok"}
        status = 200
    else:
        body = {"status": "starting"}
        status = 503
    if view is not None:
        body["replica"] = view.replica_id
        body["role"] = view.role
    return JSONResponse(body, status_code=status)
