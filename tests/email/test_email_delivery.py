"""Email notifications delivered to a real SMTP server on loopback (aiosmtpd), from the same
durable outbox as webhooks, on both databases: a question's email names the task, carries the
questions and an answer link that answers it; a receiver that is down delays nothing and gets
every message once it is back; an SMTP server killed with SIGKILL in the middle of a message
gets it again, once, after it restarts."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from clarion.config.email import EmailChannel, EmailSettings
from clarion.config.webhooks import DeliveryPolicy
from clarion.runtime.clock import SystemClock
from tests.e2e.harness import wait_until
from tests.email.smtp import Mailbox, hanging_server
from tests.lifecycle.harness import answer_db
from tests.links.conftest import Linked, linked_app, settings_on
from tests.ports import free_port

FAST = DeliveryPolicy(backoff_s=0.1, max_delay_s=0.3, attempts=1000, timeout_s=5.0)


def _channel(port: int, **changes: Any) -> EmailChannel:
    return dataclasses.replace(
        EmailChannel(
            key="email:default",
            host="127.0.0.1",
            port=port,
            sender="Clarion <clarion@example.com>",
            to=("alice@example.com", "Bob <bob@example.com>"),
            events=frozenset({"clarification.requested", "clarification.answered"}),
            timeout_s=3.0,
        ),
        **changes,
    )


@contextlib.asynccontextmanager
async def mailing(store_url: str, channel: EmailChannel) -> AsyncIterator[Linked]:
    settings = settings_on(
        store_url,
        public_url="https://clarion.example",
        email=EmailSettings(default=channel),
        delivery_policy=FAST,
    )
    async with linked_app(settings, SystemClock()) as rig:  # type: ignore[arg-type]
        yield rig


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 60.0) -> None:
    """Until `check` holds; a ceiling, never a delay."""
    for _ in range(int(within / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {within} s")


async def all_recorded(rig: Linked) -> bool:
    rows = await rig.life.app.stores.probes.list_deliveries()
    return bool(rows) and all(r.delivered_at is not None for r in rows)


async def _wait(mailbox: Mailbox, count: int) -> list[Any]:
    return await asyncio.to_thread(mailbox.wait_for, count)


async def test_a_question_email_arrives_and_its_answer_link_answers_it(store_url: str) -> None:
    mailbox = Mailbox(free_port())
    with mailbox.running():
        async with mailing(store_url, _channel(mailbox.port)) as rig:
            svc = rig.life.app.services
            task = await svc.tasks.create(title="Billing service", description="", workspace=None)
            session = await svc.sessions.start(
                task.id, agent="builtin", prompt="go", is_primary=True
            )
            call, _ = await rig.life.ask(session.id)

            [mail] = await _wait(mailbox, 1)
            assert mail.mail_from == "clarion@example.com"
            assert mail.rcpt_tos == ("alice@example.com", "bob@example.com")
            message = mail.message
            assert message["Subject"] == "[Clarion] Agent asks in Billing service: Which database?"
            text, html = mail.body("plain"), mail.body("html")
            assert "Which database?" in text and "PostgreSQL" in html
            link = next(w for w in text.split() if w.startswith("https://clarion.example/a/"))
            assert f'href="{link}"' in html

            answered = await rig.http.post(
                f"/api/v1/a/{rig.token_of(link)}/respond", json=answer_db()
            )
            assert answered.status_code == 200, answered.text
            await asyncio.wait_for(call, 60)
            [_, done] = await _wait(mailbox, 2)
            assert done.message["X-Clarion-Event"] == "clarification.answered"
            assert "/a/" not in done.body("plain")
            assert len({m.message_id for m in mailbox.received}) == 2


async def test_a_receiver_outage_delays_nothing_and_every_message_arrives_once_after(
    store_url: str,
) -> None:
    mailbox = Mailbox(free_port())  # not running yet: connections are refused
    async with mailing(store_url, _channel(mailbox.port)) as rig:
        _, session_id = await rig.life.start_session()
        call, pending_id = await rig.life.ask(session_id)
        token = await rig.link_for(pending_id)
        answered = await rig.http.post(f"/api/v1/a/{token}/respond", json=answer_db())
        assert answered.status_code == 200
        await asyncio.wait_for(call, 60)
        # The question was asked and answered while no message could be sent: nothing waited.
        pending = await rig.life.app.stores.probes.list_deliveries()
        assert pending and all(row.delivered_at is None for row in pending)

        async def requested_refused_twice() -> bool:
            rows = await rig.life.app.stores.probes.list_deliveries()
            return any(
                row.event == "clarification.requested"
                and row.attempts >= 2
                and row.delivered_at is None
                for row in rows
            )

        await eventually(requested_refused_twice)
        with mailbox.running():
            received = await _wait(mailbox, 2)
            await eventually(lambda: all_recorded(rig))
            rows = await rig.life.app.stores.probes.list_deliveries()
        assert sorted(m.message["X-Clarion-Event"] for m in received) == [
            "clarification.answered",
            "clarification.requested",
        ]
        assert len({m.message_id for m in received}) == len(received) == 2
        requested = next(r for r in rows if r.event == "clarification.requested")
        assert requested.attempts >= 3  # refused at least twice, then delivered


async def test_an_smtp_server_killed_mid_message_gets_it_once_after_it_restarts(
    store_url: str, tmp_path: Path
) -> None:
    port = free_port()
    marker = tmp_path / "data-received"
    channel = _channel(port, events=frozenset({"clarification.requested"}), timeout_s=30.0)
    async with mailing(store_url, channel) as rig:
        with hanging_server(port, marker) as smtp:
            _, session_id = await rig.life.start_session()
            call, _ = await rig.life.ask(session_id)
            await asyncio.to_thread(
                wait_until, marker.exists, timeout=30, what="the message's data"
            )
            smtp.kill()  # SIGKILL while the message is in flight, before any 250
            smtp.wait(10)
        mailbox = Mailbox(port)
        with mailbox.running():
            [mail] = await _wait(mailbox, 1)
            await eventually(lambda: all_recorded(rig))
            rows = await rig.life.app.stores.probes.list_deliveries()
        assert mail.raw.replace(b"\r\n", b"\n").strip() == (
            marker.read_bytes().replace(b"\r\n", b"\n").strip()
        )
        assert len(mailbox.received) == 1
        assert rows[0].attempts >= 2
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await call


async def test_the_configured_login_is_used_and_accepted(
    store_url: str,
) -> None:
    mailbox = Mailbox(free_port())
    channel = _channel(mailbox.port, username="clarion", password="s3cret-from-env")
    with mailbox.running(login=("clarion", "s3cret-from-env")):
        async with mailing(store_url, channel) as rig:
            _, session_id = await rig.life.start_session()
            call, _ = await rig.life.ask(session_id)
            [mail] = await _wait(mailbox, 1)
            assert mail.authenticated
            assert mail.message["X-Clarion-Event"] == "clarification.requested"
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await call


async def test_a_wrong_login_is_retried_and_never_counted_as_delivered(store_url: str) -> None:
    mailbox = Mailbox(free_port())
    channel = _channel(mailbox.port, username="clarion", password="wrong")
    with mailbox.running(login=("clarion", "right")):
        async with mailing(store_url, channel) as rig:
            _, session_id = await rig.life.start_session()
            call, _ = await rig.life.ask(session_id)

            async def refused_twice() -> bool:
                rows = await rig.life.app.stores.probes.list_deliveries()
                return any(r.attempts >= 2 and r.delivered_at is None for r in rows)

            await eventually(refused_twice)
            [row] = await rig.life.app.stores.probes.list_deliveries()
            assert row.last_error and "Authentication" in row.last_error
            assert mailbox.received == []
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await call


pytestmark = pytest.mark.timeout(180)
