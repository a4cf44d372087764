"""What startup makes of a claimed answer whose hand-off a stopped process left unfinished.

Pure. The claimed rows still carry the delivery intent; startup settles each claim by one
transition of the table (domain/lifecycle.py), decided here from what the store found under
the startup lock, and the store applies exactly that transition to exactly those rows.
"""

from __future__ import annotations

from clarion.domain.lifecycle import (
    DELIVER,
    DISPATCH_UNKNOWN,
    RESTORE_CLAIM,
    RETIRE_INTENT,
    Transition,
)


def successor_is_kept(*, attempted: bool, referenced: bool) -> bool:
    """A reservation is kept once the agent may have had the prompt: the attempt marker is set
    (the hand-over began) or the agent's output already references the successor turn."""
    return attempted or referenced


def settle_unfinished_claim(
    *, successor_kept: bool, agent_referenced_successor: bool, still_current: bool
) -> Transition:
    """The transition for a claim's rows at startup.

    A kept successor stays authoritative and the answer terminal: DELIVER when the agent's
    output references the successor (it had the prompt), else DISPATCH_UNKNOWN (the person may
    resend). Without a kept successor (a deleted reservation, or an intent no reservation
    owns) nothing reached the agent: RESTORE_CLAIM while every row is still its session's
    current question in a live session, else RETIRE_INTENT (terminal history)."""
    if successor_kept:
        return DELIVER if agent_referenced_successor else DISPATCH_UNKNOWN
    return RESTORE_CLAIM if still_current else RETIRE_INTENT
