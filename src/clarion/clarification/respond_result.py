"""What an accepted answer (or Skip) came to: the respond contract's result, its wire shape,
and the outcome a trace records. Shared by the resolver and the HTTP edge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clarion.domain.answers import response_wire
from clarion.domain.models import ClarificationResponse
from clarion.ports import ClaimResult


@dataclass(frozen=True, slots=True)
class RespondResult:
    response: ClarificationResponse
    resumed: bool
    successor_turn_id: str | None
    # Handed to the agent's waiting call (not stored for a detached question); not on the wire.
    live: bool = False

    def wire(self) -> dict[str, Any]:
        return {
            "success": True,
            "status": "rejected" if self.response.rejected else "answered",
            "response": response_wire(self.response),
            "resumed": self.resumed,
            "successor_turn_id": self.successor_turn_id,
        }


def outcome_of(result: RespondResult) -> str:
    if result.live:
        return "delivered"
    return "resumed" if result.resumed else "rejected"


def as_recorded(response: ClarificationResponse, claim: ClaimResult) -> ClarificationResponse:
    """The response as recorded: its responded_at is the claim's commit time."""
    first = claim.claimed[0]
    return ClarificationResponse(
        pending_id=response.pending_id,
        answers=response.answers,
        rejected=response.rejected,
        reject_reason=response.reject_reason,
        responded_at=first.updated_at,
        by_policy=response.by_policy,
    )
