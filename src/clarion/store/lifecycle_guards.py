"""Each transition's guard, derived from the transition table (domain/lifecycle.py).

Store-internal. A transition applies to the rows whose record reads one of its `sources`,
that carry what its `when` and `unless` ask, in a live session when it says `live_session`,
and in their session's current turn when it leads into an active state. Nothing else decides
which rows a transition changes: every guarded write selects its rows through `guard`, under
the session lock, and applies the transition to exactly those.

A row's record reads a state by the facts `bundle_state` (domain/bundles.py) reads, row by
row: pending (a missing, empty or `pending` status), claimed (the delivery intent), detached
(`agent_disconnected`) and in the current turn. Which process holds a waiter is not durable:
here a pending row not recorded detached reads live, and the startup detach records it. A
session's end is read only by the transitions that ask for a live session (EXPIRE runs as the
session ends, and a claim settles whatever the session did meanwhile).

`current` is the caller's way to say "in its session's current turn" (one session's turn
computed once, a correlated check per row, or the (session, turn) pairs startup computed);
the derivation is the same for each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import and_, false, not_, or_
from sqlalchemy.sql.elements import ColumnElement

from clarion.domain.lifecycle import (
    ACTIVE,
    CLAIMED,
    DETACHED,
    FLAG_KEYS,
    LIVE,
    SUPERSEDED,
    TERMINAL,
    Transition,
)
from clarion.domain.models import BundleState, MetaKey
from clarion.store.db.portable_sql import flag, meta_text
from clarion.store.db.predicates import (
    clarification_rows,
    in_current_turn,
    session_not_terminal,
    status_pending,
)
from clarion.store.db.schema import task_session_messages as messages

PENDING, CLAIMED_FACT, DETACHED_FACT, CURRENT = "pending", "claimed", "detached", "current"
Facts = Mapping[str, bool]

# What a row records in each state: the facts that must hold (True) or not (False); a fact
# not named may be either.
RECORDED: Mapping[BundleState, Facts] = {
    LIVE: {PENDING: True, CLAIMED_FACT: False, DETACHED_FACT: False, CURRENT: True},
    DETACHED: {PENDING: True, CLAIMED_FACT: False, DETACHED_FACT: True, CURRENT: True},
    CLAIMED: {CLAIMED_FACT: True},
    TERMINAL: {PENDING: False, CLAIMED_FACT: False},
    SUPERSEDED: {PENDING: True, CURRENT: False},
}


def merged(states: Iterable[BundleState]) -> list[dict[str, bool]]:
    """The facts of `states` as few alternatives as they merge into: two that differ only in
    one fact's truth are one that does not name it (LIVE or DETACHED: pending in the current
    turn, detached or not). Fewer alternatives, a simpler WHERE for the planner."""
    alternatives: list[dict[str, bool]] = [dict(RECORDED[s]) for s in sorted(states)]
    changed = True
    while changed:
        changed = False
        for i, a in enumerate(alternatives):
            for b in alternatives[i + 1 :]:
                differing = [k for k in a.keys() | b.keys() if a.get(k) != b.get(k)]
                if len(differing) == 1 and differing[0] in a and differing[0] in b:
                    key = differing[0]
                    alternatives.remove(b)
                    del a[key]
                    changed = True
                    break
            if changed:
                break
    return alternatives


def _fact(name: str, truth: bool, current: ColumnElement[bool]) -> ColumnElement[bool]:
    expression = {
        PENDING: lambda: status_pending(messages),
        CLAIMED_FACT: lambda: flag(messages.c.metadata, MetaKey.RESPONSE_DELIVERY_PENDING),
        DETACHED_FACT: lambda: flag(messages.c.metadata, MetaKey.AGENT_DISCONNECTED),
        CURRENT: lambda: current,
    }[name]()
    return expression if truth else not_(expression)


def _recorded(key: str, value: Any) -> ColumnElement[bool]:
    """The row carries `key` (with `value`; a flag key: set)."""
    if key in FLAG_KEYS:
        return flag(messages.c.metadata, key)
    if value is None:
        return meta_text(messages.c.metadata, key) != ""
    return meta_text(messages.c.metadata, key) == str(value)


def guard(
    transition: Transition, *, current: ColumnElement[bool] | None = None
) -> ColumnElement[bool]:
    """The WHERE clause of the rows `transition` applies to (see the module docstring).
    ValueError for a transition no row records (it creates the bundle, or writes nothing)."""
    states = {s for s in transition.sources if s is not None}
    if not transition.writes or not states or len(states) != len(transition.sources):
        raise ValueError(f"{transition} has no guard: no existing row records it")
    now_current = in_current_turn() if current is None else current
    alternatives = merged(states)
    parts: list[ColumnElement[bool]] = [clarification_rows()]
    parts.append(
        or_(*(and_(*(_fact(k, v, now_current) for k, v in alt.items())) for alt in alternatives))
        if alternatives
        else false()
    )
    if transition.targets <= ACTIVE and not all(alt.get(CURRENT) for alt in alternatives):
        parts.append(now_current)  # an active bundle is in its session's current turn
    if transition.live_session:
        parts.append(session_not_terminal(messages.c.task_session_id))
    parts.extend(_recorded(key, value) for key, value in transition.when.items())
    parts.extend(not_(_recorded(key, None)) for key in transition.unless)
    return and_(*parts)
