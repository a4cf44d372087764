"""The one port through which the respond path hands a claimed answer to the orchestrator.

Declared here, beside the resolver that calls it, and implemented by the orchestrator
(`orchestrator/handoffs.py`), so the answer path runs one way: routes -> resolver -> these two
hand-offs, and nothing in the orchestrator calls back into the resolver. Restoring a claim
stays with the resolver: a hand-off only reports how it ended.
"""

from __future__ import annotations

from typing import Protocol

from clarion.domain.models import ClarificationResponse, Turn
from clarion.ports import ClaimResult


class AnswerHandoffs(Protocol):
    def arm_watchdog(self, claim: ClaimResult, response: ClarificationResponse) -> None:
        """Called synchronously inside the live confirmation boundary, before the agent gets
        the answer: from here on, a silent agent gets it again as a replacement prompt."""
        ...

    async def resume_detached(self, claim: ClaimResult, response: ClarificationResponse) -> Turn:
        """Dispatch the answer as a new prompt in one successor turn, at most once; returns
        the published successor. Raises ResumeNotAccepted when the agent certainly did not get
        it and the reservation was rolled back (the caller restores the claim),
        AcceptedButUnpublished when the agent has it but its publication failed (the caller
        settles the claim as delivered), or AcceptedButUnfinalized when the outcome is left to
        restart recovery (nothing to do now)."""
        ...
