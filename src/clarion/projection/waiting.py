"""What a bundle read and an inbox item show of the question's waiting policy: since when it
waits, the next reminder, who it was escalated to, when it expires and what then, and who
answered it. A bundle asked under no policy reads `keep`, with nothing due."""

from __future__ import annotations

from typing import Any

from clarion.domain.bundles import answered_by, asked_under_policy
from clarion.domain.models import Bundle
from clarion.domain.waiting import OnExpiry
from clarion.domain.wire import iso
from clarion.ports import DeadlineRecord


def needs_deadlines(bundle: Bundle) -> bool:
    """Whether the read must look up the bundle's deadline row (only a policy's bundles)."""
    return asked_under_policy(bundle)


def waiting_wire(bundle: Bundle, record: DeadlineRecord | None) -> dict[str, Any]:
    since = min(row.created_at for row in bundle.rows)
    wire: dict[str, Any] = {
        "waiting_since": iso(since),
        "remind_at": None,
        "escalated_to": [],
        "expires_at": None,
        "on_expiry": OnExpiry.KEEP.value,
        "answered_by": answered_by(bundle),
    }
    if record is None:
        return wire
    due = record.deadlines
    waiting = record.next_due_at is not None
    wire["remind_at"] = iso(due.remind_at) if waiting and due.remind_at else None
    wire["escalated_to"] = list(due.escalate_to) if record.escalated_at is not None else []
    wire["expires_at"] = iso(record.scheduled_expiry) if record.scheduled_expiry else None
    wire["on_expiry"] = due.on_expiry.value
    return wire
