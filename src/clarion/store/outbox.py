"""The notification outbox: webhook deliveries, email messages and Slack messages queued
inside the transaction that caused their event (the deliverer's reads and guarded updates of
them are `SqlDeliveries`, deliveries.py). `OutboxWriter` is given to the port implementations
whose writes cause events (they call `enqueue` with their open transaction). An email row's
destination is its channel's key (`email:default`, `email:workspace:NAME`) and its body the
whole message; a Slack row's is its channel's key (`slack:default`, `slack:workspace:NAME`)
and its body what the message is built from (domain/slack.py).

With no webhook, email or Slack channel configured `enqueue` returns before touching the
database, so a server without them pays nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, insert, select

from clarion.domain.emails import MailTarget, email_message
from clarion.domain.ids import new_id
from clarion.domain.notification_events import (
    NotificationFact,
    link_for,
    wants_answer_url,
    wants_decision_url,
)
from clarion.domain.slack import SlackTarget, slack_body
from clarion.domain.webhooks import encode_body, webhook_body
from clarion.ports import QueuedDelivery
from clarion.store.db.schema import tasks, webhook_deliveries, workspaces
from clarion.store.db.transactions import Tx

log = logging.getLogger(__name__)

OPEN = and_(webhook_deliveries.c.delivered_at.is_(None), webhook_deliveries.c.gave_up_at.is_(None))


@dataclass(frozen=True, slots=True)
class Outbox:
    """Which webhook and channel wants which events, where links point, and whom to wake after
    a commit."""

    hooks: tuple[tuple[str, frozenset[str]], ...] = ()
    base_url: Callable[[], str] = lambda: "http://127.0.0.1"
    wake: Callable[[], None] = lambda: None
    # A bundle's answer link (pending id -> URL), for events whose question is still open.
    answer_url: Callable[[str], str] | None = None
    # A permission request's decision link (message id -> URL), for the event that asks it.
    decision_url: Callable[[str], str] | None = None
    # Email: the workspace's name -> where its notifications go (None: no email for it).
    mail_for: Callable[[str], MailTarget | None] | None = None
    mail_events: frozenset[str] = frozenset()
    # Slack: the workspace's name -> its channel (None: no Slack for it).
    slack_for: Callable[[str], SlackTarget | None] | None = None
    slack_events: frozenset[str] = frozenset()

    def urls_for(self, event: str) -> list[str]:
        return [url for url, events in self.hooks if event in events]

    def wants(self, event: str) -> bool:
        """Whether anything (a webhook, an email or Slack channel) would queue a delivery of
        `event`."""
        return bool(self.urls_for(event)) or event in self.mail_events or event in self.slack_events


NO_CHANNELS = Outbox()

FactOf = Callable[[str], NotificationFact]  # the task's title -> the fact


async def enqueue(
    conn: Tx, outbox: Outbox, event: str, task_id: str, fact_of: FactOf, now: datetime
) -> None:
    """Queue one delivery per webhook, email and Slack channel that wants `event`, in the
    caller's transaction. An email is stored as the whole message, so each retry sends the
    same one."""
    urls = outbox.urls_for(event)
    if not outbox.wants(event):
        return
    query = (
        select(tasks.c.title, workspaces.c.name)
        .select_from(tasks.join(workspaces, workspaces.c.id == tasks.c.workspace_id))
        .where(tasks.c.id == task_id)
    )
    found = (await conn.execute(query)).first()
    title, workspace = (str(found[0] or ""), str(found[1])) if found is not None else ("", "")
    fact = fact_of(title)
    answer_url = None
    if outbox.answer_url is not None and fact.pending_id is not None and wants_answer_url(fact):
        answer_url = outbox.answer_url(fact.pending_id)
    decision_url = None
    if outbox.decision_url is not None and fact.message_id is not None and wants_decision_url(fact):
        decision_url = outbox.decision_url(fact.message_id)
    for url in urls:
        delivery_id = new_id()
        body = webhook_body(
            fact,
            delivery_id=delivery_id,
            occurred_at=now,
            base_url=outbox.base_url(),
            answer_url=answer_url,
            decision_url=decision_url,
        )
        await _insert(conn, delivery_id, url, event, encode_body(body), now, fact)
    mail = None if outbox.mail_for is None else outbox.mail_for(workspace)
    if mail is not None and event in mail.events and fact.after_restart:
        # A restart detaches every open question at once; each stays answerable through the
        # link its first email carried, so a message per question would only be noise
        # (docs/notifications.md). Webhooks still get the event.
        log.info(
            "no email for a detachment by restart",
            extra={"pending_id": fact.pending_id, "session_id": fact.session_id},
        )
        return
    if mail is not None and event in mail.events:
        delivery_id = new_id()
        message = email_message(
            fact,
            delivery_id=delivery_id,
            occurred_at=now,
            sender=mail.sender,
            to=mail.to,
            link=link_for(outbox.base_url(), fact.task_id, fact.session_id),
            answer_url=answer_url,
            decision_url=decision_url,
        )
        await _insert(conn, delivery_id, mail.key, event, message, now, fact)
    slack = None if outbox.slack_for is None else outbox.slack_for(workspace)
    if slack is not None and event in slack.events:
        stored = slack_body(
            fact,
            link=link_for(outbox.base_url(), fact.task_id, fact.session_id),
            answer_url=answer_url,
            decision_url=decision_url,
            context=fact.context,
        )
        await _insert(conn, new_id(), slack.key, event, stored, now, fact)


async def _insert(
    conn: Tx,
    delivery_id: str,
    url: str,
    event: str,
    body: str,
    now: datetime,
    fact: NotificationFact,
) -> None:
    await conn.execute(
        insert(webhook_deliveries).values(
            id=delivery_id,
            url=url,
            event=event,
            body=body,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
    )
    log.info(
        "email queued"
        if url.startswith("email:")
        else "slack message queued"
        if url.startswith("slack:")
        else "webhook delivery queued",
        extra={
            "delivery_id": delivery_id,
            "event": event,
            "url": url,
            "session_id": fact.session_id,
        },
    )


def queued_delivery(row: Any) -> QueuedDelivery:
    return QueuedDelivery(
        id=row.id,
        url=row.url,
        event=row.event,
        body=row.body,
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at,
        delivered_at=row.delivered_at,
        gave_up_at=row.gave_up_at,
        last_error=row.last_error,
    )


class OutboxWriter:
    """Queues notifications inside the transaction of the write that caused their event, and
    wakes the deliverer once that write's store call is done (its transaction committed, never
    before). Given to the port implementations whose writes cause events; the composition
    root configures it once, the store's cancellation shield reports each finished call."""

    def __init__(self) -> None:
        self._outbox = NO_CHANNELS
        # Store calls (each runs in its own task) that queued a delivery.
        self._writers: set[asyncio.Future[Any]] = set()

    def configure(self, outbox: Outbox) -> None:
        """Which events to queue for which webhook, email and Slack channel (set once, at start)."""
        self._outbox = outbox

    async def enqueue(
        self, conn: Tx, event: str, task_id: str, fact_of: FactOf, now: datetime
    ) -> None:
        if not self._outbox.wants(event):
            return
        await enqueue(conn, self._outbox, event, task_id, fact_of, now)
        task = asyncio.current_task()
        if task is not None:
            self._writers.add(task)

    def wants(self, event: str) -> bool:
        """Whether a webhook, an email or a Slack channel would queue `event` (skip building it if
        not)."""
        return self._outbox.wants(event)

    def after_call(self, task: asyncio.Future[Any]) -> None:
        if task in self._writers:
            self._writers.discard(task)
            if not task.cancelled() and task.exception() is None:
                self._outbox.wake()
