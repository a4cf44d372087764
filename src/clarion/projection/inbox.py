"""Inbox items: one wire shape for a waiting question bundle or permission request.

Imported by the read models. A store entry names a candidate; a clarification is an item only
while its bundle is claimable (active, live or detached), so a bundle whose answer is being
handed over is not offered again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from clarion.domain.errors import NotFound
from clarion.domain.models import BundleState
from clarion.domain.permissions import PermissionKey
from clarion.domain.wire import iso
from clarion.ports import InboxEntry

ACTIONABLE = frozenset({BundleState.ACTIVE_LIVE.value, BundleState.ACTIVE_DETACHED.value})

BundleView = Callable[[str], Awaitable[dict[str, Any]]]


async def inbox_item(entry: InboxEntry, bundle_view: BundleView) -> dict[str, Any] | None:
    """The item's wire shape, or None when it is no longer actionable."""
    item: dict[str, Any] = {
        "kind": entry.kind,
        "id": entry.id,
        "task": {"id": entry.task_id, "title": entry.task_title},
        "session_id": entry.session_id,
        "created_at": iso(entry.created_at),
    }
    if entry.kind == "permission":
        item["state"] = "pending"
        item["tool_call"] = dict(entry.metadata.get(PermissionKey.TOOL_CALL) or {})
        item["options"] = [dict(o) for o in entry.metadata.get(PermissionKey.OPTIONS) or []]
        return item
    try:
        bundle = await bundle_view(entry.id)
    except NotFound:
        return None  # gone between the two reads
    if bundle["state"] not in ACTIONABLE:
        return None
    item["state"] = bundle["state"]
    item["questions"] = bundle["questions"]
    return item
