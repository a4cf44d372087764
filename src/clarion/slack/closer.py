"""Closing a question's Slack message: once its bundle left the active states (answered
anywhere, expired, superseded, cancelled, its session ended), `chat.update` replaces the
buttons with the outcome and who answered, and the message is recorded closed.

Two things start it: a question just answered (the outbox's `clarification.answered` and
`clarification.expired` rows, a click answered from Slack), looked at every quarter second
until its answer is delivered, and a sweep over the messages not closed yet, which
catches what no event announces (a new turn superseding the question, a cancellation, a
session finished) and a message posted after its question was already answered. Both are
durable: a message stays open, and is looked at again, until the update went through.

Several replicas may see one question settle (the one delivering its outbox row, the owner's
answerer and sweep): before `chat.update` the closer claims the message with a lease (a
guarded update in the shared database), so one of them sends it. A claimer whose update
failed gives the claim back; one that died leaves it to lapse, and the sweep sends it then.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Protocol

from clarion.domain.bundles import answered_by, bundle_state, stored_response
from clarion.domain.models import Bundle, BundleState
from clarion.domain.slack import SlackInteraction, outcome_line
from clarion.domain.waiting import ANSWERED_BY_POLICY
from clarion.ports import Clock
from clarion.ports.slack import SlackStore
from clarion.slack.blocks import as_dicts, closed_blocks
from clarion.slack.client import SlackApi

log = logging.getLogger(__name__)

STILL_OPEN = frozenset(
    {BundleState.ACTIVE_LIVE, BundleState.ACTIVE_DETACHED, BundleState.DELIVERY_CLAIMED}
)
SWEEP_BATCH = 100
ANSWERED = "answered"
# A question just answered is looked at every HOT_S until its answer is delivered (at most
# HOT_FOR_S; the sweep takes over after that).
HOT_S = 0.25
HOT_FOR_S = 60.0
UPDATED, NOTHING_TO_DO, NOT_SETTLED = "updated", "nothing", "not settled"
CLAIMED_ELSEWHERE = "claimed elsewhere"
# How long a claim on a message's closing update holds: well past one `chat.update` (its
# client's two tries of 4 s), so a live claimer never loses it mid-call.
CLOSE_LEASE_S = 30.0


class Bundles(Protocol):
    async def find_bundle(self, pending_id: str) -> Bundle | None: ...


def who_answered(bundle: Bundle, interactions: Sequence[SlackInteraction]) -> str | None:
    """The Clarion user (else the Slack user) whose click won, the waiting policy, or None
    when the answer came from outside Slack."""
    for interaction in interactions:
        if interaction.outcome == ANSWERED:
            return interaction.user or interaction.slack_user
    if answered_by(bundle) == ANSWERED_BY_POLICY:
        return "the waiting policy"
    return None


class SlackCloser:
    def __init__(
        self,
        store: SlackStore,
        bundles: Bundles,
        apis: Mapping[str, SlackApi],
        clock: Clock,
        *,
        sweep_s: float,
        owner: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._owner = owner
        self._clock = clock
        self._store = store
        self._bundles = bundles
        self._apis = apis
        self._sweep_s = sweep_s
        self._wake = asyncio.Event()
        # One close at a time in this process: the outbox, the answerer and the sweep may all
        # look at one question at once, and its message is updated once.
        self._one_at_a_time = asyncio.Lock()
        self._hot: dict[str, float] = {}  # pending id -> until when (monotonic)
        self._sweep_now = True

    def wake(self) -> None:
        """Sweep now (a message was posted: its question may have settled already)."""
        self._sweep_now = True
        self._wake.set()

    def watch(self, pending_id: str) -> None:
        """The question was answered: close its message as soon as the answer is delivered
        (a live answer is confirmed, a detached one resumed the agent)."""
        self._hot[pending_id] = time.monotonic() + HOT_FOR_S
        self._wake.set()

    def owned_by(self, owner: Callable[[], str | None]) -> None:
        """Cluster mode: sweep only the messages of the sessions this replica runs."""
        self._owner = owner

    async def close(self, pending_id: str) -> bool:
        """Show the outcome if the bundle is settled; whether the message was updated now."""
        async with self._one_at_a_time:
            return await self._attempt(pending_id) == UPDATED

    async def _attempt(self, pending_id: str) -> str:
        message = await self._store.find_slack_message(pending_id)
        if message is None or message.closed_at is not None:
            return NOTHING_TO_DO
        bundle = await self._bundles.find_bundle(pending_id)
        if bundle is None:
            return NOTHING_TO_DO
        state = bundle_state(bundle, has_live_waiter=False)
        interactions = await self._store.slack_interactions_of(pending_id)
        in_flight = any(i.done_at is None for i in interactions)
        if state in STILL_OPEN or in_flight:
            return NOT_SETTLED
        api = self._apis.get(message.channel_key)
        if api is None:
            log.warning(
                "slack message not closed: its channel is no longer configured",
                extra={"pending_id": pending_id, "channel_key": message.channel_key},
            )
            return NOTHING_TO_DO
        outcome = outcome_line(
            bundle, state, stored_response(bundle), who_answered(bundle, interactions)
        )
        now = self._clock.now()
        lease_until = now + timedelta(seconds=CLOSE_LEASE_S)
        if not await self._store.claim_slack_close(pending_id, now=now, lease_until=lease_until):
            log.info("slack message being closed elsewhere", extra={"pending_id": pending_id})
            return CLAIMED_ELSEWHERE
        body = json.loads(message.body)
        try:
            await api.update(
                message.channel, message.ts, outcome, as_dicts(closed_blocks(body, outcome))
            )
        except BaseException:
            with contextlib.suppress(Exception):  # else it lapses at its lease
                await self._store.release_slack_close(pending_id, lease_until=lease_until)
            raise
        closed = await self._store.close_slack_message(pending_id, outcome)
        log.info(
            "slack message closed",
            extra={"pending_id": pending_id, "state": str(state), "recorded": closed},
        )
        return UPDATED

    async def sweep(self) -> int:
        """Close every open message whose bundle settled; how many were updated."""
        closed = 0
        for message in await self._store.open_slack_messages(self._owner(), SWEEP_BATCH):
            try:
                closed += await self.close(message.pending_id)
            except Exception as exc:  # Slack refused or is away: the next sweep tries again
                log.warning(
                    "slack message not closed; will try again",
                    extra={"pending_id": message.pending_id, "error": str(exc)[:300]},
                )
        return closed

    async def close_watched(self) -> None:
        """One look at each question just answered; drop those done with or given time."""
        now = time.monotonic()
        for pending_id, until in list(self._hot.items()):
            try:
                async with self._one_at_a_time:
                    outcome = await self._attempt(pending_id)
            except Exception as exc:  # Slack refused: the sweep tries again
                log.warning(
                    "slack message not closed; will try again",
                    extra={"pending_id": pending_id, "error": str(exc)[:300]},
                )
                outcome = NOTHING_TO_DO
            if outcome != NOT_SETTLED or now >= until:
                self._hot.pop(pending_id, None)

    async def run(self) -> None:
        """Until cancelled: the questions just answered every HOT_S, a sweep every
        `sweep_s` and whenever woken."""
        next_sweep = time.monotonic()
        while True:
            self._wake.clear()
            try:
                if self._hot:
                    await self.close_watched()
                if self._sweep_now or time.monotonic() >= next_sweep:
                    self._sweep_now = False
                    next_sweep = time.monotonic() + self._sweep_s
                    await self.sweep()
            except Exception:
                log.exception("slack sweep failed; trying again")
            wait = HOT_S if self._hot else max(0.0, next_sweep - time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
