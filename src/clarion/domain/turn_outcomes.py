"""How a turn ended, as its row records it. Pure.

A service names the outcome; the store writes on the turn's metadata what `recorded` says, so
the keys (`MetaKey`) stay in the domain and the store. Today one outcome is recorded this way:
a turn a restart found open is completed as interrupted (its prompt's end is unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
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
