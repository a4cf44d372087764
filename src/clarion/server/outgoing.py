"""The composition root's outgoing half: answer links, and the webhook, email and Slack
deliveries the store queues in the transactions that cause their events (docs/notifications.md).

Only `clarion.server.wiring` imports this module.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from clarion.clarification.links import AnswerLinks
from clarion.config import Settings
from clarion.config.email import EmailChannel
from clarion.domain.emails import MailTarget
from clarion.metrics import PrometheusMetrics
from clarion.notifications.deliverer import Deliverer
from clarion.notifications.mailer import send_mail
from clarion.notifications.sender import http_sender
from clarion.ports import Clock, OutboxStore
from clarion.ports.tracing import Tracer
from clarion.runtime.supervisor import Supervisor
from clarion.server.slack import SlackParts
from clarion.store.outbox import Outbox
from clarion.store.server_calls import LinkSecretCalls


@contextlib.asynccontextmanager
async def answer_links(
    settings: Settings, store: LinkSecretCalls, clock: Clock, base_url: Callable[[], str]
) -> AsyncIterator[AnswerLinks]:
    """Answer links signed with the configured key, or the database's (made once, shared by
    every replica), pointing at the public address or this server's own."""
    secret = settings.answer_links.secret or await store.answer_link_secret()
    yield AnswerLinks(
        secret, settings.answer_links.ttl_s, clock, lambda: settings.public_url or base_url()
    )


@contextlib.asynccontextmanager
async def outgoing_deliveries(
    settings: Settings,
    store: OutboxStore,
    configure: Callable[[Outbox], None],
    clock: Clock,
    base_url: Callable[[], str],
    supervisor: Supervisor,
    metrics: PrometheusMetrics,
    links: AnswerLinks,
    tracer: Tracer,
    slack: SlackParts | None = None,
) -> AsyncIterator[None]:
    """With `[[webhooks]]`, `[notifications.email]` or `[notifications.slack]` configured:
    the store queues deliveries and a supervised deliverer sends them. Without, nothing is
    queued and nothing runs."""
    channels = settings.email.channels()
    if not settings.webhooks and not channels and slack is None:
        yield
        return
    policy = settings.delivery_policy
    async with http_sender(policy.timeout_s) as send:
        deliverer = Deliverer(
            store,
            clock,
            settings.webhooks,
            policy,
            send,
            metrics,
            mail=channels,
            send_mail=send_mail,
            tracer=tracer,
            other=None if slack is None else slack.poster,
        )
        configure(
            Outbox(
                hooks=tuple((h.url, h.events) for h in settings.webhooks),
                base_url=lambda: settings.public_url or base_url(),
                wake=deliverer.wake,
                answer_url=links.url_for,
                decision_url=links.decision_url_for,
                mail_for=lambda workspace: _mail_target(settings.email.channel_for(workspace)),
                mail_events=frozenset().union(*(c.events for c in channels)),
                slack_for=None if slack is None else slack.target_for,
                slack_events=frozenset() if slack is None else slack.events(),
            )
        )
        running = supervisor.spawn(deliverer.run(), name="webhook-deliverer")
        try:
            yield
        finally:
            running.cancel()


def _mail_target(channel: EmailChannel | None) -> MailTarget | None:
    if channel is None:
        return None
    return MailTarget(key=channel.key, events=channel.events, sender=channel.sender, to=channel.to)
