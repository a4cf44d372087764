"""A clarification bundle's lifecycle: its states and the table of allowed transitions.

Pure. A bundle's state is computed from its rows (`bundles.bundle_state`); it changes only by
one of the transitions below, each a named entry that says which states it leaves, which it
may reach and exactly what it writes on a row's metadata (kandev's keys, spelled by
`MetaKey`). The store applies a transition's `change` under the session lock, on the rows its
guard (derived from the entry) matches; the services name the transition and never touch a
metadata key themselves.

Some transitions write nothing: a newer turn supersedes a bundle, a lost waiter leaves it
detached. They are in the table so that every path between states is listed in one place.

To add a transition: declare it below with `Transition(...)` (its sources, its targets, the
keys it drops and sets, whether it moves `updated_at`, what else its rows must record), add it
to `TRANSITIONS`, name it in docs/lifecycle.md's state table ("reached by") and add it to the
registry of the store call that applies it (store/bundle_transitions.py): its guard is derived
from this entry (store/lifecycle_guards.py), never written by hand. tests/domain/test_lifecycle.py
checks the table against `bundle_state` and the docs, and
tests/store/test_store_lifecycle_properties.py the store against the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clarion.domain.bundles import question_of
from clarion.domain.flags import flag
from clarion.domain.models import (
    Answer,
    BundleState,
    ClarificationResponse,
    ClarificationStatus,
    Message,
    MetaKey,
    Receipt,
)
from clarion.domain.waiting import ANSWERED_BY_POLICY

LIVE = BundleState.ACTIVE_LIVE
DETACHED = BundleState.ACTIVE_DETACHED
CLAIMED = BundleState.DELIVERY_CLAIMED
TERMINAL = BundleState.TERMINAL
SUPERSEDED = BundleState.SUPERSEDED_HISTORY
ACTIVE = frozenset({LIVE, DETACHED})

# The keys a transition may write: the lifecycle's own, confined to this module and the store.
LIFECYCLE_KEYS = frozenset(
    {
        MetaKey.STATUS,
        MetaKey.RESPONSE,
        MetaKey.REJECT_REASON,
        MetaKey.AGENT_DISCONNECTED,
        MetaKey.RESPONSE_DELIVERY_PENDING,
        MetaKey.DELIVERY,
        MetaKey.RESEND_PENDING,
        MetaKey.RESENT_TURN_ID,
        MetaKey.ANSWERED_BY,
    }
)


# The keys that record a flag (set: true); every other key the table names holds a value.
FLAG_KEYS = frozenset(
    {
        MetaKey.AGENT_DISCONNECTED,
        MetaKey.RESPONSE_DELIVERY_PENDING,
        MetaKey.RESEND_PENDING,
    }
)


@dataclass(frozen=True, eq=False)
class Transition:
    """One allowed change of a bundle's state (one object per entry of the table, compared and
    hashed by identity).

    `sources`: the states it leaves (None: the bundle does not exist yet). `targets`: the states
    it may reach (more than one when the result also depends on whether a waiter holds the
    bundle). `drops`, then `sets`: what it writes on each row it acts on; `fills`: keys whose
    values the caller supplies (the claimed answer, the resend's turn). `stamps_time`: whether
    the row's `updated_at` moves (a claim's time is the response time, so settling keeps it).
    `writes`: False for a change no row records (a newer turn, a lost waiter).

    What the rows must record for it to apply, beside being in one of `sources`: `when`,
    keys with these values (a flag key: set); `unless`, keys they must not carry (a flag key:
    not set); `live_session`, that their session has not ended. The store derives each
    transition's guard from these and `sources` (store/lifecycle_guards.py), and from
    `targets`: a transition into an active state needs its rows in the current turn.
    """

    name: str
    sources: frozenset[BundleState | None]
    targets: frozenset[BundleState]
    drops: tuple[str, ...] = ()
    sets: Mapping[str, Any] = field(default_factory=dict)
    fills: tuple[str, ...] = ()
    stamps_time: bool = False
    writes: bool = True
    when: Mapping[str, Any] = field(default_factory=dict)
    unless: tuple[str, ...] = ()
    live_session: bool = False

    def change(
        self, metadata: Mapping[str, Any], values: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The row's metadata after this transition: `drops` removed, `sets` and the
        caller's `values` (only keys named in `fills`) written."""
        given = dict(values or {})
        unknown = set(given) - set(self.fills)
        if unknown:
            raise ValueError(f"{self.name} does not write {', '.join(sorted(unknown))}")
        kept = {k: v for k, v in metadata.items() if k not in self.drops}
        return {**kept, **self.sets, **given}

    def allowed_from(self, state: BundleState | None) -> bool:
        return state in self.sources

    def records_allow(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a row's metadata carries what `when` and `unless` ask (its state and its
        session aside): the Python reading of the conditions the store's guard derives."""
        for key, value in self.when.items():
            if not (flag(metadata, key) if key in FLAG_KEYS else metadata.get(key) == value):
                return False
        return not any(
            flag(metadata, key) if key in FLAG_KEYS else metadata.get(key) not in (None, "")
            for key in self.unless
        )

    def __str__(self) -> str:
        return self.name


ASK = Transition(
    "ask",
    sources=frozenset({None}),
    targets=frozenset({LIVE}),
    sets={MetaKey.STATUS: ClarificationStatus.PENDING.value},  # on the rows it creates
)
# Once: a bundle already recorded detached is not detached again (nothing written, nothing
# announced), as the seed's "moves active_live -> active_detached once" says.
DETACH = Transition(
    "detach",
    sources=frozenset({LIVE}),
    targets=frozenset({DETACHED}),
    sets={MetaKey.AGENT_DISCONNECTED: True},
    stamps_time=True,
)
LOSE_WAITER = Transition(
    "lose_waiter",
    sources=frozenset({LIVE}),
    targets=frozenset({DETACHED}),
    writes=False,  # a process that stops takes its waiters; startup then detaches
)
CLAIM = Transition(
    "claim",
    sources=ACTIVE,
    targets=frozenset({CLAIMED}),
    sets={MetaKey.RESPONSE_DELIVERY_PENDING: True},
    fills=(MetaKey.STATUS, MetaKey.RESPONSE, MetaKey.REJECT_REASON, MetaKey.ANSWERED_BY),
    stamps_time=True,
    live_session=True,
)
# The waiting policy's expiry answering, exactly as a person's claim does, and saying so. The
# store applies it only together with the claim of the question's expiry (store/deadlines.py).
CLAIM_BY_POLICY = Transition(
    "claim_by_policy",
    sources=ACTIVE,
    targets=frozenset({CLAIMED}),
    sets={MetaKey.RESPONSE_DELIVERY_PENDING: True, MetaKey.ANSWERED_BY: ANSWERED_BY_POLICY},
    fills=(MetaKey.STATUS, MetaKey.RESPONSE, MetaKey.REJECT_REASON),
    stamps_time=True,
    live_session=True,
)
RESTORE_CLAIM = Transition(
    "restore_claim",
    sources=frozenset({CLAIMED}),
    targets=ACTIVE,
    drops=(
        MetaKey.RESPONSE,
        MetaKey.REJECT_REASON,
        MetaKey.RESPONSE_DELIVERY_PENDING,
        MetaKey.ANSWERED_BY,
    ),
    sets={MetaKey.STATUS: ClarificationStatus.PENDING.value},
    stamps_time=True,
    live_session=True,
)
DELIVER = Transition(
    "deliver",
    sources=frozenset({CLAIMED}),
    targets=frozenset({TERMINAL}),
    drops=(MetaKey.RESPONSE_DELIVERY_PENDING,),
    sets={MetaKey.DELIVERY: Receipt.DELIVERED.value},
)
RETIRE_INTENT = Transition(
    "retire_intent",
    sources=frozenset({CLAIMED}),
    targets=frozenset({TERMINAL}),
    drops=(MetaKey.RESPONSE_DELIVERY_PENDING,),
)
DISPATCH_UNKNOWN = Transition(
    "dispatch_unknown",
    sources=frozenset({CLAIMED}),
    targets=frozenset({TERMINAL}),
    drops=(MetaKey.RESPONSE_DELIVERY_PENDING,),
    sets={MetaKey.DELIVERY: Receipt.AMBIGUOUS.value},
)
CANCEL = Transition(
    "cancel",
    sources=ACTIVE,
    targets=frozenset({TERMINAL}),
    sets={MetaKey.STATUS: ClarificationStatus.CANCELLED.value},
    stamps_time=True,
)
EXPIRE = Transition(
    "expire",
    sources=ACTIVE,
    targets=frozenset({TERMINAL}),
    sets={MetaKey.STATUS: ClarificationStatus.EXPIRED.value, MetaKey.AGENT_DISCONNECTED: True},
    stamps_time=True,
)
SUPERSEDE = Transition(
    "supersede",
    sources=ACTIVE,
    targets=frozenset({SUPERSEDED}),
    writes=False,  # a newer turn became current; the rows keep what they recorded
)
# A delivered answer the agent may not have read; one already resent stays as it is.
MARK_UNREAD = Transition(
    "mark_unread",
    sources=frozenset({TERMINAL}),
    targets=frozenset({TERMINAL}),
    sets={MetaKey.DELIVERY: Receipt.AMBIGUOUS.value},
    when={MetaKey.DELIVERY: Receipt.DELIVERED.value},
    unless=(MetaKey.RESENT_TURN_ID,),
)
# An ambiguous answer, while its session lives and no resend of it is in flight.
CLAIM_RESEND = Transition(
    "claim_resend",
    sources=frozenset({TERMINAL}),
    targets=frozenset({TERMINAL}),
    sets={MetaKey.RESEND_PENDING: True},
    when={MetaKey.DELIVERY: Receipt.AMBIGUOUS.value},
    unless=(MetaKey.RESEND_PENDING,),
    live_session=True,
)
RELEASE_RESEND = Transition(
    "release_resend",
    sources=frozenset({TERMINAL}),
    targets=frozenset({TERMINAL}),
    drops=(MetaKey.RESEND_PENDING,),
    when={MetaKey.RESEND_PENDING: True},
)
FINISH_RESEND = Transition(
    "finish_resend",
    sources=frozenset({TERMINAL}),
    targets=frozenset({TERMINAL}),
    drops=(MetaKey.RESEND_PENDING,),
    sets={MetaKey.DELIVERY: Receipt.DELIVERED.value},
    fills=(MetaKey.RESENT_TURN_ID,),
    when={MetaKey.RESEND_PENDING: True},
)

TRANSITIONS: tuple[Transition, ...] = (
    ASK,
    DETACH,
    LOSE_WAITER,
    CLAIM,
    CLAIM_BY_POLICY,
    RESTORE_CLAIM,
    DELIVER,
    RETIRE_INTENT,
    DISPATCH_UNKNOWN,
    CANCEL,
    EXPIRE,
    SUPERSEDE,
    MARK_UNREAD,
    CLAIM_RESEND,
    RELEASE_RESEND,
    FINISH_RESEND,
)
BY_NAME: Mapping[str, Transition] = {t.name: t for t in TRANSITIONS}


def into(state: BundleState) -> tuple[Transition, ...]:
    """The transitions that may reach `state` from another state."""
    return tuple(t for t in TRANSITIONS if state in t.targets and t.sources - {state})


def resent_by(turn_id: str) -> dict[str, Any]:
    """What FINISH_RESEND fills in: the turn the resend started."""
    return {MetaKey.RESENT_TURN_ID: turn_id}


def claim_values(message: Message, response: ClarificationResponse) -> dict[str, Any]:
    """What CLAIM (or CLAIM_BY_POLICY) fills in on one row: the provisional status and this
    row's part of the response (its question's answer, or the rejection reason)."""
    named = (
        {MetaKey.ANSWERED_BY: response.answered_by}
        if response.answered_by and not response.by_policy
        else {}
    )
    if response.rejected:
        return {
            MetaKey.STATUS: ClarificationStatus.REJECTED.value,
            MetaKey.REJECT_REASON: response.reject_reason,
            **named,
        }
    question_id = question_of(message).id
    answer = next(
        (a for a in response.answers if a.question_id == question_id),
        Answer(question_id=question_id),
    )
    return {
        MetaKey.STATUS: ClarificationStatus.ANSWERED.value,
        MetaKey.RESPONSE: {
            "question_id": question_id,
            "selected_options": list(answer.selected_options),
            "custom_text": answer.custom_text,
        },
        **named,
    }
