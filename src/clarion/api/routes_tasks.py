"""HTTP routes for tasks, the workflow board and the boot payload."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from clarion.api.auth import caller_of
from clarion.api.bodies import parse_body, read_json_object
from clarion.api.openapi import body, errors, task_read
from clarion.api.route_targets import served_anywhere
from clarion.api.schemas import CreateTask, MoveTask
from clarion.api.services import ApiServices
from clarion.domain.models import WorkflowStep

router = APIRouter(prefix="/api/v1")


def services(request: Request) -> ApiServices:
    svc: ApiServices = request.app.state.services
    return svc


@router.post(
    "/tasks",
    status_code=201,
    summary="Create a task",
    openapi_extra=body(CreateTask),
    # No 201 model: a fuzzer reads one as "creates a task resource" and expects every route
    # on it to find the task, where the contract answers 404 for one without a worktree.
    responses=errors(400, 404),
)
async def create_task(request: Request) -> JSONResponse:
    svc = services(request)
    body = parse_body(CreateTask, await read_json_object(request))
    workspace = svc.access.workspace_for_new_task(caller_of(request), body.workspace)
    task = await svc.tasks.create(
        title=body.title,
        description=body.description,
        workspace=workspace,
        repository=body.repository,
    )
    return JSONResponse({"task": await svc.reads.task_view(task, repair=False)}, status_code=201)


@router.get("/tasks", summary="List tasks with repaired status summaries", responses=errors())
async def list_tasks(request: Request) -> dict[str, Any]:
    tasks = await services(request).reads.tasks(caller_of(request).workspace_ids())
    return {"tasks": tasks, "total": len(tasks)}


@router.get("/tasks/{task_id}", summary="One task", responses={**task_read(), **errors(404)})
@served_anywhere
async def get_task(task_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_task(caller_of(request), task_id)
    return {"task": await svc.reads.task(task_id)}


@router.post(
    "/tasks/{task_id}/move",
    summary="Move a task to another workflow step",
    openapi_extra=body(MoveTask),
    responses={**task_read(), **errors(400, 404, 409)},
)
@served_anywhere
async def move_task(task_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_task(caller_of(request), task_id)
    body = parse_body(MoveTask, await read_json_object(request))
    task = await svc.workflow.move(task_id, body.step)
    return {"task": await svc.reads.task_view(task)}


@router.get("/workflow/snapshot", summary="Tasks by workflow step", responses=errors())
async def workflow_snapshot(request: Request) -> dict[str, Any]:
    tasks = await services(request).reads.tasks(caller_of(request).workspace_ids())
    return {
        "steps": [
            {"id": step.value, "tasks": [t for t in tasks if t["workflow_step"] == step.value]}
            for step in WorkflowStep
        ]
    }


@router.get("/boot", summary="What a client loads first", responses=errors())
async def boot(request: Request) -> dict[str, Any]:
    svc = services(request)
    tasks = await svc.reads.tasks(caller_of(request).workspace_ids())
    return {"tasks": tasks, "total": len(tasks), "epoch": str(await svc.projector.current_epoch())}
