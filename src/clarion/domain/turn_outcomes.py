"""How a turn ended, as its row records it. Pure.

A service names the outcome, or says how the turn ended (`TurnEnd`); the store writes on the
turn's metadata what `recorded` says, so the keys (`MetaKey`) stay in the domain and the store. A
turn a restart found open is completed as interrupted (its prompt's end is unknown); one the
agent finished records its stop reason, and its error or its last words when there are any.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from clarion.domain.models import MetaKey


class TurnOutcome(StrEnum):
    INTERRUPTED = "interrupted"


_RECORDED: Mapping[TurnOutcome, Mapping[str, object]] = {
    TurnOutcome.INTERRUPTED: {MetaKey.INTERRUPTED: True},
}


def recorded(outcome: TurnOutcome) -> dict[str, object]:
    """What a turn's metadata gains when it ends with `outcome`."""
    return dict(_RECORDED[outcome])


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """How a turn ended, as the service that completes it knows it; None fields are not
    recorded, so completing a turn never erases what its row already says."""

    outcome: TurnOutcome | None = None
    stop_reason: str | None = None
    error: str | None = None
    agent_context: str | None = None

    def recorded(self) -> dict[str, object]:
        """What the turn's metadata gains."""
        gained = recorded(self.outcome) if self.outcome is not None else {}
        for key, value in (
            (MetaKey.STOP_REASON, self.stop_reason),
            (MetaKey.ERROR, self.error),
            (MetaKey.AGENT_CONTEXT, self.agent_context),
        ):
            if value is not None:
                gained[key] = value
        return gained
