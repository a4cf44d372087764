"""What the OpenAPI document says of a question's waiting policy in a bundle read and an inbox
item (edges only; the values come from projection/waiting.py). Documentation, not validation:
the routes return the read models as they are."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class WaitingFields(BaseModel):
    """The waiting policy's fields (clarifications only; a permission item has none)."""

    model_config = ConfigDict(extra="allow")

    waiting_since: str | None = Field(
        default=None, description="when the question was asked (ISO 8601)"
    )
    remind_at: str | None = Field(
        default=None, description="the next reminder, or null when none is due"
    )
    escalated_to: list[str] = Field(
        default_factory=list, description="users the question was escalated to"
    )
    expires_at: str | None = Field(
        default=None, description="when the question expires, or null when it never does"
    )
    on_expiry: Literal["skip", "default", "keep"] | None = Field(
        default=None, description="what its expiry answers (`keep`: it never expires)"
    )


class BundleRead(WaitingFields):
    """`GET /clarification/{pending_id}` (more fields: see the contract)."""

    pending_id: str
    session_id: str
    task_id: str
    state: str
    questions: list[dict[str, Any]]
    answered_by: str | None = Field(
        description="who answered: `policy` (the waiting policy's expiry), the user's name when"
        " the answering channel names them (a mapped Slack user), `person`, or nobody yet"
    )


def documented(model: type[BaseModel], description: str) -> dict[int | str, dict[str, Any]]:
    """`responses=` entry documenting a 200 body without filtering what the route returns."""
    return {200: {"model": model, "description": description}}
