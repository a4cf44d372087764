"""The Slack channel's durable records, as the poster, the closer and the interaction queue
see them (SlackStore). Implemented by `clarion.store.slack.SqlSlack`."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from clarion.domain.models import Workspace
from clarion.domain.slack import SlackInteraction, SlackMessage


class SlackStore(Protocol):
    async def find_slack_message(self, pending_id: str) -> SlackMessage | None:
        """The message the bundle was posted as, or None while it was not (yet)."""
        ...

    async def record_slack_message(self, message: SlackMessage) -> bool:
        """Remember where the bundle's message is; False if one was already recorded (the
        first one stays)."""
        ...

    async def open_slack_messages(self, owner: str | None, limit: int) -> list[SlackMessage]:
        """Up to `limit` messages whose outcome has not been shown yet, oldest first: every
        one on a single server (`owner` None), those of replica `owner`'s sessions in a
        cluster."""
        ...

    async def close_slack_message(self, pending_id: str, outcome: str) -> bool:
        """Guarded: record that the message now shows `outcome`; False if it already did."""
        ...

    async def claim_slack_close(
        self, pending_id: str, *, now: datetime, lease_until: datetime
    ) -> bool:
        """Guarded: take the message's closing update until `lease_until`, so one replica or
        worker sends it; False when it is closed already or another's claim still holds (a
        claim whose holder died lapses at its lease)."""
        ...

    async def release_slack_close(self, pending_id: str, *, lease_until: datetime) -> bool:
        """Give back the claim taken until `lease_until` (its update failed), so the next look
        need not wait for it to lapse; False if it is no longer that claim."""
        ...

    async def queue_slack_interaction(self, interaction: SlackInteraction) -> bool:
        """Queue a click or submission; False when its id is already queued (a retry)."""
        ...

    async def due_slack_interactions(
        self, owner: str | None, now: datetime, limit: int
    ) -> list[SlackInteraction]:
        """Up to `limit` interactions not done whose next attempt is due at `now`: every one
        on a single server (`owner` None), those of replica `owner`'s sessions in a cluster
        (the replica that holds their live waiters answers them)."""
        ...

    async def claim_slack_interaction(
        self, interaction_id: str, *, attempts_before: int, now: datetime, lease_until: datetime
    ) -> bool:
        """Guarded: take a due interaction (moving its next attempt to `lease_until` and
        counting the attempt), so only one worker answers it at a time."""
        ...

    async def finish_slack_interaction(
        self, interaction_id: str, *, outcome: str, detail: str | None = None
    ) -> bool:
        """Guarded: record the interaction's outcome once; False if it was already done."""
        ...

    async def release_slack_claims(self, owner: str | None, now: datetime) -> int:
        """At start: every interaction not done is due at `now`, so a claim held by a process
        that died is taken up again (the respond path's own claim keeps its answer from
        applying twice); how many."""
        ...

    async def release_slack_claims_of_sessions(
        self, session_ids: Collection[str], now: datetime
    ) -> int:
        """Cluster mode, on adoption: every interaction not done of the questions of
        `session_ids` is due at `now`, so a claim the dead replica held is taken up again
        without waiting out its lease; how many claims were released (0 for no sessions)."""
        ...

    async def retry_slack_interaction(
        self, interaction_id: str, *, next_attempt_at: datetime, error: str
    ) -> bool:
        """Put an interaction whose answer failed before any outcome back in the queue."""
        ...

    async def slack_interactions_of(self, pending_id: str) -> list[SlackInteraction]:
        """Every interaction queued for the bundle, oldest first."""
        ...

    async def user_workspaces(self, user: str) -> tuple[Workspace, ...] | None:
        """The workspaces a Clarion user belongs to; None for an unknown user."""
        ...
