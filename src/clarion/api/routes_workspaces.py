"""HTTP routes on a task's worktree: its changes, a review of them, and archiving the task.

Each acts on the task's primary session's replica in cluster mode (api/route_targets.py): that
is where its agent, and so its worktree, lives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request

from clarion.api.auth import caller_of
from clarion.api.bodies import parse_body, read_json_object
from clarion.api.openapi import body, errors, task_read
from clarion.api.route_targets import acts_on
from clarion.api.schemas import ReviewTask
from clarion.api.services import ApiServices
from clarion.domain.errors import NotFound, Unavailable
from clarion.domain.models import WorktreeState
from clarion.workspaces.changes import read_changes
from clarion.workspaces.git import GitError

router = APIRouter(prefix="/api/v1")


def services(request: Request) -> ApiServices:
    svc: ApiServices = request.app.state.services
    return svc


@router.get(
    "/tasks/{task_id}/changes",
    summary="What the task's agent changed in its worktree, against the merge base",
    responses=errors(404),
)
@acts_on("task", "task_id")
async def task_changes(task_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_task(caller_of(request), task_id)
    task = await svc.store_task(task_id)
    worktree = task.worktree
    if worktree is None or worktree.state is not WorktreeState.READY:
        raise NotFound("the task has no worktree", task_id=task_id)
    try:
        changes = await read_changes(
            Path(worktree.path), worktree.base, max_patch_bytes=svc.max_patch_bytes
        )
    except GitError as exc:
        raise Unavailable(f"the worktree's changes could not be read: {exc}") from exc
    return changes.to_wire()


@router.post(
    "/tasks/{task_id}/review",
    summary="Send a review of the task's changes to its agent as one new turn",
    openapi_extra=body(ReviewTask),
    responses=errors(400, 404, 409),
)
@acts_on("task", "task_id")
async def review_task(task_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_task(caller_of(request), task_id)
    review = parse_body(ReviewTask, await read_json_object(request))
    if svc.reviews is None:
        raise NotFound("the task has no worktree", task_id=task_id)
    turn_id = await svc.reviews.review(
        task_id, [(c.path, c.line, c.body) for c in review.comments], review.summary
    )
    return {"turn_id": turn_id}


@router.post(
    "/tasks/{task_id}/archive",
    summary="Remove the task's worktree (its branch stays) and take it off the active steps",
    responses={**task_read(), **errors(404, 409)},
)
@acts_on("task", "task_id")
async def archive_task(task_id: str, request: Request) -> dict[str, Any]:
    svc = services(request)
    await svc.access.require_task(caller_of(request), task_id)
    if svc.archive is None:
        raise NotFound("task not found", task_id=task_id)
    task = await svc.archive.archive(task_id)
    return {"task": await svc.reads.task_view(task)}
