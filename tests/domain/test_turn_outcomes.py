"""A turn's outcome as the metadata it records."""

from __future__ import annotations

from clarion.domain.models import MetaKey
from clarion.domain.turn_outcomes import TurnEnd, TurnOutcome, recorded


def test_an_interrupted_turn_records_the_interrupted_flag() -> None:
    assert recorded(TurnOutcome.INTERRUPTED) == {MetaKey.INTERRUPTED: True}
    # A copy: a caller that adds to it never changes the table.
    recorded(TurnOutcome.INTERRUPTED)["other"] = 1
    assert recorded(TurnOutcome.INTERRUPTED) == {MetaKey.INTERRUPTED: True}


def test_a_finished_turn_records_its_stop_reason_and_only_what_it_knows() -> None:
    assert TurnEnd(stop_reason="end_turn").recorded() == {MetaKey.STOP_REASON: "end_turn"}
    failed = TurnEnd(stop_reason="refusal", error="the agent exited")
    assert failed.recorded() == {MetaKey.STOP_REASON: "refusal", MetaKey.ERROR: "the agent exited"}
    assert TurnEnd(agent_context="Which one?").recorded() == {MetaKey.AGENT_CONTEXT: "Which one?"}
    # Nothing known, nothing written: completing never erases what the row says.
    assert TurnEnd().recorded() == {}


def test_an_outcome_and_the_details_are_recorded_together() -> None:
    end = TurnEnd(outcome=TurnOutcome.INTERRUPTED, error="restarted")
    assert end.recorded() == {MetaKey.INTERRUPTED: True, MetaKey.ERROR: "restarted"}
