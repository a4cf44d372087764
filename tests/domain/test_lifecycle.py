"""The bundle's transition table (domain/lifecycle.py): every transition that writes moves a
bundle from each state it leaves to a state it declares, no other state lets it go, and the state
table of docs/lifecycle.md is derived from it (who may write the keys:
test_lifecycle_confinement.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clarion.domain import lifecycle
from clarion.domain.bundles import bundle_state
from clarion.domain.lifecycle import TRANSITIONS, Transition, claim_values
from clarion.domain.models import (
    BundleState,
    ClarificationResponse,
    Message,
    MetaKey,
    SessionState,
)

from .builders import PENDING_ID, bundle, question_meta, row
from .builders import question as make_question

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "clarion"
B = BundleState
QUESTION = make_question("q1", "a", "b")


def _row(**metadata: Any) -> Message:
    return row(
        "m1", turn_id="turn-1", question_id="q1", question=question_meta(QUESTION), **metadata
    )


# A bundle in each state, as its rows record it, with whether a waiter holds it.
SAMPLES: dict[BundleState, list[tuple[Message, str, bool]]] = {
    B.ACTIVE_LIVE: [(_row(status="pending"), "turn-1", True)],
    B.ACTIVE_DETACHED: [
        (_row(status="pending", agent_disconnected=True), "turn-1", False),
        (_row(status="pending"), "turn-1", False),  # a crash before the detach was written
    ],
    B.DELIVERY_CLAIMED: [
        (
            _row(status="answered", response={"question_id": "q1"}, response_delivery_pending=True),
            "turn-1",
            live,
        )
        for live in (True, False)
    ],
    B.TERMINAL: [
        (_row(status="answered", delivery="ambiguous"), "turn-1", False),
        (_row(status="answered", delivery="ambiguous", resend_pending=True), "turn-1", False),
        (_row(status="answered", delivery="delivered"), "turn-1", False),
    ],
    B.SUPERSEDED_HISTORY: [(_row(status="pending"), "turn-2", False)],
}

RESPONSE = ClarificationResponse(
    pending_id=PENDING_ID, answers=(), rejected=True, reject_reason="", responded_at=None
)


def _state(message: Message, current: str, live: bool) -> BundleState:
    b = bundle(message, current_turn_id=current, state=SessionState.WAITING_FOR_INPUT)
    return bundle_state(b, has_live_waiter=live)


def _values(transition: Transition, message: Message) -> dict[str, Any]:
    if transition is lifecycle.CLAIM:
        return claim_values(message, RESPONSE)
    if transition is lifecycle.FINISH_RESEND:
        return lifecycle.resent_by("turn-9")
    return {}


def test_the_samples_are_in_the_states_they_stand_for() -> None:
    for state, samples in SAMPLES.items():
        for message, current, live in samples:
            assert _state(message, current, live) is state


def _writing_moves() -> Iterator[tuple[Transition, BundleState]]:
    for transition in TRANSITIONS:
        if transition.writes:
            for source in sorted(s for s in transition.sources if s is not None):
                yield transition, source


@pytest.mark.parametrize(("transition", "source"), list(_writing_moves()), ids=str)
def test_a_transition_moves_a_bundle_only_to_a_state_it_declares(
    transition: Transition, source: BundleState
) -> None:
    for message, current, live in SAMPLES[source]:
        changed = transition.change(message.metadata, _values(transition, message))
        after = Message(**{**_fields(message), "metadata": changed})
        # A waiter outlives the change only when the change hands the bundle back to it.
        waiter_kept = live and B.ACTIVE_LIVE in transition.targets
        assert _state(after, current, waiter_kept) in transition.targets


def _fields(message: Message) -> dict[str, Any]:
    return {name: getattr(message, name) for name in Message.__dataclass_fields__}


def test_each_transition_writes_only_lifecycle_keys() -> None:
    for transition in TRANSITIONS:
        written = set(transition.drops) | set(transition.sets) | set(transition.fills)
        assert written <= lifecycle.LIFECYCLE_KEYS, transition.name
        if not transition.writes:
            assert not transition.drops and not transition.fills, transition.name


def test_detach_leaves_only_a_live_bundle_once() -> None:
    # The seed moves active_live -> active_detached once: a bundle recorded detached is not
    # detached again (nothing written, nothing announced).
    assert lifecycle.DETACH.sources == {B.ACTIVE_LIVE}


@pytest.mark.parametrize(
    ("transition", "allowed"),
    [
        (lifecycle.MARK_UNREAD, [False, False, True]),
        (lifecycle.CLAIM_RESEND, [True, False, False]),
        (lifecycle.RELEASE_RESEND, [False, True, False]),
        (lifecycle.FINISH_RESEND, [False, True, False]),
    ],
    ids=str,
)
def test_a_terminal_bundles_transitions_ask_their_delivery_record(
    transition: Transition, allowed: list[bool]
) -> None:
    # The terminal samples: ambiguous, a resend in flight, delivered.
    records = [message.metadata for message, _, _ in SAMPLES[B.TERMINAL]]
    assert [transition.records_allow(m) for m in records] == allowed
    resent = {**records[2], MetaKey.RESENT_TURN_ID: "turn-9"}
    assert not lifecycle.MARK_UNREAD.records_allow(resent)


def test_a_transition_refuses_to_write_a_value_it_does_not_declare() -> None:
    with pytest.raises(ValueError, match="does not write"):
        lifecycle.CANCEL.change({}, {MetaKey.DELIVERY: "delivered"})


def test_names_are_unique_and_every_state_is_reachable() -> None:
    assert len(lifecycle.BY_NAME) == len(TRANSITIONS)
    for state in BundleState:
        assert lifecycle.into(state), state


# ------------------------------------------------------------- docs/lifecycle.md, derived


def _doc_state_table() -> dict[str, set[str]]:
    """State -> the transitions docs/lifecycle.md names in its "reached by" column."""
    text = (ROOT / "docs" / "lifecycle.md").read_text()
    section = text.split("## States", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        table[cells[0].strip("`")] = set(re.findall(r"`([a-z_]+)`", cells[-1]))
    return table


def test_the_docs_state_table_is_the_transition_table() -> None:
    documented = _doc_state_table()
    assert set(documented) == {s.value for s in BundleState}
    for state in BundleState:
        derived = {t.name for t in lifecycle.into(state)}
        assert documented[state.value] == derived, (
            f"docs/lifecycle.md: `{state}` is reached by {sorted(derived)} per the table, "
            f"the page says {sorted(documented[state.value])}"
        )


# The paths between states the system design names, each of which the table must allow.
SEED_PATHS = [
    (None, B.ACTIVE_LIVE),
    (B.ACTIVE_LIVE, B.ACTIVE_DETACHED),
    (B.ACTIVE_LIVE, B.DELIVERY_CLAIMED),
    (B.ACTIVE_DETACHED, B.DELIVERY_CLAIMED),
    (B.DELIVERY_CLAIMED, B.TERMINAL),
    (B.DELIVERY_CLAIMED, B.ACTIVE_LIVE),
    (B.DELIVERY_CLAIMED, B.ACTIVE_DETACHED),
    (B.ACTIVE_LIVE, B.TERMINAL),
    (B.ACTIVE_DETACHED, B.TERMINAL),
    (B.ACTIVE_LIVE, B.SUPERSEDED_HISTORY),
    (B.ACTIVE_DETACHED, B.SUPERSEDED_HISTORY),
]


@pytest.mark.parametrize(("source", "target"), SEED_PATHS, ids=str)
def test_every_path_of_the_design_is_a_transition_of_the_table(
    source: BundleState | None, target: BundleState
) -> None:
    assert any(source in t.sources and target in t.targets for t in TRANSITIONS)


def test_no_transition_leaves_a_terminal_or_superseded_bundle_for_an_active_state() -> None:
    settled = {B.TERMINAL, B.SUPERSEDED_HISTORY}
    for transition in TRANSITIONS:
        if transition.sources & settled:
            assert transition.targets <= settled, transition.name
