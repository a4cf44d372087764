"""The composition root's Slack half (docs/notifications.md): the poster the outbox deliverer
sends Slack rows through, the sweep that closes settled questions' messages, and the inbox and
answerer for what Slack sends back. Nothing of it exists without `[notifications.slack]`.

Only `clarion.server.wiring` and `clarion.server.outgoing` import this module.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass

from clarion.config import Settings
from clarion.config.slack import SlackChannel
from clarion.domain.models import Bundle
from clarion.domain.slack import SlackInteraction, SlackTarget
from clarion.orchestrator.access import AccessControl
from clarion.ports import Bus, Clock
from clarion.ports.slack import SlackStore
from clarion.ports.store import Lookups
from clarion.runtime.supervisor import Supervisor
from clarion.slack.answerer import Respond, SlackAnswerer
from clarion.slack.client import SlackApi
from clarion.slack.closer import SlackCloser
from clarion.slack.inbox import SlackInbox
from clarion.slack.poster import SlackPoster
from clarion.slack.socket_mode import SocketModeReceiver
from clarion.slack.wakeups import announce_queued, hear_queued


@dataclass(frozen=True, slots=True)
class SlackParts:
    settings: Settings
    records: SlackStore
    apis: Mapping[str, SlackApi]
    closer: SlackCloser
    poster: SlackPoster
    bundles: Lookups

    def target_for(self, workspace: str) -> SlackTarget | None:
        channel = self.settings.slack.channel_for(workspace)
        return None if channel is None else SlackTarget(key=channel.key, events=channel.events)

    def events(self) -> frozenset[str]:
        return frozenset().union(*(c.events for c in self.settings.slack.channels()))

    async def api_for(self, pending_id: str) -> SlackApi | None:
        """The client of the bot that posted the question (else the first configured)."""
        message = await self.records.find_slack_message(pending_id)
        if message is not None and message.channel_key in self.apis:
            return self.apis[message.channel_key]
        return next(iter(self.apis.values()), None)


@contextlib.asynccontextmanager
async def slack_outgoing(
    settings: Settings, records: SlackStore, bundles: Lookups, clock: Clock, supervisor: Supervisor
) -> AsyncIterator[SlackParts | None]:
    channels = settings.slack.channels()
    if not channels:
        yield None
        return
    apis = {c.key: SlackApi(c) for c in channels}
    closer = SlackCloser(records, bundles, apis, clock, sweep_s=settings.slack.sweep_s)
    poster = SlackPoster(settings.slack, records, closer, apis, clock)
    yield SlackParts(settings, records, apis, closer, poster, bundles)


@dataclass(frozen=True, slots=True)
class SlackInteractions:
    """What Slack sends back, received (`inbox`, the HTTP edge's and Socket Mode's) and
    answered (`answerer`, which a replica also tells of the sessions it adopts)."""

    inbox: SlackInbox
    answerer: SlackAnswerer


def slack_interactions(
    parts: SlackParts,
    respond: Respond,
    access: AccessControl,
    clock: Clock,
    supervisor: Supervisor,
    ready: asyncio.Event,
    owner: Callable[[], str | None],
    bus: Bus,
) -> SlackInteractions:
    """The inbox the HTTP edge hands Slack's interactions to; its answerer and the sweep
    start once the server is ready (startup recovery done). `owner`: this replica's id in a
    cluster (None on a single server): a replica answers the clicks, and closes the messages,
    of the sessions it runs, whichever replica Slack reached: the one Slack reached tells
    the others through `bus` once it queued the click."""
    answerer = SlackAnswerer(
        parts.records,
        respond,
        parts.closer,
        parts.api_for,
        clock,
        poll_s=parts.settings.slack.poll_s,
        owner=owner,
    )
    parts.closer.owned_by(owner)

    async def when_ready(job: Callable[[], Awaitable[None]]) -> None:
        await ready.wait()
        await job()

    supervisor.spawn(when_ready(answerer.run), name="slack-answerer")
    supervisor.spawn(when_ready(parts.closer.run), name="slack-closer")
    clustered = parts.settings.cluster
    if clustered:  # a single server's clicks are all its own
        supervisor.spawn(hear_queued(bus, answerer.wake), name="slack-wakeups")

    async def queued(interaction: SlackInteraction, bundle: Bundle) -> None:
        answerer.wake()  # the session may be this replica's
        if clustered:
            await announce_queued(bus, interaction, bundle)  # else its owner's

    inbox = SlackInbox(
        parts.settings.slack, parts.records, parts.bundles, access, parts.api_for, queued
    )
    by_app = {c.app_token: c for c in parts.settings.slack.channels() if c.app_token}
    for channel in by_app.values():
        supervisor.spawn(
            _socket_mode(channel, inbox, ready), name=f"slack-socket-mode:{channel.key}"
        )
    return SlackInteractions(inbox, answerer)


async def _socket_mode(channel: SlackChannel, inbox: SlackInbox, ready: asyncio.Event) -> None:
    """`app_token_env` set: receive interactions over Socket Mode once the server is ready,
    until the server stops."""
    await ready.wait()
    receiver = SocketModeReceiver(channel, inbox, asyncio.get_running_loop())
    try:
        await asyncio.to_thread(receiver.connect)
        await asyncio.Event().wait()
    finally:
        await asyncio.to_thread(receiver.close)
