"""Inbox items: one wire shape for a waiting question bundle or permission request.

Imported by the read models. A store entry names a candidate; a clarification is an item only
while its bundle is claimable (active, live or detached), so a bundle whose answer is being
handed over is not offered again. The caller reads the bundles first (asking which ones a live
waiter holds once for the whole page), so building an item reads nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clarion.domain.models import BundleState
from clarion.domain.permissions import PermissionKey
from clarion.domain.wire import iso
from clarion.ports import InboxEntry

ACTIONABLE = frozenset({BundleState.ACTIVE_LIVE.value, BundleState.ACTIVE_DETACHED.value})


def inbox_item(entry: InboxEntry, bundle: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The item's wire shape, or None when it is no longer actionable. `bundle` is the
    clarification's bundle view (None when it is gone); a permission request ignores it."""
    item: dict[str, Any] = {
        "kind": entry.kind,
        "id": entry.id,
        "task": {"id": entry.task_id, "title": entry.task_title},
        "session_id": entry.session_id,
        "created_at": iso(entry.created_at),
        "task_description": entry.task_description,
        "last_agent_message": entry.last_agent_message,
    }
    if entry.kind == "permission":
        item["state"] = "pending"
        item["tool_call"] = dict(entry.metadata.get(PermissionKey.TOOL_CALL) or {})
        item["options"] = [dict(o) for o in entry.metadata.get(PermissionKey.OPTIONS) or []]
        return item
    if bundle is None:
        return None  # gone between the two reads
    if bundle["state"] not in ACTIONABLE:
        return None
    item["state"] = bundle["state"]
    item["questions"] = bundle["questions"]
    item["context"] = bundle.get("context") or ""
    for key in WAITING_KEYS:
        item[key] = bundle.get(key)
    return item


# The waiting policy's fields of the bundle view an inbox item repeats.
WAITING_KEYS = ("waiting_since", "remind_at", "escalated_to", "expires_at", "on_expiry")
