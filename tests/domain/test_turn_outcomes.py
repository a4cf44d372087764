"""A turn's outcome as the metadata it records."""

from __future__ import annotations

from clarion.domain.models import MetaKey
from clarion.domain.turn_outcomes import TurnOutcome, recorded


def test_an_interrupted_turn_records_the_interrupted_flag() -> None:
    assert recorded(TurnOutcome.INTERRUPTED) == {MetaKey.INTERRUPTED: True}
    # A copy: a caller that adds to it never changes the table.
    recorded(TurnOutcome.INTERRUPTED)["other"] = 1
    assert recorded(TurnOutcome.INTERRUPTED) == {MetaKey.INTERRUPTED: True}
