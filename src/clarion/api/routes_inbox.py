"""HTTP route for the person's inbox: every question and permission request waiting for them.

The response models exist for the OpenAPI document only (the route returns the read model as
it is); they say which fields each kind of item carries.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from clarion.api.auth import caller_of
from clarion.api.openapi import errors
from clarion.api.routes_tasks import services
from clarion.api.waiting_schema import WaitingFields

router = APIRouter(prefix="/api/v1")


class InboxTask(BaseModel):
    id: str
    title: str


class InboxItem(WaitingFields):
    kind: Literal["clarification", "permission"]
    id: str = Field(description="the bundle's pending_id, or the permission request's message_id")
    task: InboxTask
    session_id: str
    state: str = Field(description="`active_live`/`active_detached`, or `pending` (permission)")
    created_at: str
    questions: list[dict[str, Any]] = Field(
        default_factory=list, description="clarification only: the bundle's questions"
    )
    tool_call: dict[str, Any] = Field(
        default_factory=dict, description="permission only: the tool call asked about"
    )
    options: list[dict[str, Any]] = Field(
        default_factory=list, description="permission only: the options to choose from"
    )
    context: str = Field(
        default="", description="clarification only: the agent's explanation of its questions"
    )
    task_description: str = Field(description="the task's description (Markdown), may be empty")
    last_agent_message: str | None = Field(
        description="the newest message the agent wrote in the session (cut at 600 characters), "
        "null when it has written none"
    )


class Inbox(BaseModel):
    items: list[InboxItem]
    total: int


@router.get(
    "/inbox",
    summary="Every question and permission request the caller may act on now, oldest first",
    responses={200: {"model": Inbox, "description": "The inbox"}, **errors()},
)
async def inbox(request: Request) -> dict[str, Any]:
    caller = caller_of(request)
    return await services(request).reads.inbox(caller.workspace_ids(), caller.user)
