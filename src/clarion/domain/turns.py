"""Which turn of a session is current, which turns are authoritative, and which are visible.

Pure reference rules; the SQL store implements the same rules in queries and its contract
tests are checked against these functions. Anyone may import this module.

- A reservation is a turn carrying `prompt_dispatch_pending`: a successor turn reserved for a
  detached answer and not yet published. It becomes authoritative once it is marked
  `prompt_dispatch_attempted` (dispatch may have happened) or once a message references it
  (durable evidence that the agent may have accepted it).
- A lifecycle turn (`lifecycle_only`) records an agent process start; it is history, never
  current-turn authority, however recent.
- The current turn is the best authoritative conversational turn: an open turn
  (`completed_at` is None) beats any completed one whatever the timestamps, then the newest
  `started_at`, then `created_at`, then `id`.
- Visible history lists every turn but unpublished reservations (hidden even when attempted,
  until a message references them), lifecycle turns included, oldest first by `started_at`,
  `created_at`, `id`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any

from clarion.domain.flags import flag
from clarion.domain.models import DISPATCH_KEYS, MetaKey, Turn


def is_reservation(turn: Turn) -> bool:
    """An unpublished successor reservation: it still carries `prompt_dispatch_pending`."""
    return flag(turn.metadata, MetaKey.PROMPT_DISPATCH_PENDING)


def is_attempted(turn: Turn) -> bool:
    """The at-most-once boundary was recorded: dispatch may have reached the agent."""
    return flag(turn.metadata, MetaKey.PROMPT_DISPATCH_ATTEMPTED)


def is_lifecycle(turn: Turn) -> bool:
    """A lifecycle record (agent process start), never current-turn authority."""
    return flag(turn.metadata, MetaKey.LIFECYCLE_ONLY)


def is_authoritative(turn: Turn, referenced: bool) -> bool:
    """Whether the turn is durable authority: not a reservation, or attempted, or referenced.

    `referenced` says whether some message names this turn; an empty reservation carrying only
    the pending marker is not authority, but message evidence makes it so.
    """
    return not is_reservation(turn) or is_attempted(turn) or referenced


def _current_rank(turn: Turn) -> tuple[bool, datetime, datetime, str]:
    # An open turn outranks every completed turn regardless of timestamps.
    return (turn.completed_at is None, turn.started_at, turn.created_at, turn.id)


def current_turn(turns: Iterable[Turn], referenced_ids: Collection[str]) -> Turn | None:
    """The session's current turn among `turns` (all of one session), or None.

    `referenced_ids` holds the ids of turns that some message references.
    """
    candidates = [
        t for t in turns if not is_lifecycle(t) and is_authoritative(t, t.id in referenced_ids)
    ]
    if not candidates:
        return None
    return max(candidates, key=_current_rank)


def is_visible(turn: Turn, referenced: bool) -> bool:
    """Whether `/turns` lists the turn: everything but an unreferenced reservation."""
    return not is_reservation(turn) or referenced


def _history_rank(turn: Turn) -> tuple[datetime, datetime, str]:
    return (turn.started_at, turn.created_at, turn.id)


def visible_history(turns: Iterable[Turn], referenced_ids: Collection[str]) -> list[Turn]:
    """Durable turn history as `/turns` shows it: ascending, unpublished reservations hidden."""
    visible = [t for t in turns if is_visible(t, t.id in referenced_ids)]
    return sorted(visible, key=_history_rank)


def public_metadata(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """Turn metadata without the private dispatch keys, for events and history."""
    if not meta:
        return {}
    return {k: v for k, v in meta.items() if k not in DISPATCH_KEYS}
