"""Startup recovery's view of the store (RecoveryStore).

Every step takes a scope: it acts only on rows of sessions inside it (a server's own startup:
every session; a cluster replica's adoption: the sessions it adopted). Rows outside the scope
are neither read for a decision nor changed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from clarion.domain.lifecycle import Transition
from clarion.domain.models import (
    Message,
    Session,
    SessionState,
    Turn,
)
from clarion.domain.scope import SessionScope
from clarion.domain.turn_outcomes import TurnOutcome
from clarion.ports.store.lookups import Lookups
from clarion.ports.store.records import (
    ChangedBundle,
    IntentRecovery,
    ReservationRecovery,
)


class RecoveryStore(Lookups, Protocol):
    """Startup recovery, in the contract's order; every step harmless to repeat.

    The bundle steps apply transitions of `domain.lifecycle`: `reconcile_reservations`
    DELIVER or DISPATCH_UNKNOWN on kept reservations' rows, RESTORE_CLAIM or RETIRE_INTENT on
    deleted ones'; `reconcile_intents` RESTORE_CLAIM or RETIRE_INTENT; `transition_all_bundles`
    the transition the caller names (DETACH, RELEASE_RESEND, MARK_UNREAD)."""

    async def reconcile_reservations(
        self, *, scope: SessionScope = ...
    ) -> list[ReservationRecovery]:
        """Startup, one transaction: every unpublished reservation is kept (attempted or
        referenced: rows finalized, `delivery` recorded, start marker set) or deleted with exactly
        its claimed rows restored while current. Raises CorruptReservationError, changing nothing,
        when any reservation's recovery metadata is malformed.
        """
        ...

    async def reconcile_intents(self, *, scope: SessionScope = ...) -> list[IntentRecovery]:
        """Startup, one transaction: every delivery intent no reservation owns is restored to
        pending while its turn is current and the session live, else retired as terminal history.
        """
        ...

    async def expire_stale_permissions(
        self, *, reason: str, scope: SessionScope = ...
    ) -> tuple[Message, ...]:
        """Startup: every request the previous process left pending -> expired; changed rows."""
        ...

    async def list_start_marked_turns(self, *, scope: SessionScope = ...) -> list[Turn]:
        """Kept successors whose `session.turn.started` is still to be published (start marker)."""
        ...

    async def clear_start_markers(self, turn_ids: Sequence[str]) -> list[str]:
        """Drop the start marker of these turns, in one transaction; the ids it cleared."""
        ...

    async def transition_all_bundles(
        self, transition: Transition, *, scope: SessionScope = ...
    ) -> tuple[ChangedBundle, ...]:
        """Startup's guarded call of a transition on every bundle in the scope in a state it
        leaves, in one transaction: DETACH every current-turn pending bundle of a live session
        not yet detached (no waiter survives a stop); RELEASE_RESEND every resend a stopped
        process left in flight (it reads ambiguous again); MARK_UNREAD, before open turns are
        completed, every live-delivered answer in an open turn after which the agent wrote
        nothing (the process may have died between the confirmation and the tool result: its
        rows read `delivery: "ambiguous"`). Returns the bundles it changed, by
        (session_id, pending_id), so a repeat returns (); only their keys: startup never needs
        the rows themselves, and reading thousands of them back would cost more than marking
        them. ValueError for another transition."""
        ...

    async def complete_open_turns(
        self,
        *,
        outcome: TurnOutcome,
        scope: SessionScope = ...,
    ) -> list[Turn]:
        """`complete_turn` for every open authoritative turn, across sessions, in one transaction,
        recording `outcome` on each. Returns the turns as completed."""
        ...

    async def list_sessions_in_states(self, states: Sequence[SessionState]) -> list[Session]:
        """Every session in one of `states`, across tasks."""
        ...

    async def transition_sessions(
        self,
        session_ids: Sequence[str],
        to: SessionState,
        *,
        allowed_from: Sequence[SessionState] | None = None,
    ) -> list[str]:
        """`transition_session` for many sessions in one transaction; the ids that moved."""
        ...
