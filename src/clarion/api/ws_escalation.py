"""What a WebSocket client receives of a task outside its workspaces: the events of the
questions a waiting policy escalated to it, and nothing else.

A user a question was escalated to may read it (`GET /clarification/{id}`, whose `rows` are
the question's own messages) and answer it, so that question's live events are theirs too:
each `clarification.waiting.updated` naming them in `escalated_to` (the escalation itself, the
reminders after it, the expiry), and the `session.message.*` events of the question's rows
(its answer, a detach, a cancellation). Those row events lose `pending_action` and its
revision, which describe the whole session, not the question. Everything else of that task
(its other messages, turns, session state, summary) stays its workspace's.
"""

from __future__ import annotations

from typing import Any

from clarion.domain.bundles import policy_question_id
from clarion.domain.models import MessageType
from clarion.orchestrator.access import AccessControl, Caller
from clarion.ports import Event

WAITING_UPDATED = "clarification.waiting.updated"
ROW_EVENTS = frozenset(
    {"session.message.added", "session.message.updated", "session.message.deleted"}
)
# The session's pending projection: the escalated user may not see the session.
SESSION_FIELDS = frozenset({"pending_action", "pending_action_revision"})


async def escalated_view(
    access: AccessControl, caller: Caller, event: Event
) -> dict[str, Any] | None:
    """The payload `caller` receives of an event of a task it cannot see, or None."""
    if caller.user is None:
        return None
    payload = event.payload
    if event.type == WAITING_UPDATED:
        # The payload names whom the question was escalated to: no read needed.
        escalated = payload.get("escalated_to")
        return dict(payload) if isinstance(escalated, list) and caller.user in escalated else None
    if event.type not in ROW_EVENTS or payload.get("type") != MessageType.CLARIFICATION_REQUEST:
        return None
    metadata = payload.get("metadata")
    # Only a question asked under a waiting policy can be escalated: others cost no read.
    pending_id = policy_question_id(metadata) if isinstance(metadata, dict) else None
    if pending_id is None or not await access.escalated_to(caller, pending_id):
        return None
    return {key: value for key, value in payload.items() if key not in SESSION_FIELDS}
