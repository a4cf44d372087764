"""Who may answer a question from Slack: with access control on, a Slack user must be mapped
to a Clarion user (`[slack.users]`) and that user must see the question's task (its
workspace, or an escalation to them). A refused click or submission writes nothing; the
person is told why (an ephemeral message, or an error in the modal)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from clarion.domain.errors import NotFound
from clarion.domain.models import Bundle
from clarion.orchestrator.access import AccessControl, Caller
from clarion.ports.slack import SlackStore

log = logging.getLogger(__name__)

UNMAPPED = (
    "Your Slack account is not linked to a Clarion user, so Clarion cannot take your answer."
    " Ask an administrator to add you under [slack.users]."
)
NO_ACCESS = "You have no access to this task in Clarion, so your answer was not taken."


class Refusals:
    def __init__(self, users: Mapping[str, str], store: SlackStore, access: AccessControl) -> None:
        self._users = users
        self._store = store
        self._access = access

    def user_of(self, slack_user: str) -> str | None:
        """The Clarion user a Slack user answers as, or None when unmapped."""
        return self._users.get(slack_user)

    async def refusal(self, slack_user: str, bundle: Bundle) -> str | None:
        """Why this Slack user may not answer (access control on), or None."""
        if not self._access.enabled:
            return None
        user = self.user_of(slack_user)
        reason = None
        if user is None:
            reason = UNMAPPED
        else:
            workspaces = await self._store.user_workspaces(user)
            try:
                if workspaces is None:
                    raise NotFound("unknown user")
                await self._access.require_bundle(
                    Caller(user=user, workspaces=workspaces), bundle.pending_id, escalated=True
                )
            except NotFound:
                reason = NO_ACCESS
        if reason is not None:
            log.info(
                "slack interaction refused",
                extra={"pending_id": bundle.pending_id, "slack_user": slack_user, "user": user},
            )
        return reason
