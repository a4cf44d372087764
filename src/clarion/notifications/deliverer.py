"""The outbox deliverer: one supervised loop that sends due deliveries, webhooks over HTTP,
email over SMTP (a row whose destination is an email channel's key) and Slack messages
through a `ChannelSender` (a row whose destination is a Slack channel's key).

At least once: a delivery leaves the outbox only through a guarded update recorded after its
receiver answered 2xx, so a crash between sending and recording sends it again after the
restart (same delivery id, same body). Each attempt first claims the delivery with a short
lease (a guarded update), so several servers on one database do not send it side by side.
A non-2xx answer, a timeout or a connection failure is retried with doubling delays; after
the configured number of attempts it is given up (logged).
Nothing here runs inside a request: the request only wrote the outbox row.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Protocol

from clarion.config.email import EmailChannel
from clarion.config.webhooks import DeliveryPolicy, Webhook
from clarion.domain.notification_events import retry_delay
from clarion.domain.webhooks import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signature
from clarion.notifications.mailer import SendMail
from clarion.notifications.sender import Send
from clarion.ports import Clock, OutboxStore, QueuedDelivery
from clarion.ports.metrics import NO_METRICS, DeliveryResult, Metrics
from clarion.ports.tracing import NO_TRACER, Tracer
from clarion.runtime import failpoints

log = logging.getLogger(__name__)

BATCH = 20


class ChannelSender(Protocol):
    """Another kind of destination (Slack): the outbox keys it handles, and one attempt of a
    delivery to it, which raises on any failure."""

    timeout_s: float

    def handles(self, key: str) -> bool: ...

    async def deliver(self, delivery: QueuedDelivery) -> None: ...


IDLE_S = 5.0  # how often an idle deliverer looks again without being woken


class Deliverer:
    """Sends the outbox's due deliveries, each through its channel: a configured webhook's
    URL, an email channel's key or a `ChannelSender`'s (Slack)."""

    def __init__(
        self,
        store: OutboxStore,
        clock: Clock,
        hooks: tuple[Webhook, ...],
        policy: DeliveryPolicy,
        send: Send,
        metrics: Metrics = NO_METRICS,
        mail: tuple[EmailChannel, ...] = (),
        send_mail: SendMail | None = None,
        tracer: Tracer = NO_TRACER,
        other: ChannelSender | None = None,
    ) -> None:
        self._tracer = tracer
        self._other = other
        self._metrics = metrics
        self._store = store
        self._clock = clock
        self._hooks: Mapping[str, Webhook] = {h.url: h for h in hooks}
        self._mail: Mapping[str, EmailChannel] = {c.key: c for c in mail}
        self._policy = policy
        self._send = send
        self._send_mail = send_mail
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Something was queued (its transaction committed): look now."""
        self._wake.set()

    async def run(self) -> None:
        """Deliver until cancelled."""
        log.info(
            "webhook deliverer started",
            extra={"webhooks": len(self._hooks), "email_channels": len(self._mail)},
        )
        while True:
            self._wake.clear()
            try:
                if await self.deliver_due() >= BATCH:
                    continue
                delay = await self._until_next()
            except Exception:
                log.exception("webhook deliverer pass failed; trying again")
                delay = self._policy.backoff_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def deliver_due(self) -> int:
        """Attempt every delivery due now (at most one batch, concurrently); how many."""
        due = await self._store.due_deliveries(self._clock.now(), BATCH)
        await asyncio.gather(*(self._attempt(d) for d in due))
        return len(due)

    async def _until_next(self) -> float:
        soonest = await self._store.next_delivery_at()
        if soonest is None:
            return IDLE_S
        return min(IDLE_S, max(0.0, (soonest - self._clock.now()).total_seconds()))

    async def _attempt(self, delivery: QueuedDelivery) -> None:
        extra = {
            "delivery_id": delivery.id,
            "event": delivery.event,
            "url": delivery.url,
            "attempt": delivery.attempts + 1,
        }
        hook = self._hooks.get(delivery.url)
        channel = self._mail.get(delivery.url)
        other = self._other if self._other and self._other.handles(delivery.url) else None
        if hook is None and other is None and (channel is None or self._send_mail is None):
            await self._store.record_delivery_attempt(
                delivery.id,
                attempts_before=delivery.attempts,
                delivered=False,
                error="webhook no longer configured",
            )
            log.warning("webhook delivery given up: webhook no longer configured", extra=extra)
            return
        now = self._clock.now()
        timeout_s = self._policy.timeout_s if channel is None else channel.timeout_s
        if other is not None:
            timeout_s = other.timeout_s
        # The lease outlasts the attempt's deadline, so only a deliverer that died mid-attempt
        # lets it lapse (then the delivery is sent again: at least once).
        lease = now + timedelta(seconds=timeout_s * 2 + 1)
        if not await self._store.claim_delivery(
            delivery.id, attempts_before=delivery.attempts, now=now, lease_until=lease
        ):
            return  # another deliverer took it
        with self._tracer.span("webhook.send") as span:
            span.set("delivery_id", delivery.id)
            span.set("event", delivery.event)
            span.set("url", delivery.url)
            span.set("attempt", delivery.attempts + 1)
            result = await self._send_and_record(delivery, hook, channel, timeout_s, extra, other)
            span.set("outcome", result)
        self._metrics.delivery_attempt(result)

    async def _send_and_record(
        self,
        delivery: QueuedDelivery,
        hook: Webhook | None,
        channel: EmailChannel | None,
        timeout_s: float,
        extra: dict[str, object],
        other: ChannelSender | None = None,
    ) -> DeliveryResult:
        """One attempt of a claimed delivery, recorded; what came of it."""
        try:
            if other is not None:
                await asyncio.wait_for(other.deliver(delivery), timeout_s)
                error = None
            elif channel is not None and self._send_mail is not None:
                await asyncio.wait_for(self._send_mail(channel, delivery.body), timeout_s)
                await failpoints.hit("email.after_send")
                error = None
            else:
                assert hook is not None
                status = await asyncio.wait_for(self._post(hook, delivery), timeout_s)
                error = None if 200 <= status < 300 else f"HTTP {status}"
        except Exception as exc:  # a timeout, a refused connection, a broken answer
            error = f"{type(exc).__name__}: {exc}"[:500]
        if error is None:
            applied = await self._store.record_delivery_attempt(
                delivery.id, attempts_before=delivery.attempts, delivered=True
            )
            log.info("webhook delivered", extra={**extra, "recorded": applied})
            return "delivered"
        attempts = delivery.attempts + 1
        if attempts >= self._policy.attempts:
            await self._store.record_delivery_attempt(
                delivery.id, attempts_before=delivery.attempts, delivered=False, error=error
            )
            log.warning("webhook delivery given up", extra={**extra, "error": error})
            return "failed"
        delay = retry_delay(attempts, self._policy.backoff_s, self._policy.max_delay_s)
        await self._store.record_delivery_attempt(
            delivery.id,
            attempts_before=delivery.attempts,
            delivered=False,
            next_attempt_at=self._clock.now() + timedelta(seconds=delay),
            error=error,
        )
        log.info(
            "webhook delivery failed; will retry",
            extra={**extra, "error": error, "retry_in_s": round(delay, 3)},
        )
        return "retry"

    async def _post(self, hook: Webhook, delivery: QueuedDelivery) -> int:
        raw = delivery.body.encode()
        headers = {
            "Content-Type": "application/json",
            EVENT_HEADER: delivery.event,
            DELIVERY_HEADER: delivery.id,
            SIGNATURE_HEADER: signature(hook.secret, raw),
            "User-Agent": "Clarion-Webhooks",
        }
        return await self._send(delivery.url, headers, raw)
