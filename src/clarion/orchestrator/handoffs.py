"""The orchestrator's side of the respond path's hand-offs (`clarification.handoffs`).

A claimed answer leaves the resolver through exactly one of these: the watchdog armed inside a
live confirmation, or a detached resume. Both carry the same resume prompt, built here once.
"""

from __future__ import annotations

from clarion.domain.bundles import questions_of
from clarion.domain.models import ClarificationResponse, Turn
from clarion.domain.prompts import resume_prompt
from clarion.orchestrator.resume import DetachedResume
from clarion.orchestrator.watchdog import Watchdogs
from clarion.ports import ClaimResult


def prompt_for(claim: ClaimResult, response: ClarificationResponse) -> str:
    """The prompt that carries this claimed answer to the agent as a new turn."""
    return resume_prompt(questions_of(claim.bundle), response)


class OrchestratorHandoffs:
    """Implements `clarification.handoffs.AnswerHandoffs`."""

    def __init__(self, resume: DetachedResume, watchdogs: Watchdogs) -> None:
        self._resume = resume
        self._watchdogs = watchdogs

    def arm_watchdog(self, claim: ClaimResult, response: ClarificationResponse) -> None:
        bundle = claim.bundle
        self._watchdogs.arm(
            bundle.session.id,
            bundle.pending_id,
            claim.claimed[0].turn_id or "",
            prompt_for(claim, response),
        )

    async def resume_detached(self, claim: ClaimResult, response: ClarificationResponse) -> Turn:
        return await self._resume.resume(claim, prompt_for(claim, response))
