"""Startup's decision for a claim a stopped process left unsettled."""

from __future__ import annotations

import itertools

import pytest

from clarion.domain.lifecycle import (
    CLAIMED,
    DELIVER,
    DISPATCH_UNKNOWN,
    RESTORE_CLAIM,
    RETIRE_INTENT,
    TRANSITIONS,
)
from clarion.domain.unsettled_claims import settle_unfinished_claim, successor_is_kept


def test_a_successor_is_kept_once_attempted_or_referenced() -> None:
    assert successor_is_kept(attempted=True, referenced=False)
    assert successor_is_kept(attempted=False, referenced=True)
    assert not successor_is_kept(attempted=False, referenced=False)


@pytest.mark.parametrize("still_current", [True, False])
def test_a_kept_successor_the_agent_referenced_is_delivered(still_current: bool) -> None:
    settled = settle_unfinished_claim(
        successor_kept=True, agent_referenced_successor=True, still_current=still_current
    )
    assert settled is DELIVER


@pytest.mark.parametrize("still_current", [True, False])
def test_a_kept_successor_the_agent_never_referenced_reads_ambiguous(still_current: bool) -> None:
    settled = settle_unfinished_claim(
        successor_kept=True, agent_referenced_successor=False, still_current=still_current
    )
    assert settled is DISPATCH_UNKNOWN


def test_without_a_kept_successor_a_current_claim_is_restored() -> None:
    settled = settle_unfinished_claim(
        successor_kept=False, agent_referenced_successor=False, still_current=True
    )
    assert settled is RESTORE_CLAIM


def test_without_a_kept_successor_a_claim_no_longer_current_has_its_intent_retired() -> None:
    settled = settle_unfinished_claim(
        successor_kept=False, agent_referenced_successor=False, still_current=False
    )
    assert settled is RETIRE_INTENT


@pytest.mark.parametrize("facts", list(itertools.product([True, False], repeat=3)))
def test_every_decision_is_a_transition_of_the_table_that_leaves_a_claim(
    facts: tuple[bool, bool, bool],
) -> None:
    kept, referenced, current = facts
    settled = settle_unfinished_claim(
        successor_kept=kept, agent_referenced_successor=referenced, still_current=current
    )
    assert settled in TRANSITIONS
    assert settled.allowed_from(CLAIMED)
